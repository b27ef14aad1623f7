use std::cell::Cell;
use whirl::prelude::*;

#[derive(Message)]
struct Tick {
    count: Cell<u64>,
}

fn main() {}
