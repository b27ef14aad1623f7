//! Message predicates: per-group admission control, run in the sender's thread before a
//! message is queued.
//!
//! A rejected message goes back to its sender as [`PostError::Rejected`](crate::PostError),
//! so the sender can degrade (serve a cheaper variant, answer 503) instead of piling work on
//! an overloaded group. A predicate must be cheap and must never block.

use std::time::Duration;

use crate::control::{Counters, MessageCounts};
use crate::lifecycle::ProcessId;
use crate::principal::{MessageType, Principal};

/// Where an offer's group counts come from.
enum Counts<'a> {
    Live(&'a Counters),
    Fixed(MessageCounts),
}

/// What a predicate sees of a message being posted.
pub struct Offer<'a> {
    to: ProcessId,
    principal: Option<&'a Principal>,
    message_type: MessageType,
    cost: u64,
    counts: Counts<'a>,
}

impl<'a> Offer<'a> {
    pub(crate) fn new<M: 'static>(
        to: ProcessId,
        principal: Option<&'a Principal>,
        cost: u64,
        counters: &'a Counters,
    ) -> Self {
        Offer {
            to,
            principal,
            message_type: MessageType::of::<M>(),
            cost,
            counts: Counts::Live(counters),
        }
    }

    /// An offer outside any group, for testing predicates: a message of type `M` with the
    /// given principal and cost, to a group whose counters read `counts`.
    ///
    /// ```
    /// use whirl::control::MessageCounts;
    /// use whirl::admission::{MessagePredicate, Offer, QueueLength};
    ///
    /// let mut counts = MessageCounts::default();
    /// counts.posted = 10; // ten posted, none handled: ten queued
    /// let offer = Offer::detached::<String>(None, 1, counts);
    /// assert!(!QueueLength::max(10).admit(&offer));
    /// assert!(QueueLength::max(11).admit(&offer));
    /// ```
    pub fn detached<M: 'static>(
        principal: Option<&'a Principal>,
        cost: u64,
        counts: MessageCounts,
    ) -> Self {
        Offer {
            to: ProcessId(0),
            principal,
            message_type: MessageType::of::<M>(),
            cost,
            counts: Counts::Fixed(counts),
        }
    }

    /// The message's estimated cost ([`Handles::cost`](crate::Handles::cost), which
    /// `#[process]` takes from [`Message::cost`](crate::Message::cost)).
    pub fn cost(&self) -> u64 {
        self.cost
    }

    /// The cost as the principal estimates it ([`Principal::estimate_cost`]), or the
    /// message's own [`cost`](Offer::cost) without a principal.
    pub fn estimated_cost(&self) -> u64 {
        match self.principal {
            Some(p) => p.estimate_cost(self.message_type, self.cost),
            None => self.cost,
        }
    }

    /// The utility as the principal estimates it ([`Principal::estimate_utility`]), or 1.0
    /// without a principal.
    pub fn utility(&self) -> f64 {
        match self.principal {
            Some(p) => p.estimate_utility(self.message_type),
            None => 1.0,
        }
    }

    /// The destination process.
    pub fn to(&self) -> ProcessId {
        self.to
    }

    /// The destination process's principal, if it has one.
    pub fn principal(&self) -> Option<&'a Principal> {
        self.principal
    }

    /// The principal's priority, 0 without a principal.
    pub fn priority(&self) -> u8 {
        self.principal.map_or(0, Principal::priority)
    }

    /// The principal's class, 0 without a principal.
    pub fn class(&self) -> u16 {
        self.principal.map_or(0, Principal::class)
    }

    /// The message's type (compare it with [`MessageType::is`]).
    pub fn message_type(&self) -> MessageType {
        self.message_type
    }

    /// Messages queued (or being handled) in the destination group right now: the cheap
    /// reading for threshold predicates. Sums four counters per stripe without a fence, so
    /// under concurrent posting it may be off by the posts in flight, which a threshold does
    /// not mind.
    pub fn queued(&self) -> u64 {
        match &self.counts {
            Counts::Live(c) => c.queued_estimate(),
            Counts::Fixed(c) => c.queued(),
        }
    }

    /// The destination group's live counters (sums a few cache lines; call it once).
    pub fn group_counts(&self) -> MessageCounts {
        match &self.counts {
            Counts::Live(c) => c.snapshot(),
            Counts::Fixed(c) => *c,
        }
    }
}

/// A message the group queued has left the system: what [`MessagePredicate::observe`] gets.
///
/// The runtime builds one per queued message when it is handled (or dead-lettered), with the
/// time from enqueue to the end of its handler; tests build them directly.
///
/// ```
/// use std::time::Duration;
/// use whirl::admission::Completion;
///
/// let done = Completion::handled(None, 3, Duration::from_millis(20));
/// assert_eq!(done.cost(), 3);
/// assert_eq!(done.response_time(), Some(Duration::from_millis(20)));
/// assert_eq!(Completion::dead_lettered(None, 3).response_time(), None);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Completion<'a> {
    principal: Option<&'a Principal>,
    cost: u64,
    response_time: Option<Duration>,
}

impl<'a> Completion<'a> {
    /// A message handled `response_time` after it was queued. `cost` is the cost its offer
    /// carried ([`Offer::cost`]).
    pub fn handled(principal: Option<&'a Principal>, cost: u64, response_time: Duration) -> Self {
        Completion {
            principal,
            cost,
            response_time: Some(response_time),
        }
    }

    /// A queued message that was never handled (its process terminated first).
    pub fn dead_lettered(principal: Option<&'a Principal>, cost: u64) -> Self {
        Completion {
            principal,
            cost,
            response_time: None,
        }
    }

    /// The destination process's principal, if it had one.
    pub fn principal(&self) -> Option<&'a Principal> {
        self.principal
    }

    /// The principal's class, 0 without a principal.
    pub fn class(&self) -> u16 {
        self.principal.map_or(0, Principal::class)
    }

    /// The message's cost, as its offer carried it.
    pub fn cost(&self) -> u64 {
        self.cost
    }

    /// Time from enqueue to the end of handling; `None` if the message was dead-lettered.
    pub fn response_time(&self) -> Option<Duration> {
        self.response_time
    }
}

/// Decides whether a group accepts a message.
///
/// Only [`admit`](MessagePredicate::admit) is required. The other methods have no-op defaults
/// and matter to predicates with state:
///
/// * [`observe`](MessagePredicate::observe) is how feedback reaches a predicate;
/// * [`overruled`](MessagePredicate::overruled) keeps reservations (tokens, budgets) right
///   when a combinator decides differently from this predicate.
///
/// A predicate runs in the sender's thread: it must not block (atomics, or at most a short
/// uncontended lock) and must be cheap. Rejecting never loses the message: `post` gives it
/// back to the sender.
///
/// # The library
///
/// | predicate | rejects when |
/// |---|---|
/// | [`QueueLength`](crate::admission::QueueLength) | the group has `max` messages waiting |
/// | [`CostBudget`](crate::admission::CostBudget) | the cost of admitted, un-handled messages would pass a budget (fixed, or adjusted by a response-time feedback loop) |
/// | [`UtilityPerCost`](crate::admission::UtilityPerCost) | the group fills, lowest utility per unit of cost first |
/// | [`TokenBucket`](crate::admission::TokenBucket) | more than `rate` messages per second arrive (bursts up to `depth`) |
/// | [`PriorityThresholds`](crate::admission::PriorityThresholds) | the queue passes the threshold of the principal's priority |
/// | [`ResponseTime`](crate::admission::ResponseTime) | SEDA's 90th-percentile response-time controller (AIMD on a token-bucket rate) cuts the rate |
/// | [`ClassResponseTime`](crate::admission::ClassResponseTime) | its class-based variant: a bucket per class, lower classes cut first |
///
/// Plus closures (`Fn(&Offer) -> bool`), `Arc<P>` (keep a handle to read or feed a shared
/// predicate), and the [`PredicateExt`](crate::admission::PredicateExt) combinators `and`, `or` and `not`. Time-dependent
/// predicates take a [`Clock`](crate::time::Clock): [`CoarseClock`](crate::time::CoarseClock) by default,
/// [`ManualClock`](crate::time::ManualClock) in tests.
///
/// # Feedback
///
/// Feedback-driven predicates learn from [`MessagePredicate::observe`], through which the
/// runtime reports every message the group queued when it leaves the system (handled or
/// dead-lettered), with the time from enqueue to completion. Tests feed it directly.
///
/// # Writing one
///
/// ```
/// use whirl::admission::{MessagePredicate, Offer};
///
/// /// Turns away anything costlier than 100.
/// struct Cheap;
///
/// impl MessagePredicate for Cheap {
///    fn admit(&self, offer: &Offer<'_>) -> bool {
///        offer.cost() <= 100
///    }
/// }
/// # let _ = Cheap;
/// ```
///
/// `Send + Sync + 'static`, not [`Isolated`](crate::Isolated): a predicate is the group's
/// admission policy, consulted in posting threads, not process state. It may share state on
/// purpose (a budget shared by several groups, a feedback controller updated by completions),
/// and must synchronise it itself.
pub trait MessagePredicate: Send + Sync + 'static {
    /// `true` admits the message; `false` returns it to the sender as rejected.
    ///
    /// A predicate that reserves something for an admitted message (a token, budget) takes it
    /// here, and gives it back in [`overruled`](MessagePredicate::overruled) or
    /// [`observe`](MessagePredicate::observe).
    fn admit(&self, offer: &Offer<'_>) -> bool;

    /// A message the group queued has been handled or dead-lettered.
    ///
    /// The runtime calls this once per queued message, on the worker that finished it (or
    /// wherever it was dead-lettered), with the time from enqueue to completion. It is the
    /// input of the feedback loops ([`ResponseTime`](crate::admission::ResponseTime), [`ClassResponseTime`](crate::admission::ClassResponseTime), adaptive
    /// [`CostBudget`](crate::admission::CostBudget)). It may take a short lock, but should stay cheap: it runs once per
    /// message. Default: nothing.
    ///
    /// The runtime makes this call only for predicates whose [`MessagePredicate::observes`]
    /// is `true`; response times are measured on a 1 ms clock.
    fn observe(&self, done: &Completion<'_>) {
        let _ = done;
    }

    /// Whether this predicate wants [`MessagePredicate::observe`] calls. A group asks once,
    /// when it is built; only then do its messages carry the enqueue time and cost the
    /// reports need, so predicates that do not learn cost nothing extra. Default: `false`.
    fn observes(&self) -> bool {
        false
    }

    /// A combinator's final decision on `offer` was `admitted`, and that is not what this
    /// predicate answered, or it was not asked (short-circuit) and the message was admitted.
    ///
    /// Predicates that reserve on admission bring their reservation in line with `admitted`:
    /// give it back when `false`, take it when `true` if they account for everything queued
    /// (as [`CostBudget`](crate::admission::CostBudget) does). Never called for a decision the predicate itself made at the
    /// top level. Default: nothing.
    fn overruled(&self, offer: &Offer<'_>, admitted: bool) {
        let _ = (offer, admitted);
    }
}

impl<F> MessagePredicate for F
where
    F: Fn(&Offer<'_>) -> bool + Send + Sync + 'static,
{
    fn admit(&self, offer: &Offer<'_>) -> bool {
        self(offer)
    }
}

impl<P: MessagePredicate + ?Sized> MessagePredicate for std::sync::Arc<P> {
    fn admit(&self, offer: &Offer<'_>) -> bool {
        (**self).admit(offer)
    }

    fn observe(&self, done: &Completion<'_>) {
        (**self).observe(done)
    }

    fn observes(&self) -> bool {
        (**self).observes()
    }

    fn overruled(&self, offer: &Offer<'_>, admitted: bool) {
        (**self).overruled(offer, admitted)
    }
}

#[cfg(all(test, not(loom)))]
pub(crate) mod test_util {
    use super::*;

    /// Counts with `queued` messages waiting.
    pub(crate) fn queued(queued: u64) -> MessageCounts {
        MessageCounts {
            posted: queued,
            ..MessageCounts::default()
        }
    }

    pub(crate) fn offer(principal: Option<&Principal>, cost: u64, queued_now: u64) -> Offer<'_> {
        Offer::detached::<u32>(principal, cost, queued(queued_now))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::test_util::*;
    use super::*;
    use crate::admission::QueueLength;

    #[test]
    fn closures_are_predicates() {
        let p = |o: &Offer<'_>| o.cost() < 5;
        assert!(p.admit(&offer(None, 4, 0)));
        assert!(!p.admit(&offer(None, 5, 0)));
    }

    #[test]
    fn offer_estimates_through_the_principal() {
        let none = offer(None, 7, 0);
        assert_eq!(none.estimated_cost(), 7);
        assert_eq!(none.utility(), 1.0);
        assert_eq!((none.priority(), none.class()), (0, 0));
        let p = Principal::builder(1)
            .priority(4)
            .class(2)
            .utility(3.0)
            .build()
            .expect("a valid principal");
        let some = offer(Some(&p), 7, 0);
        assert_eq!(some.utility(), 3.0);
        assert_eq!((some.priority(), some.class()), (4, 2));
        assert!(some.message_type().is::<u32>());
    }

    #[test]
    fn arc_forwards() {
        let shared = std::sync::Arc::new(QueueLength::max(1));
        assert!(shared.admit(&offer(None, 1, 0)));
        assert!(!shared.admit(&offer(None, 1, 1)));
    }
}
