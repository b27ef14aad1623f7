//! Class 1: posting shared state to a process is refused: it is not a message.
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
    let _ = counter.post(Arc::new(Mutex::new(0u64)));
}
