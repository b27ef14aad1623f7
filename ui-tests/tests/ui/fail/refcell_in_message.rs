use std::cell::RefCell;
use whirl::prelude::*;

#[derive(Message)]
struct Update {
    scores: RefCell<Vec<u32>>,
}

fn main() {}
