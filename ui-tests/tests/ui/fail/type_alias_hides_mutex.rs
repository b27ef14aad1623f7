//! Class 2: a type alias does not hide what it stands for.
use std::sync::{Arc, Mutex};
use whirl::prelude::*;

type Cache = Arc<Mutex<Vec<String>>>;

#[process]
struct Frontend {
    cache: Cache,
}

fn main() {}
