use std::rc::Rc;
use whirl::prelude::*;

#[derive(Message)]
struct Publish {
    topic: String,
    body: Rc<String>,
}

fn main() {}
