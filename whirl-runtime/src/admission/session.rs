//! Session-consistent shedding: a principal is admitted whole or shed whole.

use std::collections::HashMap;
use std::time::Duration;

use parking_lot::Mutex;

use super::{MessagePredicate, Offer};
use crate::time::Clock;
use crate::time::CoarseClock;

/// Decisions remembered at most; beyond it, expired ones are dropped first, then the oldest.
const DEFAULT_MAX_SESSIONS: usize = 100_000;

#[derive(Clone, Copy)]
struct Decision {
    admitted: bool,
    until: u64,
}

/// Makes another predicate's decisions stick to each principal for a while, so that a
/// session (a page and its images, a conversation) is served whole or refused whole: the
/// Whirlwind paper's rule that "a message predicate that decides to reject messages should
/// either reject all requests from a session or none at all".
///
/// * A principal the inner predicate admitted keeps being admitted, without asking it, until
///   `hold` has passed since its last message, unless the group's queue exceeds `ceiling`
///   (a hard limit, so sticky admissions cannot grow the queue without bound).
/// * A principal the inner predicate refused is refused for `hold`, then asked about again.
/// * Messages to processes without a principal go straight to the inner predicate.
///
/// The inner predicate should decide from the group's state and the offer alone (thresholds,
/// [`PriorityThresholds`](super::PriorityThresholds)): one that reserves capacity per
/// admitted message is bypassed for sticky admissions.
///
/// ```
/// use std::time::Duration;
/// use whirl::time::ManualClock;
/// use whirl::control::MessageCounts;
/// use whirl::admission::{MessagePredicate, Offer, PriorityThresholds, SessionConsistent};
/// use whirl::Principal;
///
/// let clock = ManualClock::new();
/// let p = SessionConsistent::with_clock(PriorityThresholds::new(10), Duration::from_secs(2), clock.clone())
///     .ceiling(100);
/// let (early, late) = (Principal::builder(1).build().expect("a valid principal"), Principal::builder(2).build().expect("a valid principal"));
/// let queued = |n| { let mut c = MessageCounts::default(); c.posted = n; c };
///
/// assert!(p.admit(&Offer::detached::<()>(Some(&early), 1, queued(5))));
/// // The queue passes the threshold: the session already served goes on being served...
/// assert!(p.admit(&Offer::detached::<()>(Some(&early), 1, queued(50))));
/// // ...a new one is refused, and stays refused while the decision holds.
/// assert!(!p.admit(&Offer::detached::<()>(Some(&late), 1, queued(50))));
/// assert!(!p.admit(&Offer::detached::<()>(Some(&late), 1, queued(0))));
/// clock.advance(Duration::from_secs(3));
/// assert!(p.admit(&Offer::detached::<()>(Some(&late), 1, queued(0))));
/// ```
pub struct SessionConsistent<P, C: Clock = CoarseClock> {
    inner: P,
    hold: u64,
    ceiling: u64,
    max_sessions: usize,
    clock: C,
    /// The clock's reading at construction ([`Clock::nanos`]).
    origin: u64,
    decisions: Mutex<Decisions>,
}

/// The remembered decisions, and when to next drop the expired ones.
struct Decisions {
    map: HashMap<u64, Decision>,
    /// The size at which expired decisions are next swept (twice the size after a sweep, at
    /// least [`SWEEP_MIN`]): sweeping costs amortized O(1) per new session.
    sweep_at: usize,
}

/// The smallest table that is swept.
const SWEEP_MIN: usize = 1024;

impl<P: MessagePredicate> SessionConsistent<P, CoarseClock> {
    /// Sticky decisions of `inner`, held for `hold`, on the shared coarse clock.
    pub fn new(inner: P, hold: Duration) -> Self {
        SessionConsistent::with_clock(inner, hold, CoarseClock::shared())
    }
}

impl<P: MessagePredicate, C: Clock> SessionConsistent<P, C> {
    /// The same on `clock`.
    pub fn with_clock(inner: P, hold: Duration, clock: C) -> Self {
        let origin = clock.nanos();
        SessionConsistent {
            inner,
            hold: u64::try_from(hold.as_nanos()).unwrap_or(u64::MAX),
            ceiling: u64::MAX,
            max_sessions: DEFAULT_MAX_SESSIONS,
            clock,
            origin,
            decisions: Mutex::new(Decisions {
                map: HashMap::new(),
                sweep_at: SWEEP_MIN,
            }),
        }
    }

    /// The queue length above which even admitted sessions are refused (default: none).
    pub fn ceiling(mut self, queued: u64) -> Self {
        self.ceiling = queued;
        self
    }

    /// How many sessions' decisions are remembered (default 100,000).
    pub fn max_sessions(mut self, n: usize) -> Self {
        self.max_sessions = n.max(1);
        self
    }

    /// Sessions currently remembered.
    pub fn remembered(&self) -> usize {
        self.decisions.lock().map.len()
    }

    /// Drops expired decisions once the table has doubled since the last sweep, and gives
    /// the memory of a table that shrank back (a reconnect storm's sessions are forgotten
    /// once their hold has passed).
    fn sweep(table: &mut Decisions, now: u64) {
        if table.map.len() < table.sweep_at {
            return;
        }
        table.map.retain(|_, d| d.until > now);
        if table.map.capacity() > 4 * table.map.len().max(SWEEP_MIN) {
            table.map.shrink_to(2 * table.map.len());
        }
        table.sweep_at = (2 * table.map.len()).max(SWEEP_MIN);
    }

    fn make_room(&self, decisions: &mut HashMap<u64, Decision>, now: u64) {
        if decisions.len() < self.max_sessions {
            return;
        }
        decisions.retain(|_, d| d.until > now);
        while decisions.len() >= self.max_sessions {
            let oldest = decisions
                .iter()
                .min_by_key(|(_, d)| d.until)
                .map(|(id, _)| *id);
            match oldest {
                Some(id) => decisions.remove(&id),
                None => break,
            };
        }
    }
}

impl<P: MessagePredicate, C: Clock> MessagePredicate for SessionConsistent<P, C> {
    fn admit(&self, offer: &Offer<'_>) -> bool {
        let Some(principal) = offer.principal() else {
            return self.inner.admit(offer);
        };
        let now = self.clock.nanos().saturating_sub(self.origin);
        let until = now.saturating_add(self.hold);
        let mut table = self.decisions.lock();
        if let Some(d) = table.map.get_mut(&principal.id()) {
            if d.until > now {
                if !d.admitted {
                    return false;
                }
                if offer.queued() < self.ceiling {
                    d.until = until;
                    return true;
                }
                // Over the ceiling: the session is shed after all, and stays shed.
                *d = Decision {
                    admitted: false,
                    until,
                };
                return false;
            }
        }
        let admitted = self.inner.admit(offer) && offer.queued() < self.ceiling;
        Self::sweep(&mut table, now);
        self.make_room(&mut table.map, now);
        table
            .map
            .insert(principal.id(), Decision { admitted, until });
        admitted
    }

    fn observe(&self, done: &super::Completion<'_>) {
        self.inner.observe(done);
    }

    fn observes(&self) -> bool {
        self.inner.observes()
    }
}

impl<P, C: Clock> std::fmt::Debug for SessionConsistent<P, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionConsistent")
            .field("hold_nanos", &self.hold)
            .field("ceiling", &self.ceiling)
            .field("remembered", &self.decisions.lock().map.len())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::admission::PriorityThresholds;
    use crate::control::MessageCounts;
    use crate::principal::Principal;
    use crate::time::ManualClock;

    fn queued(n: u64) -> MessageCounts {
        MessageCounts {
            posted: n,
            ..MessageCounts::default()
        }
    }

    #[test]
    fn the_ceiling_sheds_even_admitted_sessions_and_the_memory_is_bounded() {
        let clock = ManualClock::new();
        let p = SessionConsistent::with_clock(
            PriorityThresholds::new(10),
            Duration::from_secs(1),
            clock.clone(),
        )
        .ceiling(20)
        .max_sessions(3);
        let s = Principal::builder(1).build().expect("a valid principal");
        assert!(p.admit(&Offer::detached::<()>(Some(&s), 1, queued(0))));
        assert!(p.admit(&Offer::detached::<()>(Some(&s), 1, queued(15))));
        assert!(!p.admit(&Offer::detached::<()>(Some(&s), 1, queued(25))));
        assert!(!p.admit(&Offer::detached::<()>(Some(&s), 1, queued(0))));
        for id in 2..10 {
            let other = Principal::builder(id).build().expect("a valid principal");
            p.admit(&Offer::detached::<()>(Some(&other), 1, queued(0)));
            assert!(p.remembered() <= 3);
        }
    }

    #[test]
    fn expired_decisions_are_swept_as_new_sessions_come() {
        let clock = ManualClock::new();
        let p = SessionConsistent::with_clock(
            PriorityThresholds::new(10),
            Duration::from_secs(1),
            clock.clone(),
        );
        for id in 0..5000 {
            let s = Principal::builder(id).build().expect("a valid principal");
            p.admit(&Offer::detached::<()>(Some(&s), 1, queued(0)));
        }
        assert_eq!(p.remembered(), 5000, "nothing has expired yet");
        clock.advance(Duration::from_secs(2));
        // The table sweeps when it has doubled since the last sweep (at 4096 entries): at
        // 8192, leaving the 3192 new ones.
        for id in 5000..9000 {
            let s = Principal::builder(id).build().expect("a valid principal");
            p.admit(&Offer::detached::<()>(Some(&s), 1, queued(0)));
        }
        assert_eq!(p.remembered(), 4000);
    }

    #[test]
    fn higher_priorities_are_admitted_longer() {
        let p = SessionConsistent::with_clock(
            PriorityThresholds::new(10).at_least(2, 100),
            Duration::from_secs(1),
            ManualClock::new(),
        );
        let (guest, admin) = (
            Principal::builder(1).build().expect("a valid principal"),
            Principal::builder(2)
                .priority(2)
                .build()
                .expect("a valid principal"),
        );
        assert!(!p.admit(&Offer::detached::<()>(Some(&guest), 1, queued(50))));
        assert!(p.admit(&Offer::detached::<()>(Some(&admin), 1, queued(50))));
    }
}
