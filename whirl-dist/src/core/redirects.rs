//! Following a process that moved: holding and redirecting its frames on the node it left,
//! fences and resends on the nodes that send to it.
//!
//! The protocol is described in `moves.rs`, whose tables this module drives: a data frame for
//! a process that is moving is held; for one that moved it goes back to its sender as a
//! `Redirect` (a post) or a redirected `Reply` (an ask). The sender buffers every message to
//! that process and sends a `Fence`; the old node answers `FenceDone` once it has taken every
//! earlier frame of the sender; then the sender resends the buffer, in order, to the new pid,
//! and sends there directly from then on. Nothing here runs unless something moved
//! (`any_moves`).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use super::{Core, SendError};
use crate::ask::AskEnd;
use crate::counts::bump;
use crate::moves::{HeldFrame, Outgoing, Redirected, Route};
use crate::wire::{self, BounceReason, Frame, Header, Outcome, WirePrincipal};
use crate::{NodeId, Pid};

impl Core {
    /// A data frame for a local process that is moving (held) or moved (redirected): `true`
    /// if it was taken care of here, and counted as taken.
    ///
    /// A held frame is counted taken (a fence's mark counts it) but not acknowledged until it
    /// has been sent back ([`Core::release_held`]): until then only this node has it, and if
    /// this node dies its sender must count it in doubt, not delivered.
    pub(super) fn intercept(self: &Arc<Self>, frame: &Frame<'_>, to: u64, seq: u64) -> bool {
        let moved = {
            let mut inbound = self.inbound.lock();
            let mut moves = self.moves.lock();
            if moves.is_moving(to) {
                let entry = inbound.entry(frame.from).or_default();
                entry.taken += 1;
                entry.held.insert(entry.taken);
                let index = entry.taken;
                moves.hold(to, || HeldFrame {
                    from: frame.from,
                    index,
                    header: frame.header.clone(),
                    payload: frame.payload.to_vec(),
                });
                return true;
            }
            moves.moved_to(to)
        };
        match moved {
            Some(pid) => {
                // Sent back before it is counted, so before any acknowledgement covers it.
                self.redirect(frame.from, seq, &frame.header, frame.payload, pid);
                self.taken(frame.from);
                true
            }
            None => false,
        }
    }

    /// A frame of `from` held at position `index` has been sent back (redirected, or bounced):
    /// acknowledgements may cover it now (the ticker sends one, behind what was sent back).
    pub(super) fn release_held(&self, from: NodeId, index: u64) {
        if let Some(inbound) = self.inbound.lock().get_mut(&from) {
            inbound.held.remove(&index);
        }
    }

    /// Answers the fences that frames sent back since may have let pass.
    pub(super) fn recheck_fences(self: &Arc<Self>) {
        let waiting: Vec<NodeId> = self.fences.lock().iter().map(|f| f.0).collect();
        for peer in waiting {
            self.fences_passed(peer);
        }
    }

    /// Gives a data frame for a process that moved back to its sender, with where it went.
    pub(super) fn redirect(
        self: &Arc<Self>,
        from: NodeId,
        seq: u64,
        header: &Header,
        payload: &[u8],
        to: Pid,
    ) {
        let (node, local) = (to.node().as_u128(), to.local());
        let back = match *header {
            Header::Post {
                to: old,
                tag,
                route,
                principal,
                ..
            } => Header::Redirect {
                old,
                tag,
                route,
                principal,
                node,
                local,
                seq,
            },
            Header::Ask {
                to: old,
                tag,
                req,
                principal,
                ..
            } => Header::Reply {
                req,
                outcome: Outcome::Redirected {
                    old,
                    node,
                    local,
                    tag,
                    principal,
                },
                seq,
            },
            _ => return,
        };
        bump(&self.counts.redirected);
        self.bounce(from, &back, payload);
    }

    /// A message of this node to `(node, old)` came back redirected to `to`.
    pub(super) fn redirected(self: &Arc<Self>, node: NodeId, old: u64, to: Pid, message: Outgoing) {
        self.any_moves.store(true, Relaxed);
        let what = {
            // No send to `node` is under way while the mark is read (see `Link::gate`); with
            // no link yet, nothing was sent.
            let link = self.links.read().get(&node).cloned();
            let _gate = link.as_ref().map(|link| link.gate.write());
            let what = self.moves.lock().redirected(node, old, to, message);
            match what {
                Redirected::First => Err(link.as_ref().map_or(0, |link| link.enqueued())),
                other => Ok(other),
            }
        };
        let what = match what {
            Err(sent) => {
                let header = Header::Fence { old, sent };
                self.send_control(node, wire::encode_raw(self.id, &header, &[]));
                return;
            }
            Ok(what) => what,
        };
        match what {
            Redirected::First => {}
            Redirected::Buffered => {}
            Redirected::Send(to, (header, payload)) => self.resend(to, header, payload),
        }
    }

    /// A fence from `from`: answered once the first `sent` data frames from it were taken.
    pub(super) fn on_fence(self: &Arc<Self>, from: NodeId, old: u64, sent: u64) {
        let done = {
            let inbound = self.inbound.lock();
            // Frames of the sender held for a process still moving count as taken but have
            // not come back yet: the fence waits for them too (`finish_moving` looks again).
            // This node's own frames are taken at once, so only those held count for it.
            let (taken, holding) = inbound
                .get(&from)
                .map_or((0, false), |i| (i.taken, !i.held.is_empty()));
            let taken = if from == self.id { u64::MAX } else { taken };
            let done = !holding && taken >= sent;
            if !done {
                // Recorded under the inbound lock, which `taken` holds when it counts: the
                // frame that completes the mark sees this fence.
                self.fences.lock().push((from, old, sent));
            }
            done
        };
        if done {
            let header = Header::FenceDone { old };
            self.send_control(from, wire::encode_raw(self.id, &header, &[]));
        }
        // A peer that fences a process that moved follows it.
        self.follows(from, old);
    }

    /// Answers the fences of `peer` whose mark the frames taken from it reach, unless frames
    /// of `peer` are still held.
    pub(super) fn fences_passed(self: &Arc<Self>, peer: NodeId) {
        if self.fences.lock().is_empty() {
            return;
        }
        let passed: Vec<u64> = {
            let inbound = self.inbound.lock();
            let (taken, holding) = inbound
                .get(&peer)
                .map_or((0, false), |i| (i.taken, !i.held.is_empty()));
            if holding {
                return;
            }
            let taken = if peer == self.id { u64::MAX } else { taken };
            let mut fences = self.fences.lock();
            let mut passed = Vec::new();
            fences.retain(|&(from, old, sent)| {
                let done = from == peer && taken >= sent;
                if done {
                    passed.push(old);
                }
                !done
            });
            passed
        };
        for old in passed {
            let header = Header::FenceDone { old };
            self.send_control(peer, wire::encode_raw(self.id, &header, &[]));
        }
    }

    /// A new post or ask to `(node, header.to)`: where it goes if that process moved.
    pub(super) fn reroute<T: serde::Serialize + ?Sized>(
        self: &Arc<Self>,
        node: NodeId,
        header: &Header,
        payload: &T,
    ) -> Option<Result<(), SendError>> {
        let (Header::Post { to: old, .. } | Header::Ask { to: old, .. }) = *header else {
            return None;
        };
        let mut encoded = None;
        let route = self.moves.lock().route(node, old, || {
            let bytes = postcard::to_stdvec(payload);
            let bytes = match bytes {
                Ok(bytes) => bytes,
                Err(e) => {
                    encoded = Some(e);
                    Vec::new()
                }
            };
            (header.clone(), bytes)
        })?;
        if let Some(error) = encoded {
            return Some(Err(SendError::Encode(error)));
        }
        if let Header::Ask { req, .. } = *header {
            // Registered on the old node's link: it is pending on the new node now.
            if let Some(link) = self.links.read().get(&node) {
                link.end_ask();
            }
            let new_peer = match route {
                Route::To(pid) => pid.node(),
                _ => node,
            };
            if let Some(ask) = self.asks.lock().get_mut(&req) {
                ask.peer = new_peer;
            }
        }
        Some(match route {
            Route::Buffered => Ok(()),
            Route::Full => {
                bump(&self.counts.refused);
                Err(SendError::Full)
            }
            Route::To(pid) => {
                let retargeted = retarget(header, pid.local());
                let Some(link) = self.link_for(pid.node()) else {
                    return Some(Err(SendError::Down));
                };
                // The send holds the gate of the link it goes on, as every send does (a fence
                // on that link counts it). Recursive: this thread may hold it already (or the
                // first link's), and a fence waiting for it must not make it wait.
                let _gate = link.as_ref().map(|link| link.gate.read_recursive());
                if let (Header::Ask { .. }, Some(link)) = (&retargeted, &link) {
                    if !link.begin_ask() {
                        bump(&self.counts.refused);
                        return Some(Err(SendError::Full));
                    }
                }
                let result = self.try_send_data(link.as_deref(), pid.node(), &retargeted, payload);
                match result {
                    Ok(()) => bump(&self.counts.sent),
                    Err(_) => bump(&self.counts.refused),
                }
                result
            }
        })
    }

    /// Sends again, to `to`, a message that came back redirected (or waited for a fence).
    pub(super) fn resend(self: &Arc<Self>, to: Pid, header: Header, payload: Vec<u8>) {
        let header = retarget(&header, to.local());
        if let Header::Ask { req, .. } = header {
            // Pending where it goes now: its slot there is taken below, its end comes from
            // there, and that node's Down ends it.
            if let Some(ask) = self.asks.lock().get_mut(&req) {
                ask.peer = to.node();
            }
        }
        let Some(link) = self.link_for(to.node()) else {
            return self.undeliverable(header, &payload, BounceReason::Terminated);
        };
        if let (Header::Ask { .. }, Some(link)) = (&header, &link) {
            if !link.begin_ask() {
                return self.undeliverable(header, &payload, BounceReason::Rejected);
            }
        }
        let sent = match &link {
            None => {
                self.on_frame(&wire::encode_raw(self.id, &header, &payload));
                Ok(())
            }
            Some(link) => {
                // As every send (see `reroute`); released before a bounce handler runs.
                let _gate = link.gate.read_recursive();
                link.take_credit()
                    .map_err(|_| BounceReason::Rejected)
                    .and_then(|()| {
                        link.send_data(wire::encode_raw(self.id, &header, &payload))
                            .map_err(|_| {
                                link.return_credit(&self.counts);
                                BounceReason::Rejected
                            })
                    })
            }
        };
        match sent {
            Ok(()) => {
                bump(&self.counts.sent);
                bump(&self.counts.resent);
            }
            Err(reason) => {
                if let (Header::Ask { .. }, Some(link)) = (&header, &link) {
                    link.end_ask();
                }
                self.undeliverable(header, &payload, reason)
            }
        }
    }

    /// A message of this node that cannot be sent where its process went: a post goes to its
    /// bounce handler, an ask ends given back.
    pub(super) fn undeliverable(&self, header: Header, payload: &[u8], reason: BounceReason) {
        bump(&self.counts.returned);
        match header {
            Header::Post { route, .. } => {
                let route = route.and_then(|id| self.routes.read().get(&id).cloned());
                if !route.is_some_and(|route| route(reason, payload)) {
                    bump(&self.counts.returned_unrouted);
                    tracing::warn!(%reason, "a redirected message could not be sent and its sender set no bounce handler");
                }
            }
            Header::Ask { req, .. } => {
                if let Some(ask) = self.asks.lock().remove(&req) {
                    ask.slot.complete(AskEnd::Bounced(reason, payload.to_vec()));
                }
            }
            _ => {}
        }
    }

    /// `from` has taken every frame this node sent before its fence for `old`: the messages
    /// buffered for the process that moved go to where it runs now.
    ///
    /// `given_up`: `from` is Down, so the fences it did not answer never will be; what
    /// came back from it is sent on.
    pub(super) fn on_fence_done(self: &Arc<Self>, from: NodeId, old: u64, given_up: bool) {
        if !self.moves.lock().begin_flush(from, old, given_up) {
            return;
        }
        loop {
            let batch = self.moves.lock().next_batch(from, old);
            let Some((to, batch)) = batch else { break };
            for (header, payload) in batch {
                self.resend(to, header, payload);
            }
        }
        let refences = self.moves.lock().take_refences();
        if !refences.is_empty() {
            // Off this thread: a fence takes the gate of the link to `node` for writing, and
            // this thread may be inside a send to `node` that holds it for reading (a message
            // to a pid that moved away from this node comes back here at once, and its
            // redirect, fence and `FenceDone` with it). The simulator found that deadlock.
            self.defer(move |core| {
                for (node, local) in refences {
                    // A node that is Down answers nothing: its fence is given up, as at its
                    // Down (which gives up the fences sent before it).
                    match core.is_quarantined(node) {
                        true => core.on_fence_done(node, local, true),
                        false => core.fence(node, local, |_| {}),
                    }
                }
            });
        }
    }

    /// Sends a fence for `(node, old)`, its mark taken while no send to `node` is under way
    /// (see `Link::gate`), after `under_gate` ran under the same gate.
    pub(super) fn fence(
        self: &Arc<Self>,
        node: NodeId,
        old: u64,
        under_gate: impl FnOnce(&Arc<Self>),
    ) {
        let sent = {
            let link = self.links.read().get(&node).cloned();
            let _gate = link.as_ref().map(|link| link.gate.write());
            under_gate(self);
            link.as_ref().map_or(0, |link| link.enqueued())
        };
        let header = Header::Fence { old, sent };
        self.send_control(node, wire::encode_raw(self.id, &header, &[]));
    }

    /// This node's ask `req` to `(frame.from, old)` came back: the process moved to `to`.
    pub(super) fn on_ask_redirected(
        self: &Arc<Self>,
        frame: &Frame<'_>,
        req: u64,
        old: u64,
        to: Pid,
        tag: u64,
        principal: Option<WirePrincipal>,
    ) {
        // The ask leaves the old node: its slot there is released, and it is pending on the
        // new node from now on.
        let moved = {
            let mut asks = self.asks.lock();
            asks.get_mut(&req)
                .map(|ask| std::mem::replace(&mut ask.peer, to.node()))
        };
        if let Some(old_peer) = moved {
            if let Some(link) = self.links.read().get(&old_peer) {
                link.end_ask();
            }
            let header = Header::Ask {
                to: to.local(),
                tag,
                req,
                principal,
                trace: None,
            };
            self.redirected(frame.from, old, to, (header, frame.payload.to_vec()));
        }
    }
}

/// `header`, a post or an ask, addressed to local id `to` instead.
fn retarget(header: &Header, to: u64) -> Header {
    match *header {
        Header::Post {
            tag,
            route,
            principal,
            trace,
            ..
        } => Header::Post {
            to,
            tag,
            route,
            principal,
            trace,
        },
        Header::Ask {
            tag,
            req,
            principal,
            trace,
            ..
        } => Header::Ask {
            to,
            tag,
            req,
            principal,
            trace,
        },
        ref other => other.clone(),
    }
}
