//! A generic helper, followed at its instantiation: `T::record` resolves to the impl for
//! `Audit`, which touches a static.
// expect: TRAIL
use std::sync::Mutex;
use whirl::prelude::*;

static TRAIL: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

trait Record {
    fn record(&self);
}

struct Audit;
impl Record for Audit {
    fn record(&self) {
        let lock = TRAIL.lock(); //~ TRAIL
        if let Ok(mut trail) = lock {
            trail.push("audit");
        }
    }
}

struct Quiet;
impl Record for Quiet {
    fn record(&self) {}
}

fn log_all<T: Record>(items: &[T]) {
    for item in items {
        item.record();
    }
}

#[derive(Message)]
struct Flush;

#[process]
struct Auditor;

#[process]
impl Auditor {
    #[handle]
    fn flush(&mut self, _f: Flush) {
        log_all(&[Quiet, Quiet]);
        log_all(&[Audit]);
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Auditor).post(Flush);
    rt.shutdown_graceful();
}
