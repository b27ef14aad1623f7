//! A template's start function runs in the supervisor for every dynamic child: a closure
//! capturing shared state would hand it to all of them. The value goes in the argument the
//! template takes (`start_child(arg)`), which must be `Isolated`.
use std::sync::{Arc, Mutex};
use whirl::prelude::*;
use whirl::supervision::ChildTemplate;

#[process]
#[derive(Clone)]
struct Session {
    id: u64,
}

#[process]
impl Session {}

fn main() {
    let next = Arc::new(Mutex::new(0u64));
    let _template = ChildTemplate::new(move |name: String| {
        let id = *next.lock().unwrap();
        ChildSpec::worker(name, Session { id })
    });
}
