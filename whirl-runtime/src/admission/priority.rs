//! Per-priority queue-length thresholds.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

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
/// let low = Principal::builder(1).build().expect("a valid principal");
/// let high = Principal::builder(2).priority(5).build().expect("a valid principal");
/// assert!(!p.admit(&Offer::detached::<()>(Some(&low), 1, counts)));
/// assert!(p.admit(&Offer::detached::<()>(Some(&high), 1, counts)));
/// ```
///
/// The thresholds can change while the group runs ([`PriorityThresholds::set_thresholds`],
/// through an `Arc<PriorityThresholds>` the program keeps): a configuration reload does this.
/// `admit` reads its priority's threshold with one relaxed atomic load.
///
/// A controller can also move every threshold at once ([`PriorityThresholds::set_scale`]):
/// [`Overload`](super::Overload) does, to fit the queue to a response-time target. The scale
/// applies to the lowest priority's threshold, and every other threshold moves by the same
/// number of places, so the gaps between priorities are kept: cutting the lowest one to a
/// single place leaves the others nearly whole, and lower priorities are turned away first.
pub struct PriorityThresholds {
    max: Box<[AtomicU64; 256]>,
    /// The factor applied to the lowest priority's threshold (every other one moves by as many
    /// places), as `f64` bits (1.0: the thresholds as set).
    scale: AtomicU64,
}

impl PriorityThresholds {
    /// Every priority admitted while fewer than `max` messages are queued.
    pub fn new(max: u64) -> Self {
        PriorityThresholds {
            max: Box::new(std::array::from_fn(|_| AtomicU64::new(max))),
            scale: AtomicU64::new(1f64.to_bits()),
        }
    }

    /// Thresholds growing with priority: `base + step * priority` (saturating).
    pub fn linear(base: u64, step: u64) -> Self {
        let p = PriorityThresholds::new(base);
        for (priority, max) in p.max.iter().enumerate() {
            max.store(
                base.saturating_add(step.saturating_mul(priority as u64)),
                Relaxed,
            );
        }
        p
    }

    /// Priorities `priority` and above admitted while fewer than `max` messages are queued
    /// (later calls override earlier ones; call in increasing priority).
    pub fn at_least(self, priority: u8, max: u64) -> Self {
        for slot in &self.max[usize::from(priority)..] {
            slot.store(max, Relaxed);
        }
        self
    }

    /// The threshold of `priority`, as set (before [scaling](PriorityThresholds::set_scale)).
    pub fn threshold(&self, priority: u8) -> u64 {
        self.max[usize::from(priority)].load(Relaxed)
    }

    /// The factor every threshold is multiplied by (1.0 unless
    /// [`set_scale`](PriorityThresholds::set_scale) changed it).
    pub fn scale(&self) -> f64 {
        f64::from_bits(self.scale.load(Relaxed))
    }

    /// Moves the thresholds: priority 0's becomes `threshold(0) × scale`, and every other
    /// one moves by the same number of places, `threshold(0) × (scale − 1)` (`scale`: a
    /// positive, finite factor; anything else is taken as 1.0). A moved threshold is at least
    /// 1 where the threshold is: a priority that is admitted at all is admitted into an empty
    /// queue.
    pub fn set_scale(&self, scale: f64) {
        let scale = if scale.is_finite() && scale > 0.0 {
            scale
        } else {
            1.0
        };
        self.scale.store(scale.to_bits(), Relaxed);
    }

    /// The threshold of `priority` as `admit` applies it: moved by
    /// [`set_scale`](PriorityThresholds::set_scale).
    pub fn effective_threshold(&self, priority: u8) -> u64 {
        let max = self.threshold(priority);
        let scale = self.scale();
        if scale == 1.0 || max == 0 {
            return max;
        }
        let shift = self.threshold(0) as f64 * (scale - 1.0);
        // `as` saturates: a huge threshold moved up a long way stays u64::MAX, and one moved
        // below zero is 0 before the floor of 1.
        ((max as f64 + shift) as u64).max(1)
    }

    /// Takes `other`'s thresholds, priority by priority. Each threshold changes atomically; a
    /// post racing with the change may see the new threshold of one priority and the old one
    /// of another.
    pub fn set_thresholds(&self, other: &PriorityThresholds) {
        for (slot, new) in self.max.iter().zip(other.max.iter()) {
            slot.store(new.load(Relaxed), Relaxed);
        }
    }
}

impl Clone for PriorityThresholds {
    fn clone(&self) -> Self {
        let copy = PriorityThresholds::new(0);
        copy.set_thresholds(self);
        copy.set_scale(self.scale());
        copy
    }
}

impl MessagePredicate for PriorityThresholds {
    fn admit(&self, offer: &Offer<'_>) -> bool {
        offer.queued() < self.effective_threshold(offer.priority())
    }
}

impl std::fmt::Debug for PriorityThresholds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PriorityThresholds")
            .field("lowest", &self.threshold(0))
            .field("highest", &self.threshold(255))
            .field("scale", &self.scale())
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
        let p0 = Principal::builder(0).build().expect("a valid principal");
        let p1 = Principal::builder(1)
            .priority(1)
            .build()
            .expect("a valid principal");
        let p2 = Principal::builder(2)
            .priority(2)
            .build()
            .expect("a valid principal");
        let p255 = Principal::builder(3)
            .priority(255)
            .build()
            .expect("a valid principal");
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

    #[test]
    fn thresholds_change_live() {
        let p = PriorityThresholds::new(10).at_least(2, 20);
        let p2 = Principal::builder(2)
            .priority(2)
            .build()
            .expect("a valid principal");
        assert!(p.admit(&offer(Some(&p2), 1, 15)));
        p.set_thresholds(&PriorityThresholds::new(5).at_least(2, 8));
        assert_eq!(
            (p.threshold(0), p.threshold(2), p.threshold(255)),
            (5, 8, 8)
        );
        assert!(!p.admit(&offer(Some(&p2), 1, 15)));
        assert!(!p.admit(&offer(None, 1, 5)));
        assert_eq!(p.clone().threshold(2), 8);
    }

    #[test]
    fn scaling_keeps_the_gaps_and_never_closes_an_empty_queue() {
        let p = PriorityThresholds::new(16).at_least(2, 1024);
        let p2 = Principal::builder(2)
            .priority(2)
            .build()
            .expect("a valid principal");
        p.set_scale(0.25);
        // Priority 0 loses 12 of its 16 places; priority 2 loses the same 12 of its 1,024.
        assert_eq!(
            (p.effective_threshold(0), p.effective_threshold(2)),
            (4, 1012)
        );
        assert!(p.admit(&offer(None, 1, 3)));
        assert!(!p.admit(&offer(None, 1, 4)));
        assert!(p.admit(&offer(Some(&p2), 1, 1011)));
        assert!(!p.admit(&offer(Some(&p2), 1, 1012)));
        assert_eq!(p.threshold(0), 16, "the thresholds as set are kept");
        p.set_scale(0.001);
        assert_eq!(p.effective_threshold(0), 1);
        assert!(p.admit(&offer(None, 1, 0)));
        p.set_scale(f64::NAN);
        assert_eq!(p.scale(), 1.0);
        assert_eq!(PriorityThresholds::new(0).effective_threshold(0), 0);
        p.set_scale(1e30);
        assert_eq!(p.effective_threshold(2), u64::MAX);
        assert_eq!(p.clone().scale(), 1e30);
    }
}
