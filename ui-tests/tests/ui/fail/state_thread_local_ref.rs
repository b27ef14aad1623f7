//! A reference to a thread-local's cell is shared (and per-thread) mutable state.
use std::cell::RefCell;
use whirl::prelude::*;

#[process]
struct Tls {
    cell: &'static RefCell<u64>,
}

fn main() {}
