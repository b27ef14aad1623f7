//! A tuple of start arguments names the element that is not isolated, not the tuple.
use std::rc::Rc;
use whirl::prelude::*;

#[process]
#[derive(Clone)]
struct Worker {
    name: String,
}

#[process]
impl Worker {}

fn start((name, _count): (String, Rc<u64>)) -> Worker {
    Worker { name }
}

fn main() {
    let _spec = ChildSpec::worker_with("w", (String::from("a"), Rc::new(1)), start);
}
