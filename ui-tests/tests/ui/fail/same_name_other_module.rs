//! Class 2: a field whose type has the same name as the message, from another module, is
//! checked like any other: no decision depends on how a type is spelled.
use std::sync::{Arc, Mutex};
use whirl::prelude::*;

mod other {
    pub struct SameName<T>(pub T);
}

#[derive(Message)]
struct SameName<T> {
    inner: Arc<Mutex<other::SameName<T>>>,
}

fn main() {}
