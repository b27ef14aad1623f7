use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use whirl::prelude::*;

#[derive(Message)]
struct Lookup {
    table: Arc<RwLock<HashMap<String, u64>>>,
}

fn main() {}
