// `#[allow_shared(reason = "...")]` on a free function, a static, a `static mut`, a method of a
// `#[process]` impl (beside `#[handle]`) and a method of a plain impl: each compiles and runs
// unchanged.
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

#[whirl::allow_shared(reason = "a statistic for the operator; no process reads it")]
static SERVED: AtomicU64 = AtomicU64::new(0);

#[whirl::allow_shared(reason = "written once in main, before any process starts")]
static mut MODE: u8 = 0;

#[whirl::allow_shared(reason = "the counter is a statistic")]
fn count() -> u64 {
    SERVED.fetch_add(1, Ordering::Relaxed) + 1
}

struct Pool;

impl Pool {
    #[whirl::allow_shared(reason = "the pool is made to be shared by every worker")]
    fn size(&self) -> u64 {
        SERVED.load(Ordering::Relaxed)
    }
}

#[derive(Message)]
struct Serve;

#[process]
struct Server {
    served: u64,
}

#[process]
impl Server {
    #[handle]
    #[whirl::allow_shared(reason = "reads the statistic only")]
    fn serve(&mut self, _s: Serve) {
        self.served = count() + Pool.size();
    }
}

fn main() {
    // SAFETY: no process runs yet.
    unsafe { MODE = 1 };
    let rt = Runtime::new();
    let server = rt.spawn(Server { served: 0 });
    server.post(Serve).unwrap();
    rt.block_until_idle();
    assert_eq!(SERVED.load(Ordering::Relaxed), 1);
    rt.shutdown_graceful();
}
