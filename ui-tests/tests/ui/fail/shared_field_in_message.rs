use std::sync::{Arc, Mutex};
use whirl::prelude::*;

#[derive(Message)]
struct Handoff {
    #[shared]
    rows: Arc<Mutex<Vec<String>>>,
}

fn main() {}
