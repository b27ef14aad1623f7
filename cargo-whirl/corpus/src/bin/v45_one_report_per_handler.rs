//! One handler reaching one static twice (in its body and through a helper): one report, at
//! the first access, the other as a note.
// expect: TOTAL
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static TOTAL: AtomicU64 = AtomicU64::new(0);

fn add_again(n: u64) {
    TOTAL.fetch_add(n, Ordering::Relaxed);
}

#[derive(Message)]
struct Add(u64);

#[process]
struct Adder;

#[process]
impl Adder {
    #[handle]
    fn add(&mut self, Add(n): Add) {
        TOTAL.fetch_add(n, Ordering::Relaxed); //~ TOTAL
        add_again(n);
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Adder).post(Add(1));
    rt.shutdown_graceful();
}
