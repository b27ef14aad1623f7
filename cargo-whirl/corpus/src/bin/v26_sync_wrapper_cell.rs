//! A user type that wraps a `Cell` and claims `Sync`: a static of it has interior mutability
//! whatever its name says.
// expect: SLOT
use std::cell::Cell;
use whirl::prelude::*;

struct Slot(Cell<u32>);
// SAFETY: none; this is the bug the checker must find.
unsafe impl Sync for Slot {}

static SLOT: Slot = Slot(Cell::new(0));

#[derive(Message)]
struct Put(u32);

#[process]
struct Keeper;

#[process]
impl Keeper {
    #[handle]
    fn put(&mut self, Put(n): Put) {
        SLOT.0.set(n); //~ SLOT
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Keeper).post(Put(1));
    rt.shutdown_graceful();
}
