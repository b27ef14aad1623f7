use std::sync::{Arc, Mutex};
use whirl::prelude::*;

#[process(unsafe(shares_state = "rows are shared with the indexer"))]
struct Shard {
    rows: Arc<Mutex<Vec<String>>>,
}

fn main() {}
