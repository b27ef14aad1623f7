//! The queue-length threshold.

use super::{MessagePredicate, Offer};

/// Rejects messages while the group has `max` or more messages waiting: the simplest
/// predicate of the Whirlwind paper (section III-D) and SEDA's thresholding enqueue predicate.
///
/// ```
/// use whirl::admission::QueueLength;
/// use whirl::Runtime;
///
/// let rt = Runtime::builder().threads(1).build();
/// let _web = rt.group("web").threads(1).predicate(QueueLength::max(10_000)).build().expect("build group");
/// ```
#[derive(Clone, Copy, Debug)]
pub struct QueueLength {
    max: u64,
}

impl QueueLength {
    /// Admit while fewer than `max` messages are queued in the group.
    pub fn max(max: u64) -> Self {
        QueueLength { max }
    }
}

impl MessagePredicate for QueueLength {
    fn admit(&self, offer: &Offer<'_>) -> bool {
        offer.queued() < self.max
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
}
