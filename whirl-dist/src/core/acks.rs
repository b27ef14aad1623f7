//! Acknowledgements of received data frames, and the ticker that flushes them and times asks
//! out.
//!
//! For each peer the node counts the data frames it has taken (posted into the runtime or
//! bounced) and acknowledges the running total: at once after every `window / 8` frames, and
//! otherwise from the ticker within [`ACK_INTERVAL`]. A bounce or a redirect is queued before
//! the acknowledgement that covers its frame, and no acknowledgement covers a frame held for a
//! process that is moving until it has been sent back (`Inbound::held`). An acknowledgement that comes in returns credit to
//! the link it covers ([`Link::on_ack`](crate::link::Link::on_ack)).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::Core;
use crate::ask::AskEnd;
use crate::wire::{self, Header};
use crate::NodeId;

/// How long a received frame waits, at most, for its acknowledgement.
pub(crate) const ACK_INTERVAL: Duration = Duration::from_millis(5);

impl Core {
    /// A data frame from `peer` was taken: acknowledge now if a batch is complete.
    pub(super) fn taken(self: &Arc<Self>, peer: NodeId) {
        if peer == self.id {
            return;
        }
        let batch = (self.window as u64 / 8).max(1);
        let ack = {
            let mut inbound = self.inbound.lock();
            let entry = inbound.entry(peer).or_default();
            entry.taken += 1;
            let ackable = entry.ackable();
            (ackable.saturating_sub(entry.acked) >= batch).then(|| {
                entry.acked = ackable;
                ackable
            })
        };
        if self.any_moves.load(Relaxed) {
            self.fences_passed(peer);
        }
        if let Some(received) = ack {
            self.send_ack(peer, received);
        }
    }

    /// Acknowledges `received` frames to `peer`; a full lane drops it (a later one covers
    /// it: acknowledgements are cumulative).
    fn send_ack(self: &Arc<Self>, peer: NodeId, received: u64) {
        let _ = self.queue_control(
            peer,
            wire::encode_raw(self.id, &Header::Ack { received }, &[]),
        );
    }

    /// The ticker's work: flush due acknowledgements, time asks out.
    pub(crate) fn tick(self: &Arc<Self>, now: Instant) {
        let due: Vec<(NodeId, u64)> = {
            let mut inbound = self.inbound.lock();
            inbound
                .iter_mut()
                .filter(|(peer, i)| **peer != self.id && i.ackable() > i.acked)
                .map(|(peer, i)| {
                    i.acked = i.ackable();
                    (*peer, i.acked)
                })
                .collect()
        };
        for (peer, received) in due {
            self.send_ack(peer, received);
        }
        self.end_asks(|ask| ask.deadline <= now, || AskEnd::Timeout);
    }

    /// Starts the ticker thread; it stops when the core is closed or dropped.
    pub(crate) fn start_ticker(self: &Arc<Self>) -> std::io::Result<JoinHandle<()>> {
        let core: Weak<Core> = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("whirl-dist-ticker".to_owned())
            .spawn(move || loop {
                std::thread::sleep(ACK_INTERVAL);
                let Some(core) = core.upgrade() else { return };
                if core.closing.load(Relaxed) {
                    return;
                }
                core.tick(core.now());
            })
    }

    /// `peer` answered its `seq`-th data frame from this node before acknowledging it: that
    /// frame is not in doubt if `peer` goes Down now.
    pub(super) fn answered(&self, peer: NodeId, seq: u64) {
        if seq == 0 {
            return;
        }
        if let Some(link) = self.links.read().get(&peer) {
            link.answered(seq);
        }
    }

    /// `peer` acknowledged `received` data frames of this node: their credit comes back.
    pub(super) fn on_ack(&self, peer: NodeId, received: u64) {
        if let Some(link) = self.links.read().get(&peer) {
            link.on_ack(received);
        }
    }
}
