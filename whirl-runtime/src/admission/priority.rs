//! Per-priority queue-length thresholds.

use super::{MessagePredicate, Offer};

/// A queue-length threshold per principal [priority](crate::Principal::priority): as the
/// group's queue grows, lower priorities are turned away first and higher ones are admitted
/// longer. Messages to processes without a principal count as priority 0.
///
/// ```
/// use whirl::control::MessageCounts;
/// use whirl::admission::{MessagePredicate, Offer, PriorityThresholds};
/// use whirl::Principal;
///
/// // Priority 0 up to 100 queued, 1 and above up to 1000.
/// let p = PriorityThresholds::new(100).at_least(1, 1000);
/// let mut counts = MessageCounts::default();
/// counts.posted = 500;
/// let low = Principal::builder(1).build();
/// let high = Principal::builder(2).priority(5).build();
/// assert!(!p.admit(&Offer::detached::<()>(Some(&low), 1, counts)));
/// assert!(p.admit(&Offer::detached::<()>(Some(&high), 1, counts)));
/// ```
#[derive(Clone)]
pub struct PriorityThresholds {
    max: Box<[u64; 256]>,
}

impl PriorityThresholds {
    /// Every priority admitted while fewer than `max` messages are queued.
    pub fn new(max: u64) -> Self {
        PriorityThresholds {
            max: Box::new([max; 256]),
        }
    }

    /// Thresholds growing with priority: `base + step * priority` (saturating).
    pub fn linear(base: u64, step: u64) -> Self {
        let mut p = PriorityThresholds::new(base);
        for (priority, max) in p.max.iter_mut().enumerate() {
            *max = base.saturating_add(step.saturating_mul(priority as u64));
        }
        p
    }

    /// Priorities `priority` and above admitted while fewer than `max` messages are queued
    /// (later calls override earlier ones; call in increasing priority).
    pub fn at_least(mut self, priority: u8, max: u64) -> Self {
        for slot in &mut self.max[usize::from(priority)..] {
            *slot = max;
        }
        self
    }

    /// The threshold of `priority`.
    pub fn threshold(&self, priority: u8) -> u64 {
        self.max[usize::from(priority)]
    }
}

impl MessagePredicate for PriorityThresholds {
    fn admit(&self, offer: &Offer<'_>) -> bool {
        offer.queued() < self.threshold(offer.priority())
    }
}

impl std::fmt::Debug for PriorityThresholds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PriorityThresholds")
            .field("lowest", &self.max[0])
            .field("highest", &self.max[255])
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::test_util::offer;
    use super::*;
    use crate::principal::Principal;

    #[test]
    fn higher_priorities_are_admitted_longer() {
        let p = PriorityThresholds::new(10)
            .at_least(2, 20)
            .at_least(200, 30);
        let p0 = Principal::builder(0).build();
        let p1 = Principal::builder(1).priority(1).build();
        let p2 = Principal::builder(2).priority(2).build();
        let p255 = Principal::builder(3).priority(255).build();
        assert!(p.admit(&offer(Some(&p0), 1, 9)));
        assert!(!p.admit(&offer(Some(&p0), 1, 10)));
        assert!(!p.admit(&offer(Some(&p1), 1, 10)));
        assert!(!p.admit(&offer(None, 1, 10)));
        assert!(p.admit(&offer(Some(&p2), 1, 19)));
        assert!(!p.admit(&offer(Some(&p2), 1, 20)));
        assert!(p.admit(&offer(Some(&p255), 1, 29)));
        assert!(!p.admit(&offer(Some(&p255), 1, 30)));
    }

    #[test]
    fn linear_thresholds() {
        let p = PriorityThresholds::linear(100, 50);
        assert_eq!(p.threshold(0), 100);
        assert_eq!(p.threshold(3), 250);
        let p = PriorityThresholds::linear(u64::MAX - 1, u64::MAX);
        assert_eq!(p.threshold(255), u64::MAX);
    }
}
