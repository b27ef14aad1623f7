//! A read-only `LazyLock<HashMap<..>>`: built once by its initialiser, then only read. Its
//! value has no interior mutability, so every process reads the same, unchanging table.
// expect:
use std::collections::HashMap;
use std::sync::LazyLock;
use whirl::prelude::*;

static CODES: LazyLock<HashMap<&'static str, u16>> =
    LazyLock::new(|| HashMap::from([("ok", 200), ("missing", 404)]));

#[derive(Message)]
struct Lookup(&'static str);

#[process]
struct Table {
    last: u16,
}

#[process]
impl Table {
    #[handle]
    fn lookup(&mut self, Lookup(name): Lookup) {
        self.last = CODES.get(name).copied().unwrap_or(500);
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Table { last: 0 }).post(Lookup("ok"));
    rt.shutdown_graceful();
}
