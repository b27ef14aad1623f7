//! What the simulated nodes run and send: the numbered `Mark`, the `Sink` that stays on its
//! node and the `Mover` that moves, and the record of every mark handled (and given back)
//! that the world's invariants read.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use whirl::prelude::*;
use whirl_dist::{Node, Pid, Remote, RemoteAddr};

/// A numbered message from one node to another's sink.
#[derive(Message, Serialize, Deserialize)]
pub struct Mark {
    pub origin: usize,
    /// The target it was posted to (for the trace).
    pub target: usize,
    pub seq: u64,
}

impl Remote for Mark {
    const TAG: &'static str = "sim.Mark/1";
}

/// One mark handled: by which target, on which node, from which origin, its number.
#[derive(Clone, Copy, Debug)]
pub struct HandledMark {
    pub target: usize,
    pub node: usize,
    pub origin: usize,
    pub seq: u64,
}

/// Every mark handled, in order.
pub type Handled = Arc<Mutex<Vec<HandledMark>>>;

thread_local! {
    /// The record of the world running on this thread, and the node whose turn runs now:
    /// turns of a stepped runtime run on the simulator's thread.
    pub static RECORD: std::cell::RefCell<Option<Handled>> = const { std::cell::RefCell::new(None) };
    pub static RUNNING_ON: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
    /// The marks given back to their senders' bounce handlers: (origin, target, seq).
    pub static RETURNED: std::cell::RefCell<Vec<(usize, usize, u64)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// An address of `pid` at `node` for marks, whose bounces are recorded.
pub fn mark_addr(node: &Node, pid: Pid) -> RemoteAddr<Mark> {
    node.remote::<Mark>(pid).on_bounce(|back| {
        let Mark {
            origin,
            target,
            seq,
        } = back.msg;
        RETURNED.with(|r| r.borrow_mut().push((origin, target, seq)));
    })
}

fn record(target: usize, Mark { origin, seq, .. }: Mark) {
    let node = RUNNING_ON.with(std::cell::Cell::get);
    RECORD.with(|r| {
        if let Some(record) = &*r.borrow() {
            if let Ok(mut handled) = record.lock() {
                handled.push(HandledMark {
                    target,
                    node,
                    origin,
                    seq,
                });
            }
        }
    });
}

/// A target that stays on its node: target number = its node.
#[process]
pub struct Sink {
    pub target: usize,
}

#[process]
impl Sink {
    #[handle]
    fn mark(&mut self, mark: Mark) {
        record(self.target, mark);
    }
}

/// A target that moves: target number = nodes + its first node.
#[process]
#[derive(Serialize, Deserialize)]
pub struct Mover {
    pub target: usize,
    pub handled: u64,
}

#[process]
impl Mover {
    #[handle]
    fn mark(&mut self, mark: Mark) {
        self.handled += 1;
        record(self.target, mark);
    }
}
