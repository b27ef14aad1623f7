//! Class 1: a hand-written `Handles` impl cannot make a process accept shared state: `Handles<M>`
//! requires `M: Message`.
use std::sync::{Arc, Mutex};
use whirl::prelude::*;

#[derive(Message)]
struct Ping;

#[process]
struct Counter {
    hits: u64,
}

#[process]
impl Counter {
    #[handle]
    fn ping(&mut self, _: Ping) {
        self.hits += 1;
    }
}

impl Handles<Arc<Mutex<u64>>> for Counter {
    fn into_message(_: Arc<Mutex<u64>>) -> <Counter as Process>::Message {
        Ping.into()
    }
}

fn main() {}
