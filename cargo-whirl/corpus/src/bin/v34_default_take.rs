//! A `Default` impl run by `mem::take` (std calls it back).
// expect: BATCHES
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static BATCHES: AtomicU64 = AtomicU64::new(0);

#[derive(Isolated)]
struct Batch {
    id: u64,
    items: Vec<u64>,
}

impl Default for Batch {
    fn default() -> Self {
        let id = BATCHES.fetch_add(1, Ordering::Relaxed); //~ BATCHES
        Batch {
            id,
            items: Vec::new(),
        }
    }
}

#[derive(Message)]
struct Flush;

#[process]
struct Batcher {
    current: Batch,
    flushed: Vec<(u64, usize)>,
}

#[process]
impl Batcher {
    #[handle]
    fn flush(&mut self, _f: Flush) {
        let done = std::mem::take(&mut self.current);
        self.flushed.push((done.id, done.items.len()));
    }
}

fn main() {
    let rt = Runtime::new();
    let batcher = Batcher {
        current: Batch {
            id: 0,
            items: Vec::new(),
        },
        flushed: Vec::new(),
    };
    let _ = rt.spawn(batcher).post(Flush);
    rt.shutdown_graceful();
}
