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
    fn hit(&mut self, _: Hit) -> u64 {
        self.hits += 1;
        self.hits
    }
}

fn main() {}
