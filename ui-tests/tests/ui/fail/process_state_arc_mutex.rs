use std::sync::{Arc, Mutex};
use whirl::prelude::*;

#[process]
struct Cache {
    entries: Arc<Mutex<Vec<String>>>,
    hits: u64,
}

fn main() {}
