//! `and`, `or` and `not` over predicates.

use super::{Completion, MessagePredicate, Offer};

/// Combinators on predicates. Every predicate (closures included) has them.
///
/// The combined predicate forwards [`observe`](MessagePredicate::observe) to every part and
/// keeps the parts' reservations right with [`overruled`](MessagePredicate::overruled): after
/// the combination decides, each part holds a reservation if and only if the message was
/// admitted. Evaluation short-circuits left to right.
///
/// ```
/// use whirl::control::MessageCounts;
/// use whirl::admission::{MessagePredicate, Offer, PredicateExt, QueueLength, TokenBucket};
///
/// // Under 100 queued, and at most 1000 per second; or anything cheap.
/// let p = QueueLength::max(100)
///     .and(TokenBucket::new(1000.0, 50))
///     .or(|o: &Offer<'_>| o.cost() == 0);
/// let mut counts = MessageCounts::default();
/// counts.posted = 200;
/// assert!(!p.admit(&Offer::detached::<()>(None, 1, counts)));
/// assert!(p.admit(&Offer::detached::<()>(None, 0, counts)));
/// ```
pub trait PredicateExt: MessagePredicate + Sized {
    /// Admits when both admit (`other` is asked only if `self` admits).
    fn and<Q: MessagePredicate>(self, other: Q) -> And<Self, Q> {
        And(self, other)
    }

    /// Admits when either admits (`other` is asked only if `self` rejects).
    fn or<Q: MessagePredicate>(self, other: Q) -> Or<Self, Q> {
        Or(self, other)
    }

    /// Admits what `self` rejects and rejects what it admits.
    fn not(self) -> Not<Self> {
        Not(self)
    }
}

impl<P: MessagePredicate> PredicateExt for P {}

/// Both predicates: see [`PredicateExt::and`].
#[derive(Clone, Debug)]
pub struct And<A, B>(pub A, pub B);

/// Either predicate: see [`PredicateExt::or`].
#[derive(Clone, Debug)]
pub struct Or<A, B>(pub A, pub B);

/// The negation of a predicate: see [`PredicateExt::not`].
#[derive(Clone, Debug)]
pub struct Not<A>(pub A);

impl<A: MessagePredicate, B: MessagePredicate> MessagePredicate for And<A, B> {
    fn observes(&self) -> bool {
        self.0.observes() || self.1.observes()
    }

    #[inline]
    fn admit(&self, offer: &Offer<'_>) -> bool {
        if !self.0.admit(offer) {
            return false;
        }
        if self.1.admit(offer) {
            return true;
        }
        self.0.overruled(offer, false);
        false
    }

    fn observe(&self, done: &Completion<'_>) {
        self.0.observe(done);
        self.1.observe(done);
    }

    fn overruled(&self, offer: &Offer<'_>, admitted: bool) {
        self.0.overruled(offer, admitted);
        self.1.overruled(offer, admitted);
    }
}

impl<A: MessagePredicate, B: MessagePredicate> MessagePredicate for Or<A, B> {
    fn observes(&self) -> bool {
        self.0.observes() || self.1.observes()
    }

    #[inline]
    fn admit(&self, offer: &Offer<'_>) -> bool {
        if self.0.admit(offer) {
            self.1.overruled(offer, true);
            return true;
        }
        if self.1.admit(offer) {
            self.0.overruled(offer, true);
            return true;
        }
        false
    }

    fn observe(&self, done: &Completion<'_>) {
        self.0.observe(done);
        self.1.observe(done);
    }

    fn overruled(&self, offer: &Offer<'_>, admitted: bool) {
        self.0.overruled(offer, admitted);
        self.1.overruled(offer, admitted);
    }
}

impl<A: MessagePredicate> MessagePredicate for Not<A> {
    fn observes(&self) -> bool {
        self.0.observes()
    }

    #[inline]
    fn admit(&self, offer: &Offer<'_>) -> bool {
        let admitted = !self.0.admit(offer);
        self.0.overruled(offer, admitted);
        admitted
    }

    fn observe(&self, done: &Completion<'_>) {
        self.0.observe(done);
    }

    fn overruled(&self, offer: &Offer<'_>, admitted: bool) {
        self.0.overruled(offer, admitted);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::time::Duration;

    use super::super::test_util::offer;
    use super::super::{CostBudget, QueueLength, TokenBucket};
    use super::*;
    use crate::time::ManualClock;

    fn yes(_: &Offer<'_>) -> bool {
        true
    }

    fn no(_: &Offer<'_>) -> bool {
        false
    }

    #[test]
    fn truth_tables() {
        let o = offer(None, 1, 0);
        assert!(yes.and(yes).admit(&o));
        assert!(!yes.and(no).admit(&o));
        assert!(!no.and(yes).admit(&o));
        assert!(yes.or(no).admit(&o));
        assert!(no.or(yes).admit(&o));
        assert!(!no.or(no).admit(&o));
        assert!(no.not().admit(&o));
        assert!(!yes.not().admit(&o));
        assert!(QueueLength::max(5).and(no.not()).admit(&o));
    }

    #[test]
    fn and_returns_the_token_when_the_second_rejects() {
        let bucket = std::sync::Arc::new(TokenBucket::with_clock(1.0, 1, ManualClock::new()));
        let p = std::sync::Arc::clone(&bucket).and(no);
        let o = offer(None, 1, 0);
        assert!(!p.admit(&o));
        // The token came back: the bucket alone still admits once.
        assert!(bucket.admit(&o));
        assert!(!bucket.admit(&o));
    }

    #[test]
    fn reservations_match_the_final_decision() {
        let budget = std::sync::Arc::new(CostBudget::new(100));
        let shared = || std::sync::Arc::clone(&budget);
        let o = offer(None, 10, 0);
        // `or` with the budget not asked: the admitted message is still accounted for.
        assert!(yes.or(shared()).admit(&o));
        assert_eq!(budget.outstanding(), 10);
        // Budget rejected by `not`... it admitted, so its reservation goes back.
        assert!(!shared().not().admit(&o));
        assert_eq!(budget.outstanding(), 10);
        // `not` admitting what the budget rejects: reserved anyway.
        budget.set_budget(10);
        assert!(shared().not().admit(&o));
        assert_eq!(budget.outstanding(), 20);
        // Nested: and(or(no, budget), no) -> rejected, nothing held.
        budget.set_budget(1000);
        assert!(!no.or(shared()).and(no).admit(&o));
        assert_eq!(budget.outstanding(), 20);
        // Observations reach every part.
        let p = yes.and(shared());
        p.observe(&Completion::handled(None, 20, Duration::from_millis(1)));
        assert_eq!(budget.outstanding(), 0);
    }
}
