//! Every variant of an enum message is checked.
use std::sync::{Arc, RwLock};
use whirl::prelude::*;

#[derive(Message)]
enum Command {
    Get { key: String },
    Share { table: Arc<RwLock<Vec<u8>>> },
}

fn main() {}
