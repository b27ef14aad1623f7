use std::sync::{Arc, Mutex};
use whirl::prelude::*;

#[process(unsafe(shares_state))]
struct Shard {
    #[shared]
    rows: Arc<Mutex<Vec<String>>>,
}

fn main() {}
