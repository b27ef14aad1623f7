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
    fn hit(&self, _: Hit) {}
}

fn main() {}
