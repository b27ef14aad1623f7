//! `Arc<RefCell<T>>` is shared and mutable (and not even thread-safe).
use std::cell::RefCell;
use std::sync::Arc;
use whirl::prelude::*;

#[process]
struct Holder {
    value: Arc<RefCell<u64>>,
}

fn main() {}
