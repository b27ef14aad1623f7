//! A `LazyLock<Mutex<..>>` static: lazily built, then shared.
// expect: SESSIONS
use std::collections::HashSet;
use std::sync::{LazyLock, Mutex};
use whirl::prelude::*;

static SESSIONS: LazyLock<Mutex<HashSet<u64>>> = LazyLock::new(|| Mutex::new(HashSet::new()));

#[derive(Message)]
struct Login(u64);

#[process]
struct Gate;

#[process]
impl Gate {
    #[handle]
    fn login(&mut self, Login(id): Login) {
        let lock = SESSIONS.lock(); //~ SESSIONS
        if let Ok(mut sessions) = lock {
            sessions.insert(id);
        }
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Gate).post(Login(7));
    rt.shutdown_graceful();
}
