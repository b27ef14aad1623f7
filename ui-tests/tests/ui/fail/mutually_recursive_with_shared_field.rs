//! Class 2: mutually recursive types: the shared field is found wherever it is.
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use whirl::prelude::*;

#[derive(Isolated)]
struct Even<T> {
    value: T,
    next: Option<Box<Odd<T>>>,
}

#[derive(Isolated)]
struct Odd<T> {
    next: Vec<Even<T>>,
    hits: Arc<AtomicU64>,
}

fn main() {}
