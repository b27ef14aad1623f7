//! A `&'static` to a lazily initialised mutex is shared mutable state.
use std::sync::{Mutex, OnceLock};
use whirl::prelude::*;

#[process]
struct Cache {
    table: &'static OnceLock<Mutex<Vec<u8>>>,
}

fn main() {}
