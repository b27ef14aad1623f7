//! Class 2: the same through a generic recursive type.
use std::cell::Cell;
use whirl::prelude::*;

#[derive(Isolated)]
struct List<T> {
    head: T,
    tail: Option<Box<List<T>>>,
    visits: Cell<u32>,
}

fn main() {}
