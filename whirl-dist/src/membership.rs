//! The membership table: who is Up, who is quarantined, and the events between them.
//!
//! Every node keeps its own table, fed by one failure detector, Zenoh liveliness (the node's
//! side of it is `core/membership.rs`). The table does no I/O: it takes observations (a node's
//! token appeared or was withdrawn, or the node proved unusable) and returns the event to
//! publish, if any. How each observation becomes an event, and why Down is final, is
//! documented on [`NodeEvent`], where users of the crate see it. The last
//! [`QUARANTINE_LIMIT`] quarantined ids are kept (16 bytes each, 1 MiB in all); an older one is
//! forgotten, so a cluster member that makes up ids cannot grow the table without bound.

use std::collections::{BTreeSet, VecDeque};

/// How many quarantined ids a node keeps (the oldest is forgotten first).
pub(crate) const QUARANTINE_LIMIT: usize = 65_536;

use crate::NodeId;

/// Why a node is Down.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[non_exhaustive]
pub enum DownReason {
    /// Its liveliness token was withdrawn: it closed its session, crashed, or its link lease
    /// expired (Erlang's `noconnection`).
    NoConnection,
    /// It cannot read this node's frames (it answered with a version notice): another
    /// release of whirl-dist that speaks another frame format.
    Incompatible,
    /// It has quarantined this node (it bounced a frame as `Quarantined`): it saw this node
    /// Down earlier, so this incarnation cannot talk to it again.
    QuarantinedBy,
    /// It broke the protocol in a way no correct node does (it sent beyond the credit window
    /// this node gave it): cut off.
    Misbehaved,
}

/// A change in cluster membership, as one node sees it.
///
/// Every node keeps its own membership table, fed by one failure detector: Zenoh
/// liveliness. Each node declares the token `whirl/<cluster>/alive/<node-hex>` and subscribes
/// to `whirl/<cluster>/alive/*`; Zenoh withdraws a node's token when that node closes its
/// session or its link lease expires. The table turns those observations into events:
///
/// | observation | the node was | becomes | event |
/// |---|---|---|---|
/// | token appears | unknown | Up | [`NodeEvent::Up`] |
/// | token appears | Up | Up | none (a repeat) |
/// | token withdrawn | Up | Quarantined | [`NodeEvent::Down`] with [`DownReason::NoConnection`] |
/// | token withdrawn | unknown | Quarantined | none (it was never Up here) |
/// | token appears | Quarantined | Quarantined | [`NodeEvent::ResurrectionRefused`] |
///
/// **Down is final** (Akka's quarantine, Erlang's creation numbers). After a partition heals,
/// Zenoh links the two sides again and each re-announces its token under the *same* id; the
/// table refuses it, because watchers have already been told Down and a supervisor may have
/// restarted the work elsewhere. A node that was cut off must restart, which gives it a fresh
/// [`NodeId`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[non_exhaustive]
pub enum NodeEvent {
    /// A node joined (its liveliness token appeared).
    Up(NodeId),
    /// A node that was Up is gone, for good: it is quarantined.
    Down {
        /// The node.
        node: NodeId,
        /// Why.
        reason: DownReason,
    },
    /// A quarantined node's token appeared again (a healed partition, typically) and was
    /// ignored: the node stays quarantined.
    ResurrectionRefused(NodeId),
    /// A name is held by a process already, and another registered it too: the first holder
    /// keeps it (see [`Node::whereis`](crate::Node::whereis)). Told on every node that sees
    /// both registrations, the registering ones included.
    NameConflict {
        /// The name.
        name: String,
        /// Its first holder, which keeps it.
        holder: crate::Pid,
        /// The later registration, listed by `whereis_all` but never answered by `whereis`
        /// while the holder lives.
        refused: crate::Pid,
    },
    /// A process moved (`Node::migrate`): told on the node it left, the node it went to, and
    /// every node watching it (their watches moved with it).
    Moved {
        /// Its pid before.
        from: crate::Pid,
        /// Its pid now.
        to: crate::Pid,
    },
}

/// Where a node stands in the membership table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[non_exhaustive]
pub enum MemberState {
    /// Its token is present and it was never Down.
    Up,
    /// It was Down (or its token was withdrawn before it was ever seen); it stays out forever.
    Quarantined,
}

/// Counters of what a node's membership table has seen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct NodeStats {
    /// Up events.
    pub ups: u64,
    /// Down events.
    pub downs: u64,
    /// Tokens of quarantined nodes that appeared again and were refused.
    pub resurrections_refused: u64,
    /// Liveliness keys under `whirl/<cluster>/alive/` whose last chunk is not a node id; each
    /// was ignored.
    pub malformed_keys: u64,
}

/// What the failure detector reported about one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Observation {
    /// Its token is present.
    Alive(NodeId),
    /// Its token was withdrawn.
    Gone(NodeId),
}

/// One node's view of the cluster.
#[derive(Debug)]
pub(crate) struct Membership {
    me: NodeId,
    up: BTreeSet<NodeId>,
    quarantined: BTreeSet<NodeId>,
    /// The quarantined ids, oldest first.
    quarantine_order: VecDeque<NodeId>,
    stats: NodeStats,
}

impl Membership {
    /// The table of node `me`, which never lists itself.
    pub(crate) fn new(me: NodeId) -> Membership {
        Membership {
            me,
            up: BTreeSet::new(),
            quarantined: BTreeSet::new(),
            quarantine_order: VecDeque::new(),
            stats: NodeStats::default(),
        }
    }

    /// Applies one observation; returns the event it causes, if any.
    pub(crate) fn observe(&mut self, observation: Observation) -> Option<NodeEvent> {
        match observation {
            Observation::Alive(node) | Observation::Gone(node) if node == self.me => None,
            Observation::Alive(node) => {
                if self.quarantined.contains(&node) {
                    self.stats.resurrections_refused += 1;
                    Some(NodeEvent::ResurrectionRefused(node))
                } else if self.up.insert(node) {
                    self.stats.ups += 1;
                    Some(NodeEvent::Up(node))
                } else {
                    None
                }
            }
            Observation::Gone(node) => {
                let was_up = self.up.remove(&node);
                self.quarantine(node);
                was_up.then(|| {
                    self.stats.downs += 1;
                    NodeEvent::Down {
                        node,
                        reason: DownReason::NoConnection,
                    }
                })
            }
        }
    }

    /// `node` is unusable for `reason` although its token may still be there: it is Down and
    /// quarantined as if the token had gone.
    pub(crate) fn unusable(&mut self, node: NodeId, reason: DownReason) -> Option<NodeEvent> {
        if node == self.me {
            return None;
        }
        let was_up = self.up.remove(&node);
        self.quarantine(node);
        was_up.then(|| {
            self.stats.downs += 1;
            NodeEvent::Down { node, reason }
        })
    }

    /// Quarantines `node`, forgetting the oldest quarantined id beyond [`QUARANTINE_LIMIT`].
    fn quarantine(&mut self, node: NodeId) {
        if !self.quarantined.insert(node) {
            return;
        }
        self.quarantine_order.push_back(node);
        if self.quarantine_order.len() > QUARANTINE_LIMIT {
            if let Some(oldest) = self.quarantine_order.pop_front() {
                self.quarantined.remove(&oldest);
            }
        }
    }

    /// Counts a key that named no node.
    pub(crate) fn malformed_key(&mut self) {
        self.stats.malformed_keys += 1;
    }

    pub(crate) fn up(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.up.iter().copied()
    }

    pub(crate) fn quarantined(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.quarantined.iter().copied()
    }

    pub(crate) fn state(&self, node: NodeId) -> Option<MemberState> {
        if self.up.contains(&node) {
            Some(MemberState::Up)
        } else if self.quarantined.contains(&node) {
            Some(MemberState::Quarantined)
        } else {
            None
        }
    }

    pub(crate) fn stats(&self) -> NodeStats {
        self.stats
    }
}

/// The node id named by a liveliness key `<prefix><node-hex>`, where `prefix` is
/// `whirl/<cluster>/alive/`; `None` if the key is not of that form.
pub(crate) fn parse_alive_key(prefix: &str, key: &str) -> Option<NodeId> {
    key.strip_prefix(prefix)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: NodeId = NodeId::from_u128(1);
    const A: NodeId = NodeId::from_u128(0xa);
    const B: NodeId = NodeId::from_u128(0xb);

    #[test]
    fn a_node_comes_up_once_and_goes_down_once() {
        let mut m = Membership::new(ME);
        assert_eq!(m.observe(Observation::Alive(A)), Some(NodeEvent::Up(A)));
        assert_eq!(m.observe(Observation::Alive(A)), None);
        assert_eq!(m.state(A), Some(MemberState::Up));
        assert_eq!(
            m.observe(Observation::Gone(A)),
            Some(NodeEvent::Down {
                node: A,
                reason: DownReason::NoConnection
            })
        );
        assert_eq!(m.observe(Observation::Gone(A)), None);
        assert_eq!(m.state(A), Some(MemberState::Quarantined));
        assert_eq!(m.stats().ups, 1);
        assert_eq!(m.stats().downs, 1);
    }

    #[test]
    fn a_down_node_is_never_up_again() {
        let mut m = Membership::new(ME);
        m.observe(Observation::Alive(A));
        m.observe(Observation::Gone(A));
        for round in 1..=3 {
            assert_eq!(
                m.observe(Observation::Alive(A)),
                Some(NodeEvent::ResurrectionRefused(A))
            );
            assert_eq!(m.state(A), Some(MemberState::Quarantined));
            assert_eq!(m.observe(Observation::Gone(A)), None);
            assert_eq!(m.stats().resurrections_refused, round);
        }
        assert_eq!(m.up().count(), 0);
        assert_eq!(m.quarantined().collect::<Vec<_>>(), [A]);
        assert_eq!(m.stats().ups, 1);
        assert_eq!(m.stats().downs, 1);
    }

    #[test]
    fn a_token_withdrawn_before_it_was_seen_quarantines_silently() {
        let mut m = Membership::new(ME);
        assert_eq!(m.observe(Observation::Gone(B)), None);
        assert_eq!(
            m.observe(Observation::Alive(B)),
            Some(NodeEvent::ResurrectionRefused(B))
        );
    }

    #[test]
    fn the_quarantine_keeps_the_latest_ids_only() {
        let mut m = Membership::new(ME);
        let total = QUARANTINE_LIMIT as u128 + 10;
        for id in 100..100 + total {
            m.observe(Observation::Gone(NodeId::from_u128(id)));
        }
        assert_eq!(m.quarantined().count(), QUARANTINE_LIMIT);
        assert_eq!(
            m.state(NodeId::from_u128(100)),
            None,
            "the oldest is forgotten"
        );
        let newest = NodeId::from_u128(99 + total);
        assert_eq!(m.state(newest), Some(MemberState::Quarantined));
    }

    #[test]
    fn the_node_ignores_its_own_token() {
        let mut m = Membership::new(ME);
        assert_eq!(m.observe(Observation::Alive(ME)), None);
        assert_eq!(m.observe(Observation::Gone(ME)), None);
        assert_eq!(m.state(ME), None);
    }

    #[test]
    fn keys_are_parsed_strictly() {
        let prefix = "whirl/c/alive/";
        let hex = "0000000000000000000000000000000a";
        assert_eq!(parse_alive_key(prefix, &format!("{prefix}{hex}")), Some(A));
        for bad in [
            format!("whirl/d/alive/{hex}"),
            format!("{prefix}zz"),
            format!("{prefix}{hex}/x"),
            prefix.to_owned(),
            String::new(),
        ] {
            assert_eq!(parse_alive_key(prefix, &bad), None, "{bad:?}");
        }
    }
}

#[cfg(test)]
mod json_tests {
    use super::*;

    #[test]
    fn events_serialize_to_json_with_ids_as_text() {
        let node = NodeId::from_u128(0xabc);
        let down = NodeEvent::Down {
            node,
            reason: DownReason::NoConnection,
        };
        assert_eq!(
            serde_json::to_value(down).unwrap(),
            serde_json::json!({"Down": {"node": "00000000000000000000000000000abc", "reason": "NoConnection"}})
        );
        assert_eq!(
            serde_json::to_value(NodeEvent::Up(node)).unwrap(),
            serde_json::json!({"Up": "00000000000000000000000000000abc"})
        );
    }
}
