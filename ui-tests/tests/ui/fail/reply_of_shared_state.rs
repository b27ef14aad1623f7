//! Class 3: a reply crosses a process boundary too: `call` needs an `Isolated` answer.
use std::sync::{Arc, Mutex};
use whirl::prelude::*;

#[derive(Message)]
struct Get(ReplyTo<Arc<Mutex<u64>>>);

fn main() {}
