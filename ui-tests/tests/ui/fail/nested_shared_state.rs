use std::cell::Cell;
use whirl::prelude::*;

#[derive(Isolated)]
struct Counters {
    hits: Cell<u64>,
}

#[derive(Isolated)]
struct Stats {
    name: String,
    counters: Counters,
}

#[derive(Message)]
struct Report {
    stats: Stats,
}

fn main() {}
