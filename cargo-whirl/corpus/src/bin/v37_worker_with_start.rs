//! A start function given to `ChildSpec::worker_with`: the supervisor runs it inside its
//! process at every (re)start, and it touches a static.
// expect: STARTS
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;
use whirl::supervision::{ChildSpec, Supervisor, SupervisorSpec};

static STARTS: AtomicU64 = AtomicU64::new(0);

#[derive(Message)]
struct Ping;

#[process]
#[derive(Clone)]
struct Pinger {
    capacity: usize,
}

#[process]
impl Pinger {
    #[handle]
    fn ping(&mut self, _p: Ping) {
        self.capacity += 1;
    }
}

fn start_pinger(capacity: usize) -> Pinger {
    STARTS.fetch_add(1, Ordering::Relaxed); //~ STARTS
    Pinger { capacity }
}

fn main() {
    let rt = Runtime::new();
    let spec = SupervisorSpec::new("root").child(ChildSpec::worker_with("pinger", 8, start_pinger));
    let _ = rt.spawn(Supervisor::new(spec));
    rt.shutdown_graceful();
}
