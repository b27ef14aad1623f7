//! `const` items are values copied into each use: fine, even of a type with interior
//! mutability (each use is a fresh value).
// expect:
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

const LIMIT: u64 = 10;
const NAMES: [&str; 2] = ["a", "b"];
const FRESH: AtomicU64 = AtomicU64::new(0);

#[derive(Message)]
struct Check(u64);

#[process]
struct Limiter {
    seen: u64,
}

#[process]
impl Limiter {
    #[handle]
    fn check(&mut self, Check(n): Check) {
        let local = FRESH;
        local.fetch_add(n, Ordering::Relaxed);
        if n < LIMIT && NAMES.len() == 2 {
            self.seen += local.into_inner();
        }
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Limiter { seen: 0 }).post(Check(1));
    rt.shutdown_graceful();
}
