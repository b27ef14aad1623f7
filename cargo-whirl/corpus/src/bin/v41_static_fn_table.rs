//! A `static` table of `fn` pointers: the table is immutable, but an entry touches a static,
//! and the handler calls entries through the table.
// expect: AUDITS
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static AUDITS: AtomicU64 = AtomicU64::new(0);

fn add(a: u64, b: u64) -> u64 {
    a + b
}

fn audited_sub(a: u64, b: u64) -> u64 {
    AUDITS.fetch_add(1, Ordering::Relaxed); //~ AUDITS
    a.saturating_sub(b)
}

static OPS: [fn(u64, u64) -> u64; 2] = [add, audited_sub];

#[derive(Message)]
struct Apply(usize, u64);

#[process]
struct Calculator {
    value: u64,
}

#[process]
impl Calculator {
    #[handle]
    fn apply(&mut self, Apply(op, operand): Apply) {
        if let Some(f) = OPS.get(op) {
            self.value = f(self.value, operand);
        }
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Calculator { value: 0 }).post(Apply(1, 2));
    rt.shutdown_graceful();
}
