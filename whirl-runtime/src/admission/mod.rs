//! Admission control: which messages a group accepts, decided in the sender's thread before a
//! message is queued.
//!
//! A group's [`MessagePredicate`] sees an [`Offer`] for every post (the destination, its
//! principal, the message's type and estimated cost, the group's counters) and admits or
//! rejects it; a rejected message goes back to its sender inside
//! [`PostError::Rejected`](crate::PostError::Rejected), so the sender can degrade (serve a
//! cheaper variant, answer 503) instead of piling work on an overloaded group. Predicates that
//! [observe](MessagePredicate::observes) get a [`Completion`] for each admitted message when it
//! leaves, which is how the feedback controllers learn.
//!
//! The library, one predicate per file:
//!
//! * [`QueueLength`]: a threshold on the group's queue (Whirlwind's simplest predicate).
//! * [`PriorityThresholds`]: a queue threshold per principal priority.
//! * [`CostBudget`]: a budget of estimated cost in flight, fixed or adaptive.
//! * [`UtilityPerCost`]: refuses work worth less than it costs once the group is busy.
//! * [`TokenBucket`]: a rate limit, per group or per principal class.
//! * [`ResponseTime`], [`ClassResponseTime`]: SEDA's 90th-percentile response-time
//!   controllers ([`ControllerParams`]).
//! * [`SessionConsistent`]: admits every message of a session it admitted once.
//! * [`Overload`]: admits everything while the group meets a response-time target, and lets
//!   another predicate shed (adapting its thresholds) only while it does not.
//! * [`And`], [`Or`], [`Not`] ([`PredicateExt`]): combinators.
//!
//! What a message is worth and costs for a principal comes from the principal's [`Estimate`],
//! keyed by [`MessageType`].
//!
//! Layer 4: uses `control` (the group's counters), `principal`, `lifecycle` and `time`.

mod class_response_time;
mod combinators;
mod cost_budget;
mod feedback;
mod overload;
mod predicate;
mod priority;
mod queue_length;
mod response_time;
mod session;
mod token_bucket;
mod utility;

pub use crate::principal::{Estimate, MessageType};
pub use class_response_time::ClassResponseTime;
pub use combinators::{And, Not, Or, PredicateExt};
pub use cost_budget::CostBudget;
pub use feedback::ControllerParams;
pub use overload::Overload;
pub use predicate::{Completion, MessagePredicate, Offer};
pub use priority::PriorityThresholds;
pub use queue_length::QueueLength;
pub use response_time::ResponseTime;
pub use session::SessionConsistent;
pub use token_bucket::TokenBucket;
pub use utility::UtilityPerCost;

#[cfg(all(test, not(loom)))]
pub(crate) use predicate::test_util;
