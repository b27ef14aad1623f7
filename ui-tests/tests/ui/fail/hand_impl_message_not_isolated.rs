//! Class 1: `impl Message` by hand does not make shared state a message: `Message` needs
//! `Isolated`.
use std::sync::{Arc, Mutex};
use whirl::Message;

struct Bump(Arc<Mutex<u64>>);

impl Message for Bump {}

fn main() {}
