//! A handler keeps state in a `thread_local!` `RefCell`: it silently splits per worker thread.
// expect: SEEN
use std::cell::RefCell;
use whirl::prelude::*;

thread_local! {
    static SEEN: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

#[derive(Message)]
struct See(u64);

#[process]
struct Watcher;

#[process]
impl Watcher {
    #[handle]
    fn see(&mut self, See(n): See) {
        SEEN.with_borrow_mut(|seen| seen.push(n)); //~ SEEN
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Watcher).post(See(1));
    rt.shutdown_graceful();
}
