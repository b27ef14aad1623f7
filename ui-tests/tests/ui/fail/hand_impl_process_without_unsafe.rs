//! Class 1: a hand-written `Process` impl skips `#[process]`'s checks, so it must be `unsafe`.
use std::sync::{Arc, Mutex};
use whirl::prelude::*;

struct Sneaky {
    shared: Arc<Mutex<u64>>,
}

impl Process for Sneaky {
    type Message = ();
    fn handle(&mut self, _: (), _: &mut Ctx<Self>) -> Result<(), Failure> {
        *self.shared.lock().unwrap() += 1;
        Ok(())
    }
}

fn main() {}
