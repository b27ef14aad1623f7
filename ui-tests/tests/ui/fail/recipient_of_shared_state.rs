//! Class 3: a `Recipient<M>` is isolated only for a message type `M`, so a message cannot
//! carry a recipient of shared state.
use std::sync::{Arc, Mutex};
use whirl::prelude::*;

#[derive(Message)]
struct Subscribe {
    to: Recipient<Arc<Mutex<Vec<u8>>>>,
}

fn main() {}
