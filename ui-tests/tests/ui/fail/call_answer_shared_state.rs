//! Class 3: `Addr::call` refuses a reply type that is not `Isolated`.
use std::sync::{Arc, Mutex};
use whirl::prelude::*;

#[derive(Message)]
struct Ping;

#[process]
struct Counter;

#[process]
impl Counter {
    #[handle]
    fn ping(&mut self, _: Ping) {}
}

fn main() {
    let rt = Runtime::new();
    let counter = rt.spawn(Counter);
    let _answer = counter.request_with(|_reply: ReplyTo<Arc<Mutex<u64>>>| Ping).call();
}
