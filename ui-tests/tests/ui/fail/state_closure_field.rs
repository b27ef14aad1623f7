//! A closure can capture anything: process state cannot hold one.
use whirl::prelude::*;

#[process]
struct Callback {
    on_event: Box<dyn FnMut(u64) + Send>,
}

fn main() {}
