//! A closure stored in a local and called there; and a second static reached through a
//! function passed as a value.
// expect: CALLS, MAPPED
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static CALLS: AtomicU64 = AtomicU64::new(0);
static MAPPED: AtomicU64 = AtomicU64::new(0);

fn mark(n: &u64) -> u64 {
    MAPPED.fetch_add(1, Ordering::Relaxed); //~ MAPPED
    *n
}

#[derive(Message)]
struct Go(Vec<u64>);

#[process]
struct Runner;

#[process]
impl Runner {
    #[handle]
    fn go(&mut self, Go(values): Go) {
        let count = || CALLS.fetch_add(1, Ordering::Relaxed); //~ CALLS
        count();
        let _marked: Vec<u64> = values.iter().map(mark).collect();
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Runner).post(Go(vec![1]));
    rt.shutdown_graceful();
}
