//! Completion reports for predicates that learn from what happens to admitted messages
//! ([`MessagePredicate::observes`](crate::admission::MessagePredicate::observes)): SEDA's
//! response-time controllers, the adaptive cost budget.
//!
//! Each admitted message carries one 32-bit word in its inbox slot (where it fits in padding,
//! so it costs no memory): its enqueue time on a coarse millisecond clock, modulo 2^16, and its
//! cost, saturated to 15 bits. Sampled turns record the queue latency for the group's
//! statistics (`stats.rs`); in a group whose predicate observes, the predicate gets a
//! [`Completion`] when the message is handled or dead-lettered.
//!
//! Response times are therefore measured to the millisecond and must stay under a minute
//! (65 s) to be told apart, which matches the controllers' targets (tens of milliseconds to
//! seconds, SEDA figure 50).

use std::time::Duration;

use super::shared::GroupShared;
use crate::admission::Completion;
use crate::principal::Principal;
use crate::time::shared_millis;

/// The metadata of a message nobody observes.
pub(crate) const UNOBSERVED: u32 = 0;
const OBSERVED: u32 = 1 << 15;
const COST_MASK: u32 = OBSERVED - 1;

#[inline]
fn millis_now() -> u16 {
    // Wrapping is intended: only differences of less than 2^16 ms are used.
    shared_millis() as u16
}

/// The word for a message admitted now with `cost`.
#[inline]
pub(crate) fn stamp(cost: u64) -> u32 {
    let cost = u32::try_from(cost).unwrap_or(u32::MAX).min(COST_MASK);
    (u32::from(millis_now()) << 16) | OBSERVED | cost
}

/// The cost recorded in `meta`, if the message is observed.
fn cost_of(meta: u32) -> Option<u64> {
    (meta & OBSERVED != 0).then_some(u64::from(meta & COST_MASK))
}

/// Milliseconds since a stamped message was queued.
pub(crate) fn queued_millis(meta: u32) -> u16 {
    let enqueued = (meta >> 16) as u16;
    millis_now().wrapping_sub(enqueued)
}

/// Tells the group's predicate that an observed message was handled.
pub(crate) fn handled(group: &GroupShared, principal: Option<&Principal>, meta: u32) {
    let (Some(cost), Some(predicate)) = (cost_of(meta), group.predicate()) else {
        return;
    };
    let response_time = Duration::from_millis(u64::from(queued_millis(meta)));
    predicate.observe(&Completion::handled(principal, cost, response_time));
}

/// Tells the group's predicate that an observed message was dead-lettered.
pub(crate) fn dead_lettered(group: &GroupShared, principal: Option<&Principal>, meta: u32) {
    if let (Some(cost), Some(predicate)) = (cost_of(meta), group.predicate()) {
        predicate.observe(&Completion::dead_lettered(principal, cost));
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_keeps_the_cost_and_marks_the_message_observed() {
        assert_eq!(cost_of(UNOBSERVED), None);
        assert_eq!(cost_of(stamp(7)), Some(7));
        assert_eq!(cost_of(stamp(0)), Some(0));
        assert_eq!(cost_of(stamp(u64::MAX)), Some(u64::from(COST_MASK)));
    }
}
