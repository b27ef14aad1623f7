//! Class 2: a generic message is a message only for isolated arguments.
use std::sync::{Arc, Mutex};
use whirl::prelude::*;

#[derive(Message)]
struct Envelope<T> {
    body: T,
}

#[process]
struct Inbox;

#[process]
impl Inbox {
    #[handle]
    fn envelope(&mut self, _msg: Envelope<Arc<Mutex<u8>>>) {}
}

fn main() {}
