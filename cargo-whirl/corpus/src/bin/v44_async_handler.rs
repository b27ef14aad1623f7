//! An `async fn` handler touching a static: reported under the handler's method name.
// expect: AWAITED
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use whirl::prelude::*;

static AWAITED: AtomicU64 = AtomicU64::new(0);

#[derive(Message)]
struct Wait(u64);

#[process]
struct Sleeper {
    slept: u64,
}

#[process]
impl Sleeper {
    #[handle]
    async fn wait(&mut self, Wait(ms): Wait) {
        whirl::time::sleep(Duration::from_millis(ms)).await;
        self.slept += AWAITED.fetch_add(1, Ordering::Relaxed); //~ AWAITED
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Sleeper { slept: 0 }).post(Wait(1));
    rt.shutdown_graceful();
}
