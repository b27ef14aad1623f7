//! A router's member factory runs at every member's (re)start: a closure capturing shared
//! state would hand it to every member. Values go through `args`, which must be `Isolated`.
use std::sync::{Arc, Mutex};
use whirl::prelude::*;
use whirl::routing::Router;

#[derive(Message, Clone)]
struct Job;

#[process]
struct Member {
    seen: u64,
}

#[process]
impl Member {
    #[handle]
    fn job(&mut self, _: Job) {
        self.seen += 1;
    }
}

fn main() {
    let rt = Runtime::new();
    let counter = Arc::new(Mutex::new(0u64));
    let _router = Router::<Member, Job>::builder(
        rt.default_group(),
        move |_index, _args: &()| Member {
            seen: *counter.lock().unwrap(),
        },
        (),
    );
}
