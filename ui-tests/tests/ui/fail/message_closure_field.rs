//! A closure in a message could capture shared state: refused.
use whirl::prelude::*;

#[derive(Message)]
struct Run {
    job: Box<dyn FnOnce() + Send>,
}

fn main() {}
