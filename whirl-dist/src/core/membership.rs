//! Membership on the node: liveliness samples turned into Up and Down, and what a Down
//! ends.
//!
//! A peer is Up while its liveliness token is present. When the token goes (or the peer
//! proves unusable: it cannot read this node's frames, or it quarantined this node), the peer
//! is Down for good: its link is closed first, so that a post made after anyone hears of the
//! Down sees it closed; then the listeners are told; then everything that waited on the peer
//! ends (asks, watches, links, redirected messages, its names). The table itself is
//! [`crate::membership`].

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use crate::transport::Presence;

use super::{Core, Members};
use crate::ask::AskEnd;
use crate::membership::{parse_alive_key, Observation};
use crate::wire::{BounceReason, RemoteExit};
use crate::{DownReason, NodeEvent, NodeId};

impl Core {
    /// Handles one change of a node's liveliness token. Runs on a transport thread.
    pub(crate) fn on_liveliness(self: &Arc<Self>, key: &str, presence: Presence) {
        let prefix = self.alive_prefix();
        let Some(node) = parse_alive_key(&prefix, key) else {
            self.members.lock().membership.malformed_key();
            tracing::warn!(key, "ignored a liveliness key that names no node");
            return;
        };
        let observation = match presence {
            Presence::Present => Observation::Alive(node),
            Presence::Gone => Observation::Gone(node),
        };
        // On a TLS node a token counts only once the peer's hello verified (`handshake.rs`).
        if let Some(observation) = self.authenticate(observation) {
            self.observe(observation);
        }
    }

    /// Applies a liveliness observation to the membership table, and what it ends.
    pub(super) fn observe(self: &Arc<Self>, observation: Observation) {
        let mut members = self.members.lock();
        let event = members.membership.observe(observation);
        let gone = match observation {
            Observation::Gone(node) => Some(node),
            Observation::Alive(_) => None,
        };
        if let Some(node) = gone {
            // Before anyone hears of the Down: a post made after it must see the link closed.
            self.close_link(node);
        }
        self.publish(members, event);
        if let Some(node) = gone {
            self.peer_down(node);
        }
    }

    /// `node` is Down for `reason` although its token may still be there (it cannot read this
    /// node's frames, or it has quarantined this node): quarantine it as if it had gone.
    pub(super) fn unusable(self: &Arc<Self>, node: NodeId, reason: DownReason) {
        let mut members = self.members.lock();
        let event = members.membership.unusable(node, reason);
        self.close_link(node);
        self.publish(members, event);
        self.peer_down(node);
    }

    /// Applies a membership event to the set of Up nodes and tells the listeners; releases
    /// the lock.
    pub(super) fn publish(
        &self,
        mut members: parking_lot::MutexGuard<'_, Members>,
        event: Option<NodeEvent>,
    ) {
        match event {
            Some(NodeEvent::Up(node)) => {
                self.up.write().insert(node);
            }
            Some(NodeEvent::Down { node, .. }) => {
                self.up.write().remove(&node);
            }
            _ => {}
        }
        if let Some(event) = &event {
            members
                .listeners
                .retain(|listener| listener.send(event.clone()).is_ok());
        }
        drop(members);
        match event {
            Some(NodeEvent::Up(node)) => tracing::debug!(%node, "node up"),
            Some(NodeEvent::Down { node, reason }) => {
                tracing::info!(%node, ?reason, "node down")
            }
            Some(NodeEvent::ResurrectionRefused(node)) => {
                tracing::warn!(%node, "quarantined node reappeared; refused")
            }
            Some(NodeEvent::Moved { .. } | NodeEvent::NameConflict { .. }) | None => {}
        }
    }

    /// Closes the link to `peer` for good: what it had unacknowledged is in doubt. Runs no
    /// user code, so it may run under the membership lock (lock order: members, then links).
    fn close_link(&self, peer: NodeId) {
        if let Some(link) = self.links.write().remove(&peer) {
            let unacknowledged = link.close();
            self.counts.in_doubt.fetch_add(unacknowledged, Relaxed);
        }
    }

    /// `peer` is Down for good: close its link (if not yet), end the asks waiting on it,
    /// forget its inbound count and its names, tell the watchers of its processes, fail what
    /// was linked from it.
    fn peer_down(self: &Arc<Self>, peer: NodeId) {
        self.close_link(peer);
        if self.any_moves.load(Relaxed) {
            let (stranded, orphaned) = self.moves.lock().node_down(peer);
            for (header, payload) in stranded {
                self.undeliverable(header, &payload, BounceReason::Terminated);
            }
            for old in orphaned {
                self.on_fence_done(peer, old, true);
            }
        }
        self.relocation_peer_down(peer);
        // A link opened later (a post racing with this) finds the peer quarantined.
        self.end_asks(|ask| ask.peer == peer, || AskEnd::NodeDown);
        self.inbound.lock().remove(&peer);
        self.registry.lock().forget_node(peer);
        let lost = self.watches.lock().lost(peer);
        for (mref, pid, notify) in lost.notify {
            self.link_watches.lock().remove(&mref);
            tracing::debug!(%pid, "watched process unreachable: its node is down");
            notify(RemoteExit::NoConnection);
        }
        for local in lost.kill {
            self.kill(local, format!("linked node {peer} is down"));
        }
    }
}
