//! `#[allow_shared]` on a handler inside a `#[process]` impl: the handler and what it calls
//! are allowed.
// expect:
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static SERVED: AtomicU64 = AtomicU64::new(0);

#[derive(Message)]
struct Serve;

#[process]
struct Server;

#[process]
impl Server {
    #[handle]
    #[whirl::allow_shared(reason = "a statistic for the operator; processes never read it")]
    fn serve(&mut self, _s: Serve) {
        SERVED.fetch_add(1, Ordering::Relaxed);
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Server).post(Serve);
    rt.shutdown_graceful();
}
