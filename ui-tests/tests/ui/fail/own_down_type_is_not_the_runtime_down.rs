//! Class 2: a message of one's own named `Down` is not the runtime's termination notice, so a
//! system process handling only it still has no handler for notices.
use whirl::prelude::*;

#[derive(Message)]
struct Down;

#[process(system)]
struct Watcher;

#[process]
impl Watcher {
    #[handle]
    fn down(&mut self, _: Down) {}
}

fn main() {}
