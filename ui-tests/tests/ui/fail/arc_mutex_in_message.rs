use std::sync::{Arc, Mutex};
use whirl::prelude::*;

#[derive(Message)]
struct Share {
    cache: Arc<Mutex<Vec<String>>>,
}

fn main() {}
