//! A handler's answer crosses a process boundary: an `Rc` cannot.
use std::rc::Rc;

use whirl::prelude::*;

#[derive(Message)]
struct Hit;

#[process]
struct Counter {
    hits: u64,
}

#[process]
impl Counter {
    #[handle]
    fn hit(&mut self, _: Hit) -> Rc<u64> {
        self.hits += 1;
        Rc::new(self.hits)
    }
}

fn main() {}
