//! Requests across nodes (asks, spawns, migrations) and their ends.
//!
//! The asking side records each request it sends as a pending ask, by request id, with the
//! peer it waits on and its deadline; the request ends exactly once, when its `Reply` comes
//! back, when it times out (the ticker, [`acks`](super::acks)), or when its peer goes Down
//! or this node closes. Each end releases the ask's slot on the peer's link. The answering
//! side hands the runtime a [`Replier`] that sends the handler's answer back as a `Reply`.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use super::{Core, PendingAsk, SendError};
use crate::ask::{AskEnd, AskSlot};
use crate::counts::bump;
use crate::dispatch::Replier;
use crate::link::Link;
use crate::wire::{self, BounceReason, Frame, Header, Outcome};
use crate::{DownReason, NodeId};

impl Core {
    /// Sends a request (an ask or a spawn) whose end comes back as `Reply { req }`: reserves
    /// an ask slot on the link, records the pending request until `deadline`, sends.
    pub(crate) fn start_request<T: serde::Serialize + ?Sized>(
        self: &Arc<Self>,
        link: Option<&Link>,
        node: NodeId,
        header: impl FnOnce(u64) -> Header,
        payload: &T,
        deadline: Instant,
    ) -> Result<Arc<AskSlot>, SendError> {
        if let Some(link) = link {
            if !link.begin_ask() {
                bump(&self.counts.refused);
                return Err(SendError::Full);
            }
        }
        let slot = AskSlot::new();
        let req = self.begin_ask(node, deadline, Arc::clone(&slot));
        if let Err(e) = self.send_data(link, node, &header(req), payload) {
            self.forget_ask(req);
            if let Some(link) = link {
                link.end_ask();
            }
            return Err(e);
        }
        Ok(slot)
    }

    pub(crate) fn begin_ask(&self, peer: NodeId, deadline: Instant, slot: Arc<AskSlot>) -> u64 {
        let req = self.next_req.fetch_add(1, Relaxed);
        self.asks.lock().insert(
            req,
            PendingAsk {
                peer,
                deadline,
                slot,
            },
        );
        req
    }

    pub(crate) fn forget_ask(&self, req: u64) {
        self.asks.lock().remove(&req);
    }

    /// Ends every pending ask `matching` selects with `end()`, outside the table's lock.
    pub(super) fn end_asks(
        &self,
        matching: impl Fn(&PendingAsk) -> bool,
        end: impl Fn() -> AskEnd,
    ) {
        let ended: Vec<PendingAsk> = {
            let mut asks = self.asks.lock();
            let ids: Vec<u64> = asks
                .iter()
                .filter(|(_, ask)| matching(ask))
                .map(|(id, _)| *id)
                .collect();
            ids.iter().filter_map(|id| asks.remove(id)).collect()
        };
        for ask in ended {
            self.end_ask_slot(&ask, end());
        }
    }

    fn end_ask_slot(&self, ask: &PendingAsk, end: AskEnd) {
        if let Some(link) = self.links.read().get(&ask.peer) {
            link.end_ask();
        }
        ask.slot.complete(end);
    }

    /// Where the end of the ask `req` from `peer` goes.
    pub(super) fn replier(self: &Arc<Self>, peer: NodeId, req: u64, seq: u64) -> Replier {
        let core = Arc::clone(self);
        Replier::new(move |answer| {
            let (outcome, payload) = match answer {
                Some(bytes) => (Outcome::Answered, bytes),
                None => (Outcome::NoReply, Vec::new()),
            };
            let mut frame =
                wire::encode_raw(core.id, &Header::Reply { req, outcome, seq }, &payload);
            if frame.len() > core.max_frame {
                tracing::error!(
                    size = frame.len(),
                    limit = core.max_frame,
                    "an answer exceeds the frame limit; the asker is told NoReply"
                );
                let header = Header::Reply {
                    req,
                    outcome: Outcome::NoReply,
                    seq,
                };
                frame = wire::encode_raw(core.id, &header, &[]);
            }
            core.send_control(peer, frame);
        })
    }

    /// The end of this node's request `req` came back from `frame.from`.
    pub(super) fn on_reply(self: &Arc<Self>, frame: &Frame<'_>, req: u64, outcome: Outcome) {
        let Some(ask) = self.asks.lock().remove(&req) else {
            // Timed out (or never ours): nobody waits.
            return;
        };
        let end = match outcome {
            Outcome::Answered => AskEnd::Answered(frame.payload.to_vec()),
            Outcome::Bounced(reason) => {
                bump(&self.counts.returned);
                if reason == BounceReason::Quarantined {
                    self.unusable(frame.from, DownReason::QuarantinedBy);
                }
                AskEnd::Bounced(reason, frame.payload.to_vec())
            }
            Outcome::NoReply => AskEnd::NoReply,
            Outcome::Failed => AskEnd::Failed(String::from_utf8_lossy(frame.payload).into_owned()),
            // Handled by `on_ask_redirected` (`redirects.rs`) before this.
            Outcome::Redirected { .. } => AskEnd::NoReply,
        };
        self.end_ask_slot(&ask, end);
    }
}
