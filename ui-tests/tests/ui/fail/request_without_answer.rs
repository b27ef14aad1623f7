//! A request with options, sent with `call`, needs a handler that answers, as the shorthand
//! `call` does; `post` of the same request is fine.
use std::time::Duration;

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
    let vip = Principal::builder(1).priority(7).build().expect("a valid principal");
    let _ = counter.request(Hit).on_behalf(&vip).post();
    let _ = counter
        .request(Hit)
        .on_behalf(&vip)
        .timeout(Duration::from_secs(1))
        .call();
}
