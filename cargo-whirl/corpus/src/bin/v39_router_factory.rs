//! A router's member factory (`Router::builder(group, start, args)`): the router runs it to
//! build and rebuild members, and it touches a static.
// expect: MEMBERS
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;
use whirl::routing::Router;

static MEMBERS: AtomicU64 = AtomicU64::new(0);

#[derive(Message)]
struct Job(u64);

#[process]
struct Member {
    index: usize,
    done: u64,
}

#[process]
impl Member {
    #[handle]
    fn job(&mut self, Job(n): Job) {
        self.done += n + self.index as u64;
    }
}

fn member(index: usize, _args: &()) -> Member {
    MEMBERS.fetch_add(1, Ordering::Relaxed); //~ MEMBERS
    Member { index, done: 0 }
}

fn main() {
    let rt = Runtime::new();
    let router = Router::builder(rt.default_group(), member, ())
        .members(2)
        .start();
    let _ = router.post(Job(1));
    rt.shutdown_graceful();
}
