//! A static marked `#[allow_shared]` with its reason: reported as allowed, not as an error.
// expect:
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

#[whirl::allow_shared(reason = "a statistic read by the operator only; no process reads it")]
static SERVED: AtomicU64 = AtomicU64::new(0);

/// Called by `main` only: still listed, every use of the attribute is.
#[whirl::allow_shared(reason = "reports the statistic at exit")]
fn report() -> u64 {
    SERVED.load(Ordering::Relaxed)
}

#[derive(Message)]
struct Serve;

#[process]
struct Server;

#[process]
impl Server {
    #[handle]
    fn serve(&mut self, _s: Serve) {
        SERVED.fetch_add(1, Ordering::Relaxed);
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Server).post(Serve);
    rt.shutdown_graceful();
    println!("{}", report());
}
