//! Watches across nodes: monitors and links, as a table that knows nothing of the network.
//!
//! Both ends of a watch keep part of it:
//!
//! * the **watching** node keeps, per monitor reference, the pid watched and what to do when
//!   it ends (post a [`RemoteDown`] to a process, or run a callback);
//! * the **watched** node keeps, per local process, who watches it (node and reference) and
//!   whether the watch is a link (then the process is also killed when the watching side
//!   fails or its node is lost).
//!
//! The node's receive path ([`crate::core`]) turns frames and membership changes into calls
//! on this table, and carries out what they return after releasing its lock: callbacks are
//! never run under it. A peer may hold at most [`MAX_WATCHES_PER_PEER`] watches on this node's
//! processes; beyond that a monitor is answered at once with `NoProcess` and counted.

use std::collections::HashMap;

use whirl::prelude::*;

use crate::wire::RemoteExit;
use crate::{NodeId, Pid};

/// The most watches one peer may hold on this node's processes.
pub(crate) const MAX_WATCHES_PER_PEER: usize = 1 << 16;

/// The notice a monitoring process receives when a process it monitors on another node (or
/// this one) ends, is found not to exist, or can no longer be reached.
///
/// ```
/// use whirl::prelude::*;
/// use whirl_dist::{RemoteDown, RemoteExit};
///
/// #[process]
/// struct Watcher {
///     lost: u32,
/// }
///
/// #[process]
/// impl Watcher {
///     #[handle]
///     fn down(&mut self, notice: RemoteDown) {
///         if notice.reason == RemoteExit::NoConnection {
///             self.lost += 1; // its node is gone: restart the work elsewhere
///         }
///     }
/// }
/// ```
#[derive(Message, Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[message(bypass_admission)]
#[non_exhaustive]
pub struct RemoteDown {
    /// The process watched.
    pub pid: Pid,
    /// How it ended, or why it is considered gone.
    pub reason: RemoteExit,
}

/// A monitor placed with [`Node::monitor`](crate::Node::monitor); give it to
/// [`Node::demonitor`](crate::Node::demonitor) to stop watching.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MonitorRef {
    pub(crate) pid: Pid,
    pub(crate) mref: u64,
}

impl MonitorRef {
    /// The process watched.
    pub fn pid(&self) -> Pid {
        self.pid
    }
}

/// What to do when a watched process ends.
pub(crate) type Notify = Box<dyn FnOnce(RemoteExit) + Send>;

struct Mine {
    pid: Pid,
    notify: Notify,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Theirs {
    pub(crate) node: NodeId,
    pub(crate) mref: u64,
    pub(crate) link: bool,
}

/// The watch table of one node.
#[derive(Default)]
pub(crate) struct Watches {
    next_mref: u64,
    mine: HashMap<u64, Mine>,
    theirs: HashMap<u64, Vec<Theirs>>,
    by_ref: HashMap<(NodeId, u64), u64>,
    per_peer: HashMap<NodeId, usize>,
    /// Monitors refused because their peer held too many.
    pub(crate) refused: u64,
}

/// What a lost node leaves to do.
pub(crate) struct Lost {
    /// Watches of this node on the lost node's processes (reference, pid, what to do): tell
    /// them `NoConnection`.
    pub(crate) notify: Vec<(u64, Pid, Notify)>,
    /// Local processes linked from the lost node: kill them.
    pub(crate) kill: Vec<u64>,
}

impl Watches {
    /// Records a watch of `pid` by this node; returns its reference.
    pub(crate) fn watch(&mut self, pid: Pid, notify: Notify) -> u64 {
        self.next_mref += 1;
        let mref = self.next_mref;
        self.mine.insert(mref, Mine { pid, notify });
        mref
    }

    /// The process this node watches under `mref` moved to `to`: the watch follows it.
    /// Returns the pid it had, if the watch is still there.
    pub(crate) fn retarget(&mut self, mref: u64, to: Pid) -> Option<Pid> {
        let mine = self.mine.get_mut(&mref)?;
        Some(std::mem::replace(&mut mine.pid, to))
    }

    /// The watch `mref` of this node ended: what to notify, if it is still there.
    pub(crate) fn take_mine(&mut self, mref: u64) -> Option<(Pid, Notify)> {
        self.mine.remove(&mref).map(|m| (m.pid, m.notify))
    }

    /// A peer watches local process `local`; `false` if the peer holds too many watches. A
    /// watch already held (a watcher that followed a move re-sends its monitor to the new
    /// node, which may have adopted it with the process) is kept once.
    pub(crate) fn add_theirs(&mut self, local: u64, watch: Theirs) -> bool {
        if self.by_ref.get(&(watch.node, watch.mref)) == Some(&local) {
            return true;
        }
        let held = self.per_peer.entry(watch.node).or_default();
        if *held >= MAX_WATCHES_PER_PEER {
            self.refused += 1;
            return false;
        }
        *held += 1;
        self.by_ref.insert((watch.node, watch.mref), local);
        self.theirs.entry(local).or_default().push(watch);
        true
    }

    /// A peer stopped a watch: returns the local process it was on and whether it was a link.
    pub(crate) fn remove_theirs(&mut self, node: NodeId, mref: u64) -> Option<(u64, bool)> {
        let local = self.by_ref.remove(&(node, mref))?;
        let mut link = false;
        if let Some(list) = self.theirs.get_mut(&local) {
            list.retain(|w| {
                let hit = w.node == node && w.mref == mref;
                link |= hit && w.link;
                !hit
            });
            if list.is_empty() {
                self.theirs.remove(&local);
            }
        }
        self.release(node, 1);
        Some((local, link))
    }

    /// The local process of a peer's link `mref`, if that link is still there.
    pub(crate) fn link_target(&self, node: NodeId, mref: u64) -> Option<u64> {
        let local = *self.by_ref.get(&(node, mref))?;
        let is_link = self
            .theirs
            .get(&local)
            .is_some_and(|l| l.iter().any(|w| w.node == node && w.mref == mref && w.link));
        is_link.then_some(local)
    }

    /// Local process `local` ended: the watches on it, removed.
    pub(crate) fn ended(&mut self, local: u64) -> Vec<Theirs> {
        let list = self.theirs.remove(&local).unwrap_or_default();
        for w in &list {
            self.by_ref.remove(&(w.node, w.mref));
            self.release(w.node, 1);
        }
        list
    }

    /// `node` is Down: its watches on this node go, and this node's watches on it end.
    pub(crate) fn lost(&mut self, node: NodeId) -> Lost {
        // In reference order, whatever the tables' order: so a simulated run replays.
        let mut refs: Vec<u64> = self
            .mine
            .iter()
            .filter(|(_, m)| m.pid.node() == node)
            .map(|(r, _)| *r)
            .collect();
        refs.sort_unstable();
        let notify = refs
            .iter()
            .filter_map(|r| self.mine.remove(r).map(|m| (*r, m.pid, m.notify)))
            .collect();
        let mut theirs: Vec<u64> = self
            .by_ref
            .keys()
            .filter(|(n, _)| *n == node)
            .map(|(_, mref)| *mref)
            .collect();
        theirs.sort_unstable();
        let mut kill = Vec::new();
        for mref in theirs {
            if let Some((local, true)) = self.remove_theirs(node, mref) {
                kill.push(local);
            }
        }
        self.per_peer.remove(&node);
        Lost { notify, kill }
    }

    fn release(&mut self, node: NodeId, n: usize) {
        if let Some(held) = self.per_peer.get_mut(&node) {
            *held = held.saturating_sub(n);
            if *held == 0 {
                self.per_peer.remove(&node);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    fn node(n: u128) -> NodeId {
        NodeId::from_u128(n)
    }

    fn recorder() -> (Arc<Mutex<Vec<RemoteExit>>>, impl Fn() -> Notify) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let make = {
            let seen = Arc::clone(&seen);
            move || -> Notify {
                let seen = Arc::clone(&seen);
                Box::new(move |exit| seen.lock().unwrap().push(exit))
            }
        };
        (seen, make)
    }

    #[test]
    fn a_lost_node_ends_the_watches_on_it_and_kills_what_it_linked() {
        let mut w = Watches::default();
        let (seen, notify) = recorder();
        let on_b = w.watch(Pid::new(node(2), 10), notify());
        let on_c = w.watch(Pid::new(node(3), 10), notify());
        assert!(w.add_theirs(
            5,
            Theirs {
                node: node(2),
                mref: 1,
                link: true
            }
        ));
        assert!(w.add_theirs(
            6,
            Theirs {
                node: node(2),
                mref: 2,
                link: false
            }
        ));
        assert!(w.add_theirs(
            6,
            Theirs {
                node: node(3),
                mref: 1,
                link: true
            }
        ));
        let lost = w.lost(node(2));
        assert_eq!(lost.kill, vec![5]);
        assert_eq!(lost.notify.len(), 1);
        for (_, pid, n) in lost.notify {
            assert_eq!(pid, Pid::new(node(2), 10));
            n(RemoteExit::NoConnection);
        }
        assert_eq!(*seen.lock().unwrap(), vec![RemoteExit::NoConnection]);
        assert!(w.take_mine(on_b).is_none());
        assert!(w.take_mine(on_c).is_some());
        // Node 3's link on process 6 is untouched.
        assert_eq!(w.link_target(node(3), 1), Some(6));
        assert_eq!(
            w.ended(6),
            vec![Theirs {
                node: node(3),
                mref: 1,
                link: true
            }]
        );
        assert!(w.theirs.is_empty() && w.by_ref.is_empty() && w.per_peer.is_empty());
    }

    #[test]
    fn a_peer_cannot_hold_more_than_its_share() {
        let mut w = Watches::default();
        for mref in 0..MAX_WATCHES_PER_PEER as u64 {
            assert!(w.add_theirs(
                1,
                Theirs {
                    node: node(9),
                    mref,
                    link: false
                }
            ));
        }
        assert!(!w.add_theirs(
            1,
            Theirs {
                node: node(9),
                mref: u64::MAX,
                link: false
            }
        ));
        assert_eq!(w.refused, 1);
        assert!(w.add_theirs(
            1,
            Theirs {
                node: node(8),
                mref: 0,
                link: false
            }
        ));
        assert_eq!(w.remove_theirs(node(9), 0), Some((1, false)));
        assert!(w.add_theirs(
            1,
            Theirs {
                node: node(9),
                mref: u64::MAX,
                link: false
            }
        ));
    }
}
