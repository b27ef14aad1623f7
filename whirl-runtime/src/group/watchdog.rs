//! The slow-turn watchdog (AppBackplane's slow-event warning): a turn that holds its worker
//! longer than its group's threshold is noticed, reported once, and counted.
//!
//! A handler that sleeps, waits on a lock or on blocking I/O, or simply computes for long,
//! keeps its worker from every other process of the group. Nothing in the turn can say so
//! cheaply — timing every message would cost two clock reads per message — so the watchdog
//! looks from outside. Each worker already publishes, as a turn begins, which process it runs
//! and since when (its slot's [`TurnProbe`](super::probe::TurnProbe)); the watchdog reads
//! every probe of the group and acts on each turn that has run longer than the threshold
//! ([`GroupBuilder::slow_turn_threshold`](crate::GroupBuilder::slow_turn_threshold), 100 ms
//! by default, `None` to turn it off):
//!
//! * one `tracing` warning per slow turn, with the process, the group, the message type and
//!   how long the turn had run when noticed (it may run on);
//! * the watchdog's count of reported turns (`slow_turns`), shown in [`GroupStats`](crate::control::GroupStats);
//! * the last 32 reported, with their process, message type and how long they had held their
//!   worker, in [`GroupStats::recent_slow_turns`](crate::control::GroupStats::recent_slow_turns);
//! * the number of workers in a slow turn now, `blocked_workers`, in the
//!   [`GroupSample`](crate::control::GroupSample) the concurrency controllers see (so
//!   [`AdaptiveConcurrency`](crate::control::AdaptiveConcurrency) can give a blocking group a
//!   thread) and in the group's statistics.
//!
//! The time is a turn's, not a message's: a turn of many messages that together exceed the
//! threshold holds the worker as long as one slow message does, and is reported with the type
//! of the message it was handling when noticed.
//!
//! # Cost
//!
//! Nothing on the message path: the post → schedule → handle path and the turn are exactly
//! what they were, since the probe was already written for shutdown reports. The watchdog reads
//! a group's probes every half threshold, but never more often than every 5 ms; a group whose
//! threshold is `None` is not looked at.
//!
//! # Once per slow turn
//!
//! A probe reading names its turn (process and start millisecond, see `probe.rs`). For each
//! worker slot the watchdog remembers the turn it saw last and whether it reported it; a turn
//! is reported the first time it is seen over the threshold, and not again. It is reported
//! only once two looks, a period apart, agree on it: a reading may be torn (a new process with
//! the previous turn's start, which after a long idle spell looks very slow), and such a
//! reading does not survive until the next look. This costs no delay for a turn the watchdog
//! saw while it was young: with a period of at most the threshold (any threshold of 5 ms or
//! more), some look falls within every turn's first threshold, and the turn is reported at the
//! first look after it crosses it. A turn first seen already slow (the group was just built,
//! or a threshold under 5 ms) is reported one period later.
//!
//! # Where it runs
//!
//! On the runtime's controller thread (`control_thread.rs`), which wakes for the watchdog of
//! every group that has a threshold as well as for the controllers of groups that have them,
//! rather than on a thread of its own. That thread already exists for this kind of work — a
//! few atomic loads per worker, now and then — and already knows the runtime's groups, wakes
//! at the earliest deadline among them, and stops at shutdown. Running the watchdog just before
//! the controllers also means a controller's sample always carries a fresh `blocked_workers`
//! without any hand-off between threads. The price is that a concurrency controller whose
//! `adjust` is slow delays the watchdog; the library's controllers decide in microseconds.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::pool::Slot;
use super::probe::Running;
use crate::control::{SlowTurn, RECENT_SLOW_TURNS};
use crate::lifecycle::quiet::Quiet;
use crate::lifecycle::{wall_clock, ProcessId};

/// Slow turns, printed to standard error when no `tracing` subscriber is installed.
static SLOW_TURNS: Quiet = Quiet::new("slow turns");

/// A group's slow-turn threshold unless its builder says otherwise.
pub(crate) const DEFAULT_SLOW_TURN_THRESHOLD: Duration = Duration::from_millis(100);

/// The watchdog never looks at a group more often than this.
const MIN_PERIOD: Duration = Duration::from_millis(5);
/// Nor less often than this, whatever the threshold (so the next look's time is always
/// representable).
const MAX_PERIOD: Duration = Duration::from_secs(3600);

/// A group's slow-turn watchdog. See the [module docs](self).
pub(crate) struct Watchdog {
    threshold: Option<Duration>,
    /// Only the controller thread looks; the lock is uncontended.
    memory: Mutex<Memory>,
    /// Workers in a slow turn at the last look.
    blocked: AtomicUsize,
    /// Slow turns reported so far (kept here, not with the message counters, whose layout the
    /// post path depends on).
    reported: AtomicU64,
    /// The last ones reported, oldest first.
    recent: Mutex<VecDeque<SlowTurn>>,
}

#[derive(Default)]
struct Memory {
    next_due: Option<Instant>,
    /// Indexed by worker slot.
    slots: Vec<Seen>,
}

/// What the watchdog saw in one slot at its last look.
#[derive(Clone, Copy, Default)]
struct Seen {
    turn: Option<(ProcessId, u32)>,
    reported: bool,
}

impl Watchdog {
    /// A watchdog reporting turns longer than `threshold`; `None` watches nothing.
    pub(crate) fn new(threshold: Option<Duration>) -> Self {
        Watchdog {
            threshold,
            memory: Mutex::new(Memory::default()),
            blocked: AtomicUsize::new(0),
            reported: AtomicU64::new(0),
            recent: Mutex::new(VecDeque::new()),
        }
    }

    /// The last slow turns reported, oldest first.
    pub(crate) fn recent(&self) -> Vec<SlowTurn> {
        self.recent.lock().iter().cloned().collect()
    }

    /// The group's threshold.
    pub(crate) fn threshold(&self) -> Option<Duration> {
        self.threshold
    }

    /// Slow turns reported so far.
    pub(crate) fn reported(&self) -> u64 {
        self.reported.load(Relaxed)
    }

    /// Workers in a slow turn at the last look.
    pub(crate) fn blocked(&self) -> usize {
        self.blocked.load(Relaxed)
    }

    /// If a look is due at `now`, reads the probes of the slots `slots` gives (the pool of the
    /// group named `group`, taken only when a look is due), warns of and counts the turns newly
    /// found slow. Returns when the next look is due; `None` when the group has no threshold.
    pub(crate) fn check(
        &self,
        now: Instant,
        slots: impl FnOnce() -> Vec<Arc<Slot>>,
        group: &str,
        mut on_slow: impl FnMut(ProcessId),
    ) -> Option<Instant> {
        let threshold = self.threshold?;
        let (slow, next) = {
            let mut memory = self.memory.lock();
            if let Some(due) = memory.next_due.filter(|&due| due > now) {
                return Some(due);
            }
            let next = now + period(threshold);
            memory.next_due = Some(next);
            let slots = slots();
            let readings = slots.iter().map(|slot| slot.probe.read());
            let (blocked, slow) = look(&mut memory.slots, readings, threshold);
            self.blocked.store(blocked, Relaxed);
            (slow, next)
        };
        for running in slow {
            tracing::warn!(
                process = %running.process,
                group = %group,
                message_type = running.message.unwrap_or("unknown"),
                duration_ms = millis(running.for_how_long),
                threshold_ms = millis(threshold),
                "slow turn: a handler held a worker longer than the group's threshold",
            );
            SLOW_TURNS.print(|| {
                format!(
                    "slow turn: process {} in group `{group}` held a worker {} ms handling {} (threshold {} ms)",
                    running.process,
                    millis(running.for_how_long),
                    running.message.unwrap_or("unknown"),
                    millis(threshold)
                )
            });
            {
                let mut recent = self.recent.lock();
                if recent.len() == RECENT_SLOW_TURNS {
                    recent.pop_front();
                }
                recent.push_back(SlowTurn {
                    process: running.process,
                    message_type: running.message,
                    held: running.for_how_long,
                    seen_at: wall_clock(),
                });
            }
            // After the warning: whoever reads the count finds the warning already given.
            self.reported.fetch_add(1, Relaxed);
            on_slow(running.process);
        }
        Some(next)
    }
}

/// How often a group with `threshold` is looked at.
fn period(threshold: Duration) -> Duration {
    (threshold / 2).clamp(MIN_PERIOD, MAX_PERIOD)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// One look: updates what is remembered of each slot from its reading; returns how many
/// workers are in a slow turn and the turns to report.
fn look(
    seen: &mut Vec<Seen>,
    readings: impl ExactSizeIterator<Item = Option<Running>>,
    threshold: Duration,
) -> (usize, Vec<Running>) {
    // Slots are only ever added to a pool.
    if seen.len() < readings.len() {
        seen.resize(readings.len(), Seen::default());
    }
    let mut blocked = 0;
    let mut slow = Vec::new();
    for (seen, reading) in seen.iter_mut().zip(readings) {
        let Some(running) = reading else {
            *seen = Seen::default();
            continue;
        };
        if seen.turn != Some(running.turn) {
            // A turn seen for the first time: acted on only if the next look agrees.
            *seen = Seen {
                turn: Some(running.turn),
                reported: false,
            };
            continue;
        }
        if running.for_how_long > threshold {
            blocked += 1;
            if !seen.reported {
                seen.reported = true;
                slow.push(running);
            }
        }
    }
    (blocked, slow)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const THRESHOLD: Duration = Duration::from_millis(50);

    fn running(process: u64, since: u32, ms: u64) -> Option<Running> {
        Some(Running {
            process: ProcessId(process),
            turn: (ProcessId(process), since),
            message: Some("Msg"),
            for_how_long: Duration::from_millis(ms),
        })
    }

    fn ids(slow: &[Running]) -> Vec<u64> {
        slow.iter().map(|r| r.process.as_u64()).collect()
    }

    #[test]
    fn a_slow_turn_is_reported_once_and_blocks_while_it_lasts() {
        let mut seen = Vec::new();
        let (blocked, slow) = look(&mut seen, [running(7, 1_000, 10)].into_iter(), THRESHOLD);
        assert_eq!((blocked, slow.len()), (0, 0));
        let (blocked, slow) = look(&mut seen, [running(7, 1_000, 51)].into_iter(), THRESHOLD);
        assert_eq!((blocked, ids(&slow)), (1, vec![7]));
        for ms in [80, 200, 5_000] {
            let (blocked, slow) = look(&mut seen, [running(7, 1_000, ms)].into_iter(), THRESHOLD);
            assert_eq!((blocked, slow.len()), (1, 0), "reported again at {ms} ms");
        }
        // The turn ends: nothing blocked.
        let (blocked, slow) = look(&mut seen, [None].into_iter(), THRESHOLD);
        assert_eq!((blocked, slow.len()), (0, 0));
    }

    #[test]
    fn the_threshold_itself_is_not_slow() {
        let mut seen = Vec::new();
        for _ in 0..3 {
            let (blocked, slow) = look(&mut seen, [running(1, 5, 50)].into_iter(), THRESHOLD);
            assert_eq!((blocked, slow.len()), (0, 0));
        }
    }

    #[test]
    fn the_next_slow_turn_of_the_same_process_is_reported_again() {
        let mut seen = Vec::new();
        let _ = look(&mut seen, [running(7, 1_000, 10)].into_iter(), THRESHOLD);
        let (_, slow) = look(&mut seen, [running(7, 1_000, 60)].into_iter(), THRESHOLD);
        assert_eq!(ids(&slow), vec![7]);
        // Between two looks the turn ended and the process began another on the same worker.
        let (blocked, slow) = look(&mut seen, [running(7, 1_070, 10)].into_iter(), THRESHOLD);
        assert_eq!((blocked, slow.len()), (0, 0));
        let (blocked, slow) = look(&mut seen, [running(7, 1_070, 90)].into_iter(), THRESHOLD);
        assert_eq!((blocked, ids(&slow)), (1, vec![7]));
    }

    #[test]
    fn a_turn_first_seen_already_slow_waits_for_a_second_look() {
        // A torn reading: the new process with the start of a turn long gone.
        let mut seen = Vec::new();
        let (blocked, slow) = look(&mut seen, [running(3, 10, 9_000)].into_iter(), THRESHOLD);
        assert_eq!((blocked, slow.len()), (0, 0));
        // The next look sees the turn as it is: young.
        let (blocked, slow) = look(&mut seen, [running(3, 9_010, 20)].into_iter(), THRESHOLD);
        assert_eq!((blocked, slow.len()), (0, 0));
        // A genuinely slow turn seen late is still reported, at the second look.
        let mut seen = Vec::new();
        let _ = look(&mut seen, [running(4, 10, 300)].into_iter(), THRESHOLD);
        let (blocked, slow) = look(&mut seen, [running(4, 10, 325)].into_iter(), THRESHOLD);
        assert_eq!((blocked, ids(&slow)), (1, vec![4]));
    }

    #[test]
    fn slots_are_watched_each_on_its_own() {
        let mut seen = Vec::new();
        let first = [running(1, 0, 10), None, running(3, 0, 10)];
        let _ = look(&mut seen, first.into_iter(), THRESHOLD);
        // A slot added since the last look starts with nothing remembered.
        let second = [
            running(1, 0, 60),
            running(2, 0, 60),
            running(3, 0, 10),
            running(4, 0, 99),
        ];
        let (blocked, slow) = look(&mut seen, second.into_iter(), THRESHOLD);
        assert_eq!((blocked, ids(&slow)), (1, vec![1]));
        let third = [
            running(1, 0, 90),
            running(2, 0, 90),
            running(3, 0, 10),
            running(4, 0, 130),
        ];
        let (blocked, slow) = look(&mut seen, third.into_iter(), THRESHOLD);
        assert_eq!((blocked, ids(&slow)), (3, vec![2, 4]));
    }

    #[test]
    fn the_period_is_half_the_threshold_but_at_least_5_ms_and_at_most_an_hour() {
        assert_eq!(
            period(Duration::from_millis(100)),
            Duration::from_millis(50)
        );
        assert_eq!(period(Duration::from_millis(6)), MIN_PERIOD);
        assert_eq!(period(Duration::ZERO), MIN_PERIOD);
        assert_eq!(period(Duration::MAX), MAX_PERIOD);
    }

    #[test]
    fn a_watchdog_without_threshold_never_looks() {
        let watchdog = Watchdog::new(None);
        assert_eq!(watchdog.check(Instant::now(), Vec::new, "g", |_| ()), None);
        assert_eq!(watchdog.blocked(), 0);
        assert_eq!(watchdog.reported(), 0);
    }
}
