//! Class 2: a generic process named after the library type it wraps is checked like any other.
use whirl::prelude::*;

#[process]
struct Mutex<T> {
    inner: std::sync::Mutex<T>,
}

fn main() {}
