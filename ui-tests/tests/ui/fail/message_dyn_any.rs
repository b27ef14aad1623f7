//! `Box<dyn Any + Send>` could hold anything, shared state included: refused.
use std::any::Any;
use whirl::prelude::*;

#[derive(Message)]
struct Opaque {
    payload: Box<dyn Any + Send>,
}

fn main() {}
