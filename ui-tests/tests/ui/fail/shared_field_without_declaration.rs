use std::sync::{Arc, Mutex};
use whirl::prelude::*;

#[process]
struct Shard {
    #[shared]
    rows: Arc<Mutex<Vec<String>>>,
}

fn main() {}
