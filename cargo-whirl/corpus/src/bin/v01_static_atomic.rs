//! A handler bumps a static atomic counter: every process of this type shares it.
// expect: HITS
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static HITS: AtomicU64 = AtomicU64::new(0);

#[derive(Message)]
struct Hit;

#[process]
struct Counter;

#[process]
impl Counter {
    #[handle]
    fn hit(&mut self, _msg: Hit) {
        HITS.fetch_add(1, Ordering::Relaxed); //~ HITS
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Counter).post(Hit);
    rt.shutdown_graceful();
}
