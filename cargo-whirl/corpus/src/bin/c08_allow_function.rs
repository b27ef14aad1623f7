//! A function marked `#[allow_shared]`: it and what it calls are allowed.
// expect:
use std::sync::Mutex;
use whirl::prelude::*;

static POOL: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn take_from_pool() -> Option<u32> {
    POOL.lock().ok()?.pop()
}

#[whirl::allow_shared(reason = "the pool is built to be shared by every worker, like r2d2")]
fn checkout() -> Option<u32> {
    take_from_pool()
}

#[derive(Message)]
struct Query;

#[process]
struct Db;

#[process]
impl Db {
    #[handle]
    fn query(&mut self, _q: Query) {
        let _ = checkout();
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Db).post(Query);
    rt.shutdown_graceful();
}
