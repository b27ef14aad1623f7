//! A `thread_local!` `Cell`, set from a helper the handler calls.
// expect: LAST
use std::cell::Cell;
use whirl::prelude::*;

thread_local! {
    static LAST: Cell<u64> = const { Cell::new(0) };
}

fn remember(n: u64) {
    LAST.set(n); //~ LAST
}

#[derive(Message)]
struct Value(u64);

#[process]
struct Memo;

#[process]
impl Memo {
    #[handle]
    fn value(&mut self, Value(n): Value) {
        remember(n);
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Memo).post(Value(1));
    rt.shutdown_graceful();
}
