use whirl::prelude::*;

#[process]
struct Counter {
    hits: u64,
}

#[process]
impl Counter {
    #[handle]
    fn hit(&mut self) {
        self.hits += 1;
    }
}

fn main() {}
