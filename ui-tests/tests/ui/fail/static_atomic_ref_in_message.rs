use std::sync::atomic::AtomicBool;
use whirl::prelude::*;

static SHUTDOWN: AtomicBool = AtomicBool::new(false);

#[derive(Message)]
struct Watch {
    flag: &'static AtomicBool,
}

fn main() {
    let _ = Watch { flag: &SHUTDOWN };
}
