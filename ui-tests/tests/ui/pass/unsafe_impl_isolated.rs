//! The type-level escape hatch: `unsafe impl Isolated` for a handle whose sharing is mediated by
//! something trusted. Loud (`unsafe`) and greppable, like every other escape hatch in whirl.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use whirl::prelude::*;

/// A monotonic id source; the only operation is an atomic `fetch_add`.
#[derive(Clone)]
struct IdSource(Arc<AtomicU64>);

// SAFETY: the counter is only ever incremented atomically; no process can observe another's
// state through it beyond receiving distinct ids.
unsafe impl Isolated for IdSource {}

#[derive(Message)]
struct Next(IdSource, ReplyTo<u64>);

#[process]
struct Minter;

#[process]
impl Minter {
    #[handle]
    fn next(&mut self, Next(ids, reply): Next) {
        let _ = reply.send(ids.0.fetch_add(1, Ordering::Relaxed));
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let minter = rt.spawn(Minter);
    let ids = IdSource(Arc::new(AtomicU64::new(0)));
    let a = minter.request_with(|r| Next(ids.clone(), r)).call().unwrap_or(u64::MAX);
    let b = minter.request_with(|r| Next(ids.clone(), r)).call().unwrap_or(u64::MAX);
    assert_eq!((a, b), (0, 1));
    rt.shutdown_graceful();
}
