//! A `Weak` to a mutex still reaches shared mutable state.
use std::sync::{Mutex, Weak};
use whirl::prelude::*;

#[process]
struct Observer {
    target: Weak<Mutex<u64>>,
}

fn main() {}
