//! A `once_cell::sync::Lazy<Mutex<..>>`: lazily built, then shared and written.
// expect: PENDING
use std::sync::Mutex;

use once_cell::sync::Lazy;
use whirl::prelude::*;

static PENDING: Lazy<Mutex<Vec<u64>>> = Lazy::new(|| Mutex::new(Vec::new()));

#[derive(Message)]
struct Defer(u64);

#[process]
struct Deferrer;

#[process]
impl Deferrer {
    #[handle]
    fn defer(&mut self, Defer(job): Defer) {
        let lock = PENDING.lock(); //~ PENDING
        if let Ok(mut pending) = lock {
            pending.push(job);
        }
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Deferrer).post(Defer(3));
    rt.shutdown_graceful();
}
