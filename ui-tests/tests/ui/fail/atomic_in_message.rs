use std::sync::atomic::AtomicU64;
use whirl::prelude::*;

#[derive(Message)]
struct Count {
    hits: AtomicU64,
}

fn main() {}
