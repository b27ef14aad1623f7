//! A `Recipient` of a message type crosses processes like an address.
use whirl::prelude::*;

#[derive(Message)]
struct Hello(u64);

#[derive(Message)]
struct Subscribe(Recipient<Hello>);

#[derive(Message, Debug)]
struct Got(ReplyTo<u64>);

#[process]
struct Publisher;

#[process]
impl Publisher {
    #[handle]
    fn subscribe(&mut self, Subscribe(to): Subscribe) {
        let _ = to.post(Hello(7));
    }
}

#[process]
struct Listener {
    got: u64,
}

#[process]
impl Listener {
    #[handle]
    fn hello(&mut self, Hello(n): Hello) {
        self.got += n;
    }

    #[handle]
    fn got(&mut self, Got(reply): Got) {
        let _ = reply.send(self.got);
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let listener = rt.spawn(Listener { got: 0 });
    let publisher = rt.spawn(Publisher);
    publisher.post(Subscribe(listener.recipient())).unwrap();
    rt.block_until_idle();
    assert_eq!(listener.request_with(Got).call().unwrap(), 7);
    rt.shutdown_graceful();
}
