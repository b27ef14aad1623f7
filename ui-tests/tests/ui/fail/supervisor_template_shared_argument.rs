//! Class 3: a child template's argument type must be `Isolated`.
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

fn start(shared: Arc<Mutex<u64>>) -> ChildSpec {
    let id = *shared.lock().unwrap();
    ChildSpec::worker("session", Session { id })
}

fn main() {
    let _template = ChildTemplate::new(start);
}
