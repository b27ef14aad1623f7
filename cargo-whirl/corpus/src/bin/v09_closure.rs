//! A closure created in a handler and run by std's iterator code touches a static.
// expect: SUM
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static SUM: AtomicU64 = AtomicU64::new(0);

#[derive(Message)]
struct Batch(Vec<u64>);

#[process]
struct Summer;

#[process]
impl Summer {
    #[handle]
    fn batch(&mut self, Batch(values): Batch) {
        values.iter().for_each(|v| {
            SUM.fetch_add(*v, Ordering::Relaxed); //~ SUM
        });
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Summer).post(Batch(vec![1, 2]));
    rt.shutdown_graceful();
}
