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
    fn hit(&mut self, _: Hit) {
        self.hits += 1;
    }

    #[handle]
    fn hit_again(&mut self, _: Hit) {
        self.hits += 2;
    }
}

fn main() {}
