//! The distribution layer's counters: [`DistCounts`] and the atomics behind it.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A node's distribution counters, as read by [`Node::counts`](crate::Node::counts).
///
/// Every message a process posts to another node ends in exactly one of these places, so the
/// accounting identity of whirl (`posted = handled + rejected + dead_lettered + queued`) holds
/// summed over the nodes:
///
/// * refused at the sender, synchronously, with the message back ([`refused`](DistCounts::refused));
/// * delivered into the receiving node's runtime, which counts it from then on as any local
///   post ([`delivered`](DistCounts::delivered));
/// * bounced by the receiving node and given back at the sender
///   ([`bounced`](DistCounts::bounced) there, [`returned`](DistCounts::returned) here), or,
///   if the way back is full, dead-lettered there ([`bounce_overflow`](DistCounts::bounce_overflow));
/// * in doubt: sent, neither acknowledged nor given back (bounced, redirected, answered), and
///   its node went Down ([`in_doubt`](DistCounts::in_doubt)); the sender cannot know whether
///   it was handled. A node acknowledges a message only once the node that will handle it
///   holds it, so an in-doubt message was handled or lost with that node, and nothing else is
///   lost but what was queued in a process that died with its node.
///
/// Across a pair of nodes at rest: `sent = received + in_doubt` (over the senders and
/// receivers), `received = delivered + bounced`, and the bounced of one are the returned of
/// the other.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct DistCounts {
    /// Posts and asks to other nodes handed to the network.
    pub sent: u64,
    /// Posts and asks to other nodes refused at once, the message given back: the credit
    /// window or lane was full (Rejected), or the node is down (Terminated).
    pub refused: u64,
    /// Data frames (posts and asks) received from other nodes and read.
    pub received: u64,
    /// Received messages posted into this node's runtime.
    pub delivered: u64,
    /// Received messages this node sent back to their sender, with the reason.
    pub bounced: u64,
    /// Messages other nodes bounced back here.
    pub returned: u64,
    /// Of [`returned`](DistCounts::returned), those whose sender gave no bounce handler: logged
    /// and counted as dead letters here.
    pub returned_unrouted: u64,
    /// Messages sent, neither acknowledged nor given back, when their node went Down: each
    /// was handled there or lost with it.
    pub in_doubt: u64,
    /// Frames refused as malformed (truncated, oversized, undecodable header).
    pub malformed: u64,
    /// Frames in a frame format this node does not speak (answered with a version notice).
    pub foreign_version: u64,
    /// Frames from quarantined nodes (bounced with `Quarantined`).
    pub from_quarantined: u64,
    /// Frames from nodes that are not Up (never seen, or gone): dropped unread. A node is Up
    /// here once its liveliness token arrives, which Zenoh sends before the node's first data.
    pub from_unknown: u64,
    /// Registry keys that did not parse (a node of another version, or a stranger).
    pub malformed_names: u64,
    /// Of [`bounced`](DistCounts::bounced), those whose sender's control lane was full (the
    /// sender's credit window is larger than this node's): dead-lettered here, with a
    /// warning, instead of going back. 0 when all nodes use the same window.
    pub bounce_overflow: u64,
    /// Control frames (replies, watch notices) that found their lane full. Always
    /// 0 unless there is a bug: the lane is sized for the most that can be outstanding.
    pub control_overflow: u64,
    /// Frames this node gave back as redirects: their process had moved away from here.
    pub redirected: u64,
    /// Messages this node sent again, to where their process had moved (each was counted in
    /// `sent` when it was first sent, and again here).
    pub resent: u64,
    /// Processes that moved away from this node.
    pub migrated_out: u64,
    /// Processes that moved to this node.
    pub migrated_in: u64,
    /// Requests the [`Policy`](crate::Policy) refused: a message type peers may not send
    /// (bounced as `Incompatible`), a factory the peer may not call, a name peers may not
    /// register.
    pub unauthorised: u64,
    /// Frames whose MAC did not verify, replayed frames, and hellos that did not verify:
    /// dropped unread. Nonzero means a member (or a bug) sent frames in another's name.
    pub unauthenticated: u64,
    /// Data frames a peer sent beyond the credit window this node gave it: refused, and the
    /// peer cut off (Down with [`DownReason::Misbehaved`](crate::DownReason::Misbehaved)).
    pub over_window: u64,
}

/// The live counters behind [`DistCounts`].
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) sent: AtomicU64,
    pub(crate) refused: AtomicU64,
    pub(crate) received: AtomicU64,
    pub(crate) delivered: AtomicU64,
    pub(crate) bounced: AtomicU64,
    pub(crate) returned: AtomicU64,
    pub(crate) returned_unrouted: AtomicU64,
    pub(crate) in_doubt: AtomicU64,
    pub(crate) malformed: AtomicU64,
    pub(crate) foreign_version: AtomicU64,
    pub(crate) from_quarantined: AtomicU64,
    pub(crate) from_unknown: AtomicU64,
    pub(crate) bounce_overflow: AtomicU64,
    pub(crate) control_overflow: AtomicU64,
    pub(crate) redirected: AtomicU64,
    pub(crate) resent: AtomicU64,
    pub(crate) migrated_out: AtomicU64,
    pub(crate) migrated_in: AtomicU64,
    pub(crate) unauthorised: AtomicU64,
    pub(crate) unauthenticated: AtomicU64,
    pub(crate) over_window: AtomicU64,
}

/// Adds one.
pub(crate) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Relaxed);
}

impl Counters {
    pub(crate) fn read(&self) -> DistCounts {
        DistCounts {
            sent: self.sent.load(Relaxed),
            refused: self.refused.load(Relaxed),
            received: self.received.load(Relaxed),
            delivered: self.delivered.load(Relaxed),
            bounced: self.bounced.load(Relaxed),
            returned: self.returned.load(Relaxed),
            returned_unrouted: self.returned_unrouted.load(Relaxed),
            in_doubt: self.in_doubt.load(Relaxed),
            malformed: self.malformed.load(Relaxed),
            foreign_version: self.foreign_version.load(Relaxed),
            from_quarantined: self.from_quarantined.load(Relaxed),
            from_unknown: self.from_unknown.load(Relaxed),
            bounce_overflow: self.bounce_overflow.load(Relaxed),
            control_overflow: self.control_overflow.load(Relaxed),
            redirected: self.redirected.load(Relaxed),
            resent: self.resent.load(Relaxed),
            migrated_out: self.migrated_out.load(Relaxed),
            migrated_in: self.migrated_in.load(Relaxed),
            unauthorised: self.unauthorised.load(Relaxed),
            unauthenticated: self.unauthenticated.load(Relaxed),
            over_window: self.over_window.load(Relaxed),
            malformed_names: 0,
        }
    }
}
