//! A foreign container is isolated only when what it holds is: a `HeaderMap` of
//! `Arc<Mutex<u8>>` shares the mutexes, whatever the `http` feature covers.
use std::sync::{Arc, Mutex};

use http::HeaderMap;
use whirl::prelude::*;

#[derive(Message)]
struct Counters {
    by_header: HeaderMap<Arc<Mutex<u8>>>,
}

fn main() {}
