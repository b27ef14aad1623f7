use std::rc::Rc;
use whirl::prelude::*;

#[derive(Message)]
struct Pair {
    both: (String, Rc<u8>),
}

fn main() {}
