//! `fn` pointers everywhere, none of them reaching shared state from a process: a start
//! function and a pointer in the state that are pure, and a function that touches a static
//! whose address is taken in `main` with another type, which no process calls.
// expect:
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;
use whirl::supervision::{ChildSpec, Supervisor, SupervisorSpec};

static BOOTS: AtomicU64 = AtomicU64::new(0);

fn boot() {
    BOOTS.fetch_add(1, Ordering::Relaxed);
}

fn double(n: u64) -> u64 {
    n * 2
}

#[derive(Message)]
struct Step;

#[process]
#[derive(Clone)]
struct Stepper {
    step: fn(u64) -> u64,
    value: u64,
}

#[process]
impl Stepper {
    #[handle]
    fn step(&mut self, _s: Step) {
        self.value = (self.step)(self.value);
    }
}

fn start_stepper(value: u64) -> Stepper {
    Stepper {
        step: double,
        value,
    }
}

fn main() {
    let hooks: [fn(); 1] = [boot];
    for hook in hooks {
        hook();
    }
    let rt = Runtime::new();
    let spec =
        SupervisorSpec::new("root").child(ChildSpec::worker_with("stepper", 1, start_stepper));
    let _ = rt.spawn(Supervisor::new(spec));
    rt.shutdown_graceful();
}
