//! Message predicates: per-group admission control, run in the sender's thread before a
//! message is queued.
//!
//! A rejected message goes back to its sender as [`PostError::Rejected`](crate::PostError),
//! so the sender can degrade (serve a cheaper variant, answer 503) instead of piling work on
//! an overloaded group. A predicate must be cheap and must never block.

use crate::counters::MessageCounts;
use crate::group::GroupShared;
use crate::principal::Principal;
use crate::process::ProcessId;

/// What a predicate sees of a message being posted.
pub struct Offer<'a> {
    to: ProcessId,
    principal: Option<&'a Principal>,
    message_type: &'static str,
    cost: u64,
    group: &'a GroupShared,
}

impl<'a> Offer<'a> {
    pub(crate) fn new<M>(
        to: ProcessId,
        principal: Option<&'a Principal>,
        cost: u64,
        group: &'a GroupShared,
    ) -> Self {
        Offer {
            to,
            principal,
            message_type: std::any::type_name::<M>(),
            cost,
            group,
        }
    }

    /// The message's estimated cost ([`Handles::cost`](crate::Handles::cost), which
    /// `#[process]` takes from [`Message::cost`](crate::Message::cost)).
    pub fn cost(&self) -> u64 {
        self.cost
    }

    /// The destination process.
    pub fn to(&self) -> ProcessId {
        self.to
    }

    /// The destination process's principal, if it has one.
    pub fn principal(&self) -> Option<&'a Principal> {
        self.principal
    }

    /// The Rust type name of the message.
    pub fn message_type(&self) -> &'static str {
        self.message_type
    }

    /// The destination group's live counters (sums a few cache lines; call it once).
    pub fn group_counts(&self) -> MessageCounts {
        self.group.counters.snapshot()
    }
}

/// Decides whether a group accepts a message.
pub trait MessagePredicate: Send + Sync + 'static {
    /// `true` admits the message; `false` returns it to the sender as rejected.
    fn admit(&self, offer: &Offer<'_>) -> bool;
}

impl<F> MessagePredicate for F
where
    F: Fn(&Offer<'_>) -> bool + Send + Sync + 'static,
{
    fn admit(&self, offer: &Offer<'_>) -> bool {
        self(offer)
    }
}

/// Rejects messages while the group has more than `max` messages waiting: the simplest
/// predicate of the Whirlwind paper.
#[derive(Clone, Copy, Debug)]
pub struct QueueLength {
    max: u64,
}

impl QueueLength {
    /// Admit while at most `max` messages are queued in the group.
    pub fn max(max: u64) -> Self {
        QueueLength { max }
    }
}

impl MessagePredicate for QueueLength {
    fn admit(&self, offer: &Offer<'_>) -> bool {
        offer.group_counts().queued() < self.max
    }
}
