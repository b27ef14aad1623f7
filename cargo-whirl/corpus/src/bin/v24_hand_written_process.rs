//! A hand-written `impl Process` (no `#[process]`), whose `handle` touches a static.
// expect: HANDLED
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::request::Sender as _;
use whirl::{Ctx, Failure, Handles, Isolated, Message, Process, Runtime};

static HANDLED: AtomicU64 = AtomicU64::new(0);

#[derive(Message)]
struct Job;

struct Plain;

// SAFETY: no fields; the only message is `Job`, which holds nothing.
unsafe impl Process for Plain {
    type Message = Job;
    fn handle(&mut self, _msg: Job, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        HANDLED.fetch_add(1, Ordering::Relaxed); //~ HANDLED
        Ok(())
    }
}

impl Handles<Job> for Plain {
    fn into_message(msg: Job) -> Job {
        msg
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Plain).post(Job);
    rt.shutdown_graceful();
}
