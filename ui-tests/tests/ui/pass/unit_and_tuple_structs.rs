//! Unit and tuple structs, as messages and as process state.
use whirl::prelude::*;

#[derive(Message)]
struct Tick;

#[derive(Message)]
struct Add(u64, u64);

#[derive(Message, Debug)]
struct Read(ReplyTo<u64>);

#[process]
struct Adder(u64);

#[process]
impl Adder {
    #[handle]
    fn tick(&mut self, _: Tick) {
        self.0 += 1;
    }

    #[handle]
    fn add(&mut self, Add(a, b): Add) {
        self.0 += a + b;
    }

    #[handle]
    fn read(&mut self, Read(reply): Read) {
        let _ = reply.send(self.0);
    }
}

#[process]
struct Idle;

#[process]
impl Idle {
    #[handle]
    fn tick(&mut self, _: Tick) {}
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let adder = rt.spawn(Adder(0));
    adder.post(Tick).unwrap();
    adder.post(Add(2, 3)).unwrap();
    assert_eq!(adder.request_with(Read).call().unwrap(), 6);
    rt.spawn(Idle).post(Tick).unwrap();
    rt.shutdown_graceful();
}
