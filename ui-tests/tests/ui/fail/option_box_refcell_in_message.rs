use std::cell::RefCell;
use whirl::prelude::*;

#[derive(Message)]
struct Patch {
    target: Option<Box<RefCell<String>>>,
}

fn main() {}
