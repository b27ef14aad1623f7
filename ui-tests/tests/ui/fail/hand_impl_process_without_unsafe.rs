//! Class 1: a hand-written `Process` impl skips `#[process]`'s checks, so it must be `unsafe`.
use std::sync::{Arc, Mutex};
use whirl::prelude::*;

struct Sneaky {
    shared: Arc<Mutex<u64>>,
}

#[derive(Message)]
struct Bump;

impl Process for Sneaky {
    type Message = Bump;
    fn handle(&mut self, _: Bump, _: &mut Ctx<Self>) -> Result<(), Failure> {
        *self.shared.lock().unwrap() += 1;
        Ok(())
    }
}

fn main() {}
