//! A handler calls a trait method on its state's field; the impl touches a static.
// expect: OPENED
use std::sync::atomic::{AtomicBool, Ordering};
use whirl::prelude::*;

static OPENED: AtomicBool = AtomicBool::new(false);

trait Door {
    fn open(&mut self);
}

#[derive(Isolated)]
struct FrontDoor;

impl Door for FrontDoor {
    fn open(&mut self) {
        OPENED.store(true, Ordering::Release); //~ OPENED
    }
}

#[derive(Message)]
struct Knock;

#[process]
struct House {
    door: FrontDoor,
}

#[process]
impl House {
    #[handle]
    fn knock(&mut self, _k: Knock) {
        self.door.open();
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(House { door: FrontDoor }).post(Knock);
    rt.shutdown_graceful();
}
