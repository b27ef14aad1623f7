//! The receive path: one frame from the node's mailbox key, decoded, admitted and dispatched to
//! its family; posts and asks delivered into the local runtime.
//!
//! Frames arrive on Zenoh's threads ([`Core::on_frame`]), which must never block or panic: a
//! frame is decoded with the total decoder of [`crate::wire`]; one that does not decode, or is
//! in another version, is refused and counted; one from a node that is not Up is dropped, or,
//! from a quarantined node, bounced as `Quarantined`. A post or ask goes to its export's entry
//! for its tag, with its principal (one shared value per travelling principal, from a small
//! cache); what the process refuses is bounced back to the sender, and a bounce that comes
//! back goes to the sending address's bounce handler.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use crate::transport::Class;

use super::Core;
use crate::counts::bump;
use crate::dispatch::{Delivery, Replier};
use crate::wire::{self, BounceReason, Frame, Header, Outcome, WireError, WirePrincipal};
use crate::{DownReason, MemberState, NodeId, Pid};

/// How many distinct travelling principals a node keeps built at once.
const PRINCIPAL_CACHE: usize = 4096;

impl Core {
    /// Handles one frame from the network (or from this node, for a pid of its own).
    /// Total: never panics and never blocks, whatever the bytes.
    pub(crate) fn on_frame(self: &Arc<Self>, bytes: &[u8]) {
        let frame = match wire::decode(bytes, self.max_frame) {
            Ok(frame) => frame,
            Err(error) => return self.refuse(error),
        };
        if frame.from != self.id && !self.up.read().contains(&frame.from) {
            let state = self.members.lock().membership.state(frame.from);
            if state == Some(MemberState::Quarantined) {
                return self.refuse_quarantined(&frame);
            }
            bump(&self.counts.from_unknown);
            tracing::debug!(from = %frame.from, "refused a frame from a node that is not Up");
            return;
        }
        // A data frame's position among those taken from its sender: answers carry it.
        let seq = match frame.header.is_data() && frame.from != self.id {
            false => 0,
            true => match self.within_window(frame.from) {
                Some(seq) => seq,
                None => return self.over_window(frame.from),
            },
        };
        // A post or ask is checked for moves and delivered under the delivery gate: a process
        // cannot start moving between the two (`Core::begin_moving`). Recursive: delivering
        // may send a frame to this node, which comes back here on this thread.
        let _gate = matches!(frame.header, Header::Post { .. } | Header::Ask { .. })
            .then(|| self.delivery_gate.read_recursive());
        match frame.header {
            Header::Post { to, .. } | Header::Ask { to, .. }
                if self.any_moves.load(Relaxed) && self.intercept(&frame, to, seq) =>
            {
                bump(&self.counts.received);
            }
            Header::Post {
                to,
                tag,
                route,
                principal,
                trace,
            } => {
                let span = crate::trace::remote_span(frame.from, trace);
                let _inside = span.as_ref().map(tracing::Span::enter);
                self.on_post(&frame, seq, to, tag, route, principal)
            }
            Header::Ask {
                to,
                tag,
                req,
                principal,
                trace,
            } => {
                let span = crate::trace::remote_span(frame.from, trace);
                let _inside = span.as_ref().map(tracing::Span::enter);
                self.on_ask(&frame, seq, to, tag, req, principal)
            }
            Header::Ack { received } => self.on_ack(frame.from, received),
            Header::Bounce {
                route, reason, seq, ..
            } => {
                self.answered(frame.from, seq);
                self.returned(&frame, route, reason)
            }
            Header::Monitor { target, mref, link } => {
                self.on_monitor(frame.from, target, mref, link)
            }
            Header::Demonitor { mref } => self.on_demonitor(frame.from, mref),
            Header::Down { mref, ref reason } => self.end_mine(mref, reason.clone()),
            Header::Exit { mref, ref reason } => self.on_exit(frame.from, mref, reason.clone()),
            Header::Spawn {
                req,
                factory,
                principal,
            } => {
                bump(&self.counts.received);
                self.on_spawn(frame.from, seq, req, factory, principal, frame.payload);
                self.taken(frame.from);
            }
            Header::Probe { req, kind } => {
                bump(&self.counts.received);
                self.on_probe(frame.from, seq, req, kind);
                self.taken(frame.from);
            }
            Header::Migrate { req, kind } => {
                bump(&self.counts.received);
                self.on_migrate(frame.from, seq, req, kind, frame.payload);
                self.taken(frame.from);
            }
            Header::Redirect {
                old,
                tag,
                route,
                principal,
                node,
                local,
                seq,
            } => {
                self.answered(frame.from, seq);
                let to = Pid::from_wire(node, local);
                let header = Header::Post {
                    to: local,
                    tag,
                    route,
                    principal,
                    trace: None,
                };
                self.redirected(frame.from, old, to, (header, frame.payload.to_vec()));
            }
            Header::Fence { old, sent } => self.on_fence(frame.from, old, sent),
            Header::FenceDone { old } => self.on_fence_done(frame.from, old, false),
            Header::Moved { mref, node, local } => self.on_moved(mref, Pid::from_wire(node, local)),
            Header::Relocated { old, node, local } => {
                self.on_relocated(frame.from, old, Pid::from_wire(node, local))
            }
            Header::NamesFree { local } => self.on_names_free(frame.from, local),
            Header::Reply {
                req,
                outcome:
                    Outcome::Redirected {
                        old,
                        node,
                        local,
                        tag,
                        principal,
                    },
                seq,
            } => {
                self.answered(frame.from, seq);
                let to = Pid::from_wire(node, local);
                self.on_ask_redirected(&frame, req, old, to, tag, principal);
            }
            Header::Reply { req, outcome, seq } => {
                self.answered(frame.from, seq);
                self.on_reply(&frame, req, outcome)
            }
        }
    }

    /// A post for local process `to`: delivered into the runtime, or bounced to its sender.
    fn on_post(
        self: &Arc<Self>,
        frame: &Frame<'_>,
        seq: u64,
        to: u64,
        tag: u64,
        route: Option<u64>,
        principal: Option<WirePrincipal>,
    ) {
        bump(&self.counts.received);
        let principal = principal.and_then(|p| self.principal(frame.from, p));
        let delivery = self.deliver(frame.from, to, tag, frame.payload, principal.as_ref(), None);
        // Refused by a process that closed for a hand-over after this frame passed the
        // check for moves: held with the others.
        if delivery == Delivery::Refused(BounceReason::Terminated)
            && self.any_moves.load(Relaxed)
            && self.intercept(frame, to, seq)
        {
            return;
        }
        if let Delivery::Refused(reason) = delivery {
            let header = Header::Bounce {
                tag,
                route,
                reason,
                seq,
            };
            self.bounce(frame.from, &header, frame.payload);
        }
        self.taken(frame.from);
    }

    /// An ask for local process `to`: delivered into the runtime with a [`Replier`], or
    /// answered at once as bounced.
    fn on_ask(
        self: &Arc<Self>,
        frame: &Frame<'_>,
        seq: u64,
        to: u64,
        tag: u64,
        req: u64,
        principal: Option<WirePrincipal>,
    ) {
        let principal = principal.and_then(|p| self.principal(frame.from, p));
        bump(&self.counts.received);
        let replier = self.replier(frame.from, req, seq);
        let delivery = self.deliver(
            frame.from,
            to,
            tag,
            frame.payload,
            principal.as_ref(),
            Some(replier),
        );
        if let Delivery::Refused(reason) = delivery {
            let header = Header::Reply {
                req,
                outcome: Outcome::Bounced(reason),
                seq,
            };
            self.send_control(
                frame.from,
                wire::encode_raw(self.id, &header, frame.payload),
            );
        }
        self.taken(frame.from);
    }

    fn refuse(self: &Arc<Self>, error: WireError) {
        match error {
            WireError::Version { from, version } => {
                bump(&self.counts.foreign_version);
                if !self.up.read().contains(&from) {
                    return;
                }
                tracing::warn!(%from, version, ours = wire::VERSION, "frame in a version this node does not speak; sent a version notice");
                self.send_control(from, wire::notice(self.id));
            }
            WireError::Notice { from, version } => {
                bump(&self.counts.foreign_version);
                if !self.up.read().contains(&from) {
                    return;
                }
                tracing::error!(%from, version, ours = wire::VERSION, "peer cannot read this node's frames; it is Down for this node");
                self.unusable(from, DownReason::Incompatible);
            }
            other => {
                bump(&self.counts.malformed);
                tracing::debug!(error = %other, "refused a malformed frame");
            }
        }
    }

    /// A frame from a node this one quarantined: data is bounced as `Quarantined` (best
    /// effort, straight from this thread with congestion control `Drop`, since the node has
    /// no link), so the sender learns it must restart; the rest is dropped.
    fn refuse_quarantined(&self, frame: &Frame<'_>) {
        bump(&self.counts.from_quarantined);
        let Some(header) = frame.header.given_back(BounceReason::Quarantined, 0) else {
            return;
        };
        let mut bytes = wire::encode_raw(self.id, &header, frame.payload);
        if !self.seal(frame.from, crate::auth::Lane::Direct, &mut bytes) {
            return;
        }
        let sent = self
            .transport
            .put(&self.mailbox_key(frame.from), bytes, Class::Droppable);
        if let Err(error) = sent {
            tracing::debug!(from = %frame.from, %error, "could not bounce a quarantined node's frame");
        }
    }

    /// The principal a frame from `from` carries, believed only as far as the [`Policy`]
    /// trusts that peer (its priority and utility capped), and shared by every message that
    /// carries the same one (a small cache, emptied when it reaches [`PRINCIPAL_CACHE`]
    /// entries), so its counters accumulate and a message does not cost an allocation.
    ///
    /// [`Policy`]: crate::Policy
    pub(super) fn principal(
        &self,
        from: NodeId,
        mut wire: WirePrincipal,
    ) -> Option<whirl::Principal> {
        if from != self.id {
            let name = self.peer_name(from);
            let (priority, utility) = self.policy.principal_caps(name.as_deref());
            wire.priority = wire.priority.min(priority);
            wire.utility = wire.utility.min(utility);
        }
        let key = (wire.id, wire.priority, wire.class, wire.utility.to_bits());
        let mut cache = self.principals.lock();
        if let Some(p) = cache.get(&key) {
            return Some(p.clone());
        }
        if cache.len() >= PRINCIPAL_CACHE {
            cache.clear();
        }
        let principal = wire.build()?;
        cache.insert(key, principal.clone());
        Some(principal)
    }

    /// Whether a data frame now from `peer` is within the credit window this node grants: the
    /// peer may have sent at most `window` frames beyond the last acknowledgement it can have
    /// heard of, the last one handed to Zenoh (not merely queued). A correct sender never has
    /// more outstanding, since it counts only acknowledgements it received; one that ignores
    /// its credit runs ahead of this node's acknowledgements whenever they lag. `Some` with
    /// the frame's position among those taken from `peer` (frames of a peer are taken one at
    /// a time, in order), `None` when it is beyond the window.
    fn within_window(&self, peer: NodeId) -> Option<u64> {
        let inbound = self.inbound.lock();
        match inbound.get(&peer) {
            None => Some(1),
            Some(i) => (i.taken.saturating_sub(i.published.load(Relaxed)) < self.window as u64)
                .then_some(i.taken + 1),
        }
    }

    /// `peer` sent beyond its window: the frame is refused, and the peer cut off.
    fn over_window(self: &Arc<Self>, peer: NodeId) {
        bump(&self.counts.over_window);
        tracing::warn!(%peer, window = self.window, "a peer sent beyond its credit window; it is cut off");
        self.unusable(peer, DownReason::Misbehaved);
    }

    /// Posts (or asks) a received message into the local runtime.
    fn deliver(
        &self,
        from: NodeId,
        to: u64,
        tag: u64,
        payload: &[u8],
        principal: Option<&whirl::Principal>,
        replier: Option<Replier>,
    ) -> Delivery {
        let Some(export) = self.exports.read().get(&to).cloned() else {
            return Delivery::Refused(BounceReason::NoProcess);
        };
        let Some(entry) = export.entries.get(&tag) else {
            return Delivery::Refused(BounceReason::Incompatible);
        };
        let allowed = from == self.id || self.policy_tags.as_ref().is_none_or(|t| t.contains(&tag));
        if !allowed {
            bump(&self.counts.unauthorised);
            bump(&self.counts.bounced);
            return Delivery::Refused(BounceReason::Unauthorised);
        }
        let delivery = match (replier, &entry.ask) {
            (None, _) => (entry.post)(payload, principal),
            (Some(replier), Some(ask)) => ask(payload, principal, replier),
            (Some(_), None) => Delivery::Refused(BounceReason::Incompatible),
        };
        match delivery {
            Delivery::Delivered => bump(&self.counts.delivered),
            Delivery::Refused(reason) => {
                bump(&self.counts.bounced);
                if reason == BounceReason::Terminated {
                    self.remove_export(to);
                }
            }
        }
        delivery
    }

    /// A bounce came back for a message posted from here.
    fn returned(self: &Arc<Self>, frame: &Frame<'_>, route: Option<u64>, reason: BounceReason) {
        bump(&self.counts.returned);
        if reason == BounceReason::Quarantined {
            // The peer saw this node Down: it is gone for this incarnation.
            self.unusable(frame.from, DownReason::QuarantinedBy);
        }
        // Cloned out of the table: the handler may drop the last address using the route,
        // which removes it from the table.
        let route = route.and_then(|id| self.routes.read().get(&id).cloned());
        let routed = route.is_some_and(|route| route(reason, frame.payload));
        if !routed {
            bump(&self.counts.returned_unrouted);
            tracing::warn!(from = %frame.from, %reason, "a message came back and its sender set no bounce handler; counted as a dead letter");
        }
    }
}
