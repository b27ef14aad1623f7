//! Class 2: recursion written with `Self` does not exempt the other fields.
use std::rc::Rc;
use whirl::prelude::*;

#[derive(Message)]
struct Chain {
    next: Option<Box<Self>>,
    label: Rc<str>,
}

fn main() {}
