//! A read-only `lazy_static!` table: immutable after its initialiser ran.
// expect:
use std::collections::BTreeMap;

use lazy_static::lazy_static;
use whirl::prelude::*;

lazy_static! {
    static ref LIMITS: BTreeMap<u32, u64> =
        (1..=4).map(|tier| (tier, 100 * u64::from(tier))).collect();
}

#[derive(Message)]
struct Quota(u32);

#[process]
struct Limiter {
    quota: u64,
}

#[process]
impl Limiter {
    #[handle]
    fn quota(&mut self, Quota(tier): Quota) {
        self.quota = LIMITS.get(&tier).copied().unwrap_or(0);
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Limiter { quota: 0 }).post(Quota(2));
    rt.shutdown_graceful();
}
