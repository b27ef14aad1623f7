use std::rc::Rc;
use whirl::prelude::*;

#[derive(Message)]
struct Batch {
    items: Vec<Rc<str>>,
}

fn main() {}
