//! A generic message carrying the address of a process type parameter: process state is
//! `Isolated`, so `Subscribe<P>` is a message for any declared process `P`.
use whirl::prelude::*;

#[derive(Message)]
struct Subscribe<P: Process> {
    who: Addr<P>,
}

#[derive(Message)]
struct Ping;

#[derive(Message, Debug)]
struct Count(ReplyTo<u64>);

#[process]
struct Client {
    pings: u64,
}

#[process]
impl Client {
    #[handle]
    fn ping(&mut self, _: Ping) {
        self.pings += 1;
    }

    #[handle]
    fn count(&mut self, Count(reply): Count) {
        let _ = reply.send(self.pings);
    }
}

#[process]
struct Hub;

#[process]
impl Hub {
    #[handle]
    fn subscribe(&mut self, msg: Subscribe<Client>) {
        let _ = msg.who.post(Ping);
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let client = rt.spawn(Client { pings: 0 });
    let hub = rt.spawn(Hub);
    hub.post(Subscribe { who: client.clone() }).unwrap();
    rt.block_until_idle();
    assert_eq!(client.request_with(Count).call().unwrap(), 1);
    rt.shutdown_graceful();
}
