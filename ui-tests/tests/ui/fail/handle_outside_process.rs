use whirl::prelude::*;

#[derive(Message)]
struct Hit;

struct Counter;

impl Counter {
    #[handle]
    fn hit(&mut self, _: Hit) {}
}

fn main() {}
