//! `ask` (the future form) needs a handler that answers, like `call`.
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
}

fn main() {
    let rt = Runtime::new();
    let counter = rt.spawn(Counter { hits: 0 });
    let _pending = counter.ask(Hit);
}
