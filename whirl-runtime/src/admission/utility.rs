//! Utility per cost: as the group fills, reject the messages worth least per unit of cost.

use super::{MessagePredicate, Offer};

/// Rejects the lowest utility-per-cost messages first as the group's queue fills: the
/// Whirlwind paper's utility predicate (section III-D).
///
/// A message's ratio is [`Offer::utility`] / [`Offer::estimated_cost`] (cost 0 counts as 1),
/// both from the principal's [estimation hooks](crate::admission::Estimate). Below `start` (default half)
/// of `capacity` queued messages everything is admitted; from there the ratio required rises
/// linearly from `lowest` to `highest`; at `capacity` everything is rejected.
///
/// ```
/// use whirl::control::MessageCounts;
/// use whirl::admission::{MessagePredicate, Offer, UtilityPerCost};
/// use whirl::Principal;
///
/// let p = UtilityPerCost::new(100, 0.5, 2.0); // start shedding at 50 queued
/// let gold = Principal::builder(1).utility(4.0).build().expect("a valid principal");
/// let free = Principal::builder(2).utility(0.1).build().expect("a valid principal");
/// let mut counts = MessageCounts::default();
/// counts.posted = 75; // 75 queued: required ratio 1.25
/// let offer = |who, cost| Offer::detached::<()>(Some(who), cost, counts);
/// assert!(p.admit(&offer(&gold, 2)));   // 4 / 2 = 2
/// assert!(!p.admit(&offer(&gold, 4)));  // 4 / 4 = 1
/// assert!(!p.admit(&offer(&free, 1)));  // 0.1
/// ```
#[derive(Clone, Copy, Debug)]
pub struct UtilityPerCost {
    capacity: u64,
    start: f64,
    lowest: f64,
    highest: f64,
}

impl UtilityPerCost {
    /// Sheds between half of `capacity` and `capacity` queued messages, requiring a ratio
    /// from `lowest` up to `highest`.
    pub fn new(capacity: u64, lowest: f64, highest: f64) -> Self {
        UtilityPerCost {
            capacity,
            start: 0.5,
            lowest,
            highest: highest.max(lowest),
        }
    }

    /// The fraction of `capacity` (0 to 1) at which shedding starts.
    pub fn start_at(mut self, fraction: f64) -> Self {
        self.start = if fraction.is_finite() {
            fraction.clamp(0.0, 1.0)
        } else {
            0.5
        };
        self
    }

    /// The ratio required with `queued` messages waiting (infinite at capacity).
    pub fn required_ratio(&self, queued: u64) -> f64 {
        let capacity = self.capacity as f64;
        let from = self.start * capacity;
        let queued = queued as f64;
        if queued >= capacity {
            f64::INFINITY
        } else if queued < from {
            f64::NEG_INFINITY
        } else {
            let fill = (queued - from) / (capacity - from).max(1.0);
            self.lowest + (self.highest - self.lowest) * fill
        }
    }
}

impl MessagePredicate for UtilityPerCost {
    fn admit(&self, offer: &Offer<'_>) -> bool {
        let required = self.required_ratio(offer.queued());
        if required == f64::NEG_INFINITY {
            return true;
        }
        let ratio = offer.utility() / offer.estimated_cost().max(1) as f64;
        ratio >= required
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::test_util::offer;
    use super::*;
    use crate::principal::Principal;

    #[test]
    fn sheds_lowest_ratio_first() {
        let p = UtilityPerCost::new(100, 1.0, 3.0);
        let hi = Principal::builder(1)
            .utility(2.5)
            .build()
            .expect("a valid principal");
        let lo = Principal::builder(2)
            .utility(1.5)
            .build()
            .expect("a valid principal");
        // Below the start: everything, even worthless messages.
        let zero = Principal::builder(3)
            .utility(0.0)
            .build()
            .expect("a valid principal");
        assert!(p.admit(&offer(Some(&zero), 1, 49)));
        // At the start the lowest ratio required is 1.0.
        assert!(p.admit(&offer(Some(&lo), 1, 50)));
        assert!(!p.admit(&offer(Some(&zero), 1, 50)));
        // Required 2.0 at 75: lo goes first, hi stays.
        assert!(!p.admit(&offer(Some(&lo), 1, 75)));
        assert!(p.admit(&offer(Some(&hi), 1, 75)));
        // Cost halves the ratio.
        assert!(!p.admit(&offer(Some(&hi), 2, 75)));
        // At capacity nothing.
        let huge = Principal::builder(4)
            .utility(1e9)
            .build()
            .expect("a valid principal");
        assert!(!p.admit(&offer(Some(&huge), 1, 100)));
        // No principal: utility 1.
        assert!(p.admit(&offer(None, 0, 50)));
        assert!(!p.admit(&offer(None, 0, 51)));
    }

    #[test]
    fn start_at_moves_the_knee() {
        let p = UtilityPerCost::new(10, 1.0, 1.0).start_at(0.0);
        assert_eq!(p.required_ratio(0), 1.0);
        let p = p.start_at(f64::NAN);
        assert_eq!(p.required_ratio(4), f64::NEG_INFINITY);
        assert_eq!(p.required_ratio(10), f64::INFINITY);
    }
}
