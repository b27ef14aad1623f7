//! The accounting: what a node reports of itself once its counters are at rest, and the
//! ledger that sums every deposit posted, and where it ended, over the nodes.

use std::sync::atomic::Ordering::SeqCst;
use std::thread;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use whirl::prelude::*;
use whirl_dist::{DistCounts, Node};

use crate::account::DEPOSITS_HANDLED;
use crate::flow::FlowReport;
use crate::settings::REST_DEADLINE;

/// A node's counters once they are at rest: its runtime's, its distribution layer's, and the
/// deposits its accounts handled.
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct NodeReport {
    pub label: String,
    pub id: String,
    /// The counters did not change around a reading, the runtime was quiescent, and every
    /// frame received was delivered or bounced.
    pub at_rest: bool,
    pub deposits_handled: u64,
    pub rt_posted: u64,
    pub rt_handled: u64,
    pub rt_rejected: u64,
    pub rt_dead_lettered: u64,
    pub rt_moved: u64,
    pub rt_queued: u64,
    pub sent: u64,
    pub refused: u64,
    pub received: u64,
    pub delivered: u64,
    pub bounced: u64,
    pub returned: u64,
    pub returned_unrouted: u64,
    pub in_doubt: u64,
    pub bounce_overflow: u64,
    pub control_overflow: u64,
    pub malformed: u64,
    pub from_quarantined: u64,
}

impl NodeReport {
    /// Messages this node dead-lettered: left in the inbox of a process that ended, bounces
    /// that found no way back, bounces that came back without a handler. The runtime counts
    /// every message, not only deposits; in this demo the accounts are the only processes
    /// that receive anything, and no `Balance` ask is pending when one of them ends, so every
    /// dead letter here is a deposit.
    pub fn dead_lettered(&self) -> u64 {
        self.rt_dead_lettered + self.bounce_overflow + self.returned_unrouted
    }
}

/// Reads `node`'s and `runtime`'s counters once they are at rest (or after
/// [`REST_DEADLINE`], with `at_rest: false`).
pub fn node_report(label: &str, node: &Node, runtime: &Runtime) -> NodeReport {
    let deadline = Instant::now() + REST_DEADLINE;
    loop {
        let before = node.counts();
        let handled = DEPOSITS_HANDLED.load(SeqCst);
        let rt = runtime.counts();
        let dist: DistCounts = node.counts();
        let at_rest = before == dist
            && handled == DEPOSITS_HANDLED.load(SeqCst)
            && rt.is_quiescent()
            && dist.received == dist.delivered + dist.bounced + dist.redirected;
        if at_rest || Instant::now() >= deadline {
            return NodeReport {
                label: label.to_owned(),
                id: node.id().to_string(),
                at_rest,
                deposits_handled: handled,
                rt_posted: rt.posted,
                rt_handled: rt.handled,
                rt_rejected: rt.rejected,
                rt_dead_lettered: rt.dead_lettered,
                rt_moved: rt.moved,
                rt_queued: rt.queued(),
                sent: dist.sent,
                refused: dist.refused,
                received: dist.received,
                delivered: dist.delivered,
                bounced: dist.bounced,
                returned: dist.returned,
                returned_unrouted: dist.returned_unrouted,
                in_doubt: dist.in_doubt,
                bounce_overflow: dist.bounce_overflow,
                control_overflow: dist.control_overflow,
                malformed: dist.malformed,
                from_quarantined: dist.from_quarantined,
            };
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// Every deposit posted, and where it ended, summed over the nodes.
pub struct Ledger {
    pub posted: u64,
    /// Refused at the sender (`Rejected`, `Terminated`).
    pub refused: u64,
    /// Given back by the receiving node.
    pub bounced: u64,
    pub handled: u64,
    pub dead_lettered: u64,
    pub in_doubt: u64,
}

impl Ledger {
    pub fn sum(flows: &[FlowReport], nodes: &[NodeReport]) -> Ledger {
        Ledger {
            posted: flows.iter().map(|f| f.posted).sum(),
            refused: flows.iter().map(FlowReport::refused).sum(),
            bounced: flows.iter().map(|f| f.bounced).sum(),
            handled: nodes.iter().map(|n| n.deposits_handled).sum(),
            dead_lettered: nodes.iter().map(NodeReport::dead_lettered).sum(),
            in_doubt: nodes.iter().map(|n| n.in_doubt).sum(),
        }
    }

    pub fn rejected(&self) -> u64 {
        self.refused + self.bounced
    }

    pub fn lost(&self) -> i128 {
        i128::from(self.posted)
            - i128::from(self.handled)
            - i128::from(self.rejected())
            - i128::from(self.dead_lettered)
            - i128::from(self.in_doubt)
    }
}
