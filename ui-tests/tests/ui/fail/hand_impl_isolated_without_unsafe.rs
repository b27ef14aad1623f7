//! Class 1: `Isolated` is a promise; implementing it by hand needs `unsafe`.
use std::sync::{Arc, Mutex};
use whirl::prelude::*;

struct Shared(Arc<Mutex<u64>>);

impl Isolated for Shared {}

fn main() {}
