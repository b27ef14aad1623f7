//! Class 2: renaming `Mutex` on import changes nothing: the check is on the type.
use std::sync::{Arc, Mutex as Calm};
use whirl::prelude::*;

#[derive(Message)]
struct Hidden {
    inner: Arc<Calm<u64>>,
}

fn main() {}
