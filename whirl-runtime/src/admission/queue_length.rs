//! The queue-length threshold.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

use super::{MessagePredicate, Offer};

/// Rejects messages while the group has `max` or more messages waiting: the simplest
/// predicate of the Whirlwind paper (section III-D) and SEDA's thresholding enqueue predicate.
///
/// ```
/// use whirl::admission::QueueLength;
/// use whirl::Runtime;
///
/// let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
/// let _web = rt.group("web").threads(1).predicate(QueueLength::max(10_000)).build().expect("build group");
/// ```
///
/// The threshold can change while the group runs ([`QueueLength::set_max`], through an
/// `Arc<QueueLength>` the program keeps): a configuration reload does this. `admit` reads it
/// with one relaxed atomic load, the cost of reading a plain field.
#[derive(Debug)]
pub struct QueueLength {
    max: AtomicU64,
}

impl QueueLength {
    /// Admit while fewer than `max` messages are queued in the group.
    pub fn max(max: u64) -> Self {
        QueueLength {
            max: AtomicU64::new(max),
        }
    }

    /// The threshold now.
    pub fn limit(&self) -> u64 {
        self.max.load(Relaxed)
    }

    /// Changes the threshold; posts that read it afterwards use the new one.
    pub fn set_max(&self, max: u64) {
        self.max.store(max, Relaxed);
    }
}

impl Clone for QueueLength {
    fn clone(&self) -> Self {
        QueueLength::max(self.limit())
    }
}

impl MessagePredicate for QueueLength {
    fn admit(&self, offer: &Offer<'_>) -> bool {
        offer.queued() < self.max.load(Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::test_util::offer;
    use super::*;

    #[test]
    fn admits_below_the_threshold_only() {
        let p = QueueLength::max(3);
        assert!(p.admit(&offer(None, 1, 0)));
        assert!(p.admit(&offer(None, 1, 2)));
        assert!(!p.admit(&offer(None, 1, 3)));
        assert!(!p.admit(&offer(None, 1, 100)));
        assert!(!QueueLength::max(0).admit(&offer(None, 1, 0)));
    }

    #[test]
    fn the_threshold_changes_live() {
        let p = QueueLength::max(3);
        assert!(p.admit(&offer(None, 1, 2)));
        p.set_max(2);
        assert_eq!(p.limit(), 2);
        assert!(!p.admit(&offer(None, 1, 2)));
        p.set_max(10);
        assert!(p.admit(&offer(None, 1, 9)));
        assert_eq!(p.clone().limit(), 10);
    }
}
