//! Class 2: a recursive type is accepted when owned, and refused when any field reaches shared
//! mutability.
use std::sync::{Arc, Mutex};
use whirl::prelude::*;

#[derive(Message)]
struct Tree {
    children: Vec<Tree>,
    cache: Arc<Mutex<u64>>,
}

fn main() {}
