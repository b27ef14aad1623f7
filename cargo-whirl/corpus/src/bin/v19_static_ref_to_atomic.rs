//! An immutable static of a `Freeze` type that holds a reference to an atomic: the static
//! cannot change, what it points to can.
// expect: CURRENT
use std::sync::atomic::{AtomicU32, Ordering};
use whirl::prelude::*;

static BACKING: AtomicU32 = AtomicU32::new(0);
static CURRENT: &AtomicU32 = &BACKING;

#[derive(Message)]
struct Next;

#[process]
struct Sequencer;

#[process]
impl Sequencer {
    #[handle]
    fn next(&mut self, _n: Next) {
        CURRENT.fetch_add(1, Ordering::Relaxed); //~ CURRENT
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Sequencer).post(Next);
    rt.shutdown_graceful();
}
