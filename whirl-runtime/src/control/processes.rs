//! A snapshot of live processes: what [`Runtime::processes`](crate::Runtime::processes) and
//! [`Runtime::process_info`](crate::Runtime::process_info) report, the per-process counters
//! behind it ([`Activity`]), the runtime's log of recent failures ([`FailureLog`]) and the
//! top-N selection that keeps a million processes from becoming a million rows.
//!
//! The figures are defined on [`ProcessInfo`].
//!
//! # Cost
//!
//! The counters are written by the worker that runs the process, once per turn, not per
//! message: plain loads and `Relaxed` stores on the cache line of the process's state, which
//! that worker owns anyway. Readers (a console, a test) read them with `Relaxed` loads, without
//! any lock the message path takes: figures of one process may be from two different turns.

use std::cmp::Ordering as CmpOrdering;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize};
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;

use crate::lifecycle::ProcessId;

/// How [`Runtime::processes`](crate::Runtime::processes) orders what it returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub enum ProcessSort {
    /// Longest queue first (the default: an overloaded process is found at the top).
    #[default]
    QueueLength,
    /// Most turns first.
    Turns,
    /// Most messages handled first.
    Handled,
    /// Most failures first (see [`ProcessInfo`] for what counts).
    Failures,
    /// Most recently active first.
    LastActivity,
    /// Most messages per second first.
    MessagesPerSecond,
    /// Lowest id (oldest) first.
    Id,
}

impl ProcessSort {
    /// The sort named `name`: `queue`, `turns`, `handled`, `failures`, `activity`, `rate` or
    /// `id` (what the console's `?sort=` takes).
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "queue" | "queue_length" => ProcessSort::QueueLength,
            "turns" => ProcessSort::Turns,
            "handled" => ProcessSort::Handled,
            "failures" => ProcessSort::Failures,
            "activity" | "last_activity" | "idle" => ProcessSort::LastActivity,
            "rate" | "messages_per_second" => ProcessSort::MessagesPerSecond,
            "id" => ProcessSort::Id,
            _ => return None,
        })
    }

    /// The name [`from_name`](Self::from_name) takes.
    pub fn name(self) -> &'static str {
        match self {
            ProcessSort::QueueLength => "queue",
            ProcessSort::Turns => "turns",
            ProcessSort::Handled => "handled",
            ProcessSort::Failures => "failures",
            ProcessSort::LastActivity => "activity",
            ProcessSort::MessagesPerSecond => "rate",
            ProcessSort::Id => "id",
        }
    }
}

/// Which live processes [`Runtime::processes`](crate::Runtime::processes) returns: the first
/// `limit` in `sort` order, of one group or all.
///
/// ```
/// use whirl::control::{ProcessQuery, ProcessSort};
/// let top = ProcessQuery::top(ProcessSort::QueueLength, 20).group("frontend");
/// assert_eq!(top.limit, 20);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProcessQuery {
    /// The order.
    pub sort: ProcessSort,
    /// At most this many processes (default 100).
    pub limit: usize,
    /// Only processes of the group of this name.
    pub group: Option<String>,
}

impl Default for ProcessQuery {
    fn default() -> Self {
        ProcessQuery::top(ProcessSort::QueueLength, 100)
    }
}

impl ProcessQuery {
    /// The first `limit` processes in `sort` order.
    pub fn top(sort: ProcessSort, limit: usize) -> Self {
        ProcessQuery {
            sort,
            limit,
            group: None,
        }
    }

    /// Only processes of the group named `name`.
    pub fn group(mut self, name: impl Into<String>) -> Self {
        self.group = Some(name.into());
        self
    }
}

/// One live process, as of a [`Runtime::processes`](crate::Runtime::processes) snapshot.
///
/// * **turns**: turns the process has run (a turn is one scheduling on a worker: the `started`
///   hook, up to the group's budget of messages, an async handler's poll).
/// * **handled**: messages taken from its inbox (handled, or being handled by an async handler
///   that is still pending).
/// * **queue length**: messages in its inbox now, as of the end of its last turn: messages
///   posted since are counted, messages taken by a turn still running are not yet subtracted,
///   so a process in a long turn shows up to a budget's worth too many.
/// * **failures**: a process that fails (an `Err` from a handler, a panic, a linked failure)
///   terminates, so a live process has never failed itself. For a supervised child, `failures`
///   counts the failures of its earlier incarnations under the same supervisor and child id
///   (what a restart loop looks like); for any other process it is 0. Every failure, of any
///   process, is also kept in the runtime's log of recent failures
///   ([`ProcessDetail::recent_failures`]).
/// * **idle**: time since its last turn ended (the runtime's 1 ms clock).
/// * **messages per second**: messages taken from its inbox in the last whole second of the
///   runtime's clock (0 if it ran no turn then).
///
/// The counters are written by the worker running the process once per turn, with `Relaxed`
/// stores, and read without a lock: figures of one process may come from two turns. A process
/// that moves to another group ([`Group::move_process`](crate::Group::move_process)) starts
/// its counts again there.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct ProcessInfo {
    /// Its id.
    pub id: ProcessId,
    /// The names it is registered under ([`Runtime::register`](crate::Runtime::register)), if
    /// any.
    pub names: Vec<String>,
    /// Its type, as `std::any::type_name` spells it.
    pub type_name: &'static str,
    /// The name of its group.
    pub group: String,
    /// Messages in its inbox.
    pub queue_length: u64,
    /// Turns it has run.
    pub turns: u64,
    /// Messages taken from its inbox.
    pub handled: u64,
    /// Failures of its earlier incarnations, for a supervised child; 0 otherwise.
    pub failures: u64,
    /// Time since its last turn ended.
    pub idle: Duration,
    /// Messages taken from its inbox in the last whole second.
    pub messages_per_second: u64,
}

/// Where a supervised child sits: its supervisor, its child id, and how its line has fared.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct Supervision {
    /// The supervisor's id.
    pub supervisor: ProcessId,
    /// The child's id in its supervisor's spec.
    pub child: String,
    /// Restarts of this child before this incarnation started.
    pub restarts: u64,
    /// Failures of this child's earlier incarnations.
    pub failures: u64,
}

/// One failure, as the runtime's log of recent failures keeps it.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct FailureRecord {
    /// When the process terminated.
    pub at: SystemTime,
    /// The process that failed.
    pub process: ProcessId,
    /// Its type.
    pub type_name: &'static str,
    /// Its group.
    pub group: String,
    /// The failure, as text (kind and reason).
    pub reason: String,
    /// Its supervisor and child id, for a supervised child.
    pub child_of: Option<(ProcessId, String)>,
}

/// One live process in detail: [`Runtime::process_info`](crate::Runtime::process_info).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct ProcessDetail {
    /// What the process table shows.
    pub info: ProcessInfo,
    /// Processes this one monitors (`Ctx::monitor`, one half of `Ctx::link`, a supervisor's
    /// children), ids in the order placed, each once.
    pub monitors: Vec<ProcessId>,
    /// Processes that monitor this one, each once.
    pub monitored_by: Vec<ProcessId>,
    /// Watchers of this one that are not processes ([`Addr::watch`](crate::Addr::watch)
    /// callbacks, a distribution layer's watches).
    pub other_watchers: usize,
    /// Processes linked with this one: it monitors them and they monitor it (a link is a
    /// monitor each way).
    pub links: Vec<ProcessId>,
    /// Its supervisor, if it is a supervised child.
    pub supervision: Option<Supervision>,
    /// The latest failures of this process's line (its earlier incarnations under the same
    /// supervisor and child id), oldest first, at most [`FAILURE_LOG`] of the runtime's.
    pub recent_failures: Vec<FailureRecord>,
}

/// Who a process watches and who watches it, as its cell knows (the group layer reads it
/// through `Runnable::relations`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Relations {
    pub(crate) monitors: Vec<ProcessId>,
    pub(crate) monitored_by: Vec<ProcessId>,
    pub(crate) other_watchers: usize,
    pub(crate) supervision: Option<Supervision>,
}

/// Failures the runtime's log keeps.
pub const FAILURE_LOG: usize = 256;

/// The runtime's last [`FAILURE_LOG`] failures, oldest first (a kernel extension, written only
/// when a process fails).
#[derive(Default)]
pub(crate) struct FailureLog {
    /// When each was logged, on the monotonic clock: the wall-clock time is read only when
    /// the log is (a failing process reads no wall clock, which Miri's isolation forbids).
    recent: Mutex<VecDeque<(Instant, FailureRecord)>>,
}

impl FailureLog {
    pub(crate) fn push(&self, record: FailureRecord) {
        let mut recent = self.recent.lock();
        if recent.len() == FAILURE_LOG {
            recent.pop_front();
        }
        recent.push_back((Instant::now(), record));
    }

    /// The failures of `id`, or of its line if it is a supervised child.
    pub(crate) fn of(&self, id: ProcessId, line: Option<&Supervision>) -> Vec<FailureRecord> {
        let now = SystemTime::now();
        self.recent
            .lock()
            .iter()
            .filter(|(_, r)| {
                r.process == id
                    || line.is_some_and(|s| {
                        r.child_of
                            .as_ref()
                            .is_some_and(|(sup, child)| *sup == s.supervisor && *child == s.child)
                    })
            })
            .map(|(logged, r)| FailureRecord {
                at: now
                    .checked_sub(logged.elapsed())
                    .unwrap_or(SystemTime::UNIX_EPOCH),
                ..r.clone()
            })
            .collect()
    }
}

/// Bits of [`Activity::stamp`] that count the messages of the stamp's second.
const COUNT_BITS: u32 = 22;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

/// A process's counters, written by the worker that holds its token, once per turn (see the
/// [module docs](self)); any thread reads them.
#[derive(Default)]
pub(crate) struct Activity {
    turns: AtomicU64,
    /// The inbox position after the last turn (the consumer's index).
    taken_at: AtomicUsize,
    /// The end of the last turn in milliseconds of the runtime's clock, shifted left by
    /// [`COUNT_BITS`], or'ed with the messages taken in that millisecond's second (saturating).
    stamp: AtomicU64,
    /// Messages taken in the second before the stamp's (saturating), or 0 if the process ran
    /// no turn then.
    previous_second: AtomicU32,
}

/// What [`Activity::read`] found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ActivityReading {
    pub(crate) turns: u64,
    /// The inbox position after the last turn.
    pub(crate) taken_at: usize,
    pub(crate) idle: Duration,
    pub(crate) messages_per_second: u64,
}

impl Activity {
    /// The token holder, at the end of a turn that took `handled` messages and left the inbox
    /// at `position`, at `now_ms` of the runtime's clock.
    #[inline]
    pub(crate) fn turn_done(&self, now_ms: u64, handled: usize, position: usize) {
        // Only the token holder writes: loads and stores, no read-modify-write instruction.
        self.turns.store(self.turns.load(Relaxed) + 1, Relaxed);
        self.taken_at.store(position, Relaxed);
        let old = self.stamp.load(Relaxed);
        let (old_ms, old_count) = (old >> COUNT_BITS, old & COUNT_MASK);
        let handled = handled as u64;
        let count = if now_ms / 1000 == old_ms / 1000 {
            (old_count + handled).min(COUNT_MASK)
        } else {
            let before = if now_ms / 1000 == old_ms / 1000 + 1 {
                old_count as u32
            } else {
                0
            };
            self.previous_second.store(before, Relaxed);
            handled.min(COUNT_MASK)
        };
        self.stamp.store((now_ms << COUNT_BITS) | count, Relaxed);
    }

    /// The inbox position after the last turn.
    pub(crate) fn taken_at(&self) -> usize {
        self.taken_at.load(Relaxed)
    }

    /// The counters as of `now_ms` of the runtime's clock.
    pub(crate) fn read(&self, now_ms: u64) -> ActivityReading {
        let stamp = self.stamp.load(Relaxed);
        let (last_ms, count) = (stamp >> COUNT_BITS, stamp & COUNT_MASK);
        let (now_s, last_s) = (now_ms / 1000, last_ms / 1000);
        let messages_per_second = if now_s == last_s {
            u64::from(self.previous_second.load(Relaxed))
        } else if now_s == last_s + 1 {
            count
        } else {
            0
        };
        ActivityReading {
            turns: self.turns.load(Relaxed),
            taken_at: self.taken_at.load(Relaxed),
            idle: Duration::from_millis(now_ms.saturating_sub(last_ms)),
            messages_per_second,
        }
    }
}

/// A process's key under `sort`: greater comes first.
fn key(info: &ProcessInfo, sort: ProcessSort) -> u128 {
    let id = u128::from(info.id.as_u64());
    // Ties go to the lower id: the id is the low half, inverted so that lower is greater.
    let first = |major: u64| (u128::from(major) << 64) | (u128::from(u64::MAX) - id);
    match sort {
        ProcessSort::QueueLength => first(info.queue_length),
        ProcessSort::Turns => first(info.turns),
        ProcessSort::Handled => first(info.handled),
        ProcessSort::Failures => first(info.failures),
        ProcessSort::LastActivity => {
            first(u64::MAX - u64::try_from(info.idle.as_millis()).unwrap_or(u64::MAX))
        }
        ProcessSort::MessagesPerSecond => first(info.messages_per_second),
        ProcessSort::Id => u128::from(u64::MAX) - id,
    }
}

/// An entry of [`TopN`]'s heap: the smallest key on top.
struct Ranked(u128, ProcessInfo);

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl Eq for Ranked {}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        other.0.cmp(&self.0)
    }
}

/// The first `limit` processes in a sort order, kept in O(limit) memory as they stream by.
pub(crate) struct TopN {
    sort: ProcessSort,
    limit: usize,
    heap: BinaryHeap<Ranked>,
}

impl TopN {
    pub(crate) fn new(sort: ProcessSort, limit: usize) -> Self {
        TopN {
            sort,
            limit,
            heap: BinaryHeap::with_capacity(limit.min(4096) + 1),
        }
    }

    /// Whether `info` would be kept: ask before filling in its names and group.
    pub(crate) fn wants(&self, info: &ProcessInfo) -> bool {
        self.limit > 0 && self.admits(key(info, self.sort))
    }

    fn admits(&self, key: u128) -> bool {
        self.heap.len() < self.limit || self.heap.peek().is_some_and(|low| key > low.0)
    }

    /// Offers `info`.
    pub(crate) fn offer(&mut self, info: ProcessInfo) {
        let key = key(&info, self.sort);
        if self.limit == 0 || !self.admits(key) {
            return;
        }
        self.heap.push(Ranked(key, info));
        if self.heap.len() > self.limit {
            self.heap.pop();
        }
    }

    /// The processes kept, first first.
    pub(crate) fn into_sorted(self) -> Vec<ProcessInfo> {
        // The heap's order is reversed (smallest key on top), so its ascending sort is ours.
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|r| r.1)
            .collect()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn info(id: u64, queue_length: u64, idle_ms: u64) -> ProcessInfo {
        ProcessInfo {
            id: ProcessId(id),
            names: Vec::new(),
            type_name: "t",
            group: "g".into(),
            queue_length,
            turns: 0,
            handled: 0,
            failures: 0,
            idle: Duration::from_millis(idle_ms),
            messages_per_second: 0,
        }
    }

    #[test]
    fn top_n_keeps_the_first_in_order_with_ties_to_the_lower_id() {
        let mut top = TopN::new(ProcessSort::QueueLength, 3);
        for (id, q) in [(1, 5), (2, 9), (3, 0), (4, 9), (5, 7), (6, 1)] {
            top.offer(info(id, q, 0));
        }
        let ids: Vec<u64> = top.into_sorted().iter().map(|p| p.id.as_u64()).collect();
        assert_eq!(ids, [2, 4, 5]);

        let mut recent = TopN::new(ProcessSort::LastActivity, 2);
        for (id, idle) in [(1, 50), (2, 10), (3, 30)] {
            recent.offer(info(id, 0, idle));
        }
        let ids: Vec<u64> = recent.into_sorted().iter().map(|p| p.id.as_u64()).collect();
        assert_eq!(ids, [2, 3]);

        let mut by_id = TopN::new(ProcessSort::Id, 10);
        for id in [9, 3, 7] {
            by_id.offer(info(id, 0, 0));
        }
        let ids: Vec<u64> = by_id.into_sorted().iter().map(|p| p.id.as_u64()).collect();
        assert_eq!(ids, [3, 7, 9]);
        assert!(TopN::new(ProcessSort::Id, 0).into_sorted().is_empty());
    }

    #[test]
    fn the_rate_is_the_last_whole_second() {
        let a = Activity::default();
        a.turn_done(1_100, 10, 10);
        a.turn_done(1_900, 5, 15);
        // Within the same second, the previous one (none) is reported.
        assert_eq!(a.read(1_950).messages_per_second, 0);
        // One second later, the whole second 1 is.
        let r = a.read(2_300);
        assert_eq!((r.messages_per_second, r.turns, r.taken_at), (15, 2, 15));
        assert_eq!(r.idle, Duration::from_millis(400));
        a.turn_done(2_400, 7, 22);
        assert_eq!(a.read(2_500).messages_per_second, 15);
        assert_eq!(a.read(3_000).messages_per_second, 7);
        // A gap: nothing in the last whole second.
        assert_eq!(a.read(4_000).messages_per_second, 0);
        a.turn_done(9_000, 1, 23);
        assert_eq!(a.read(9_001).messages_per_second, 0);
    }

    #[test]
    fn sorts_round_trip_their_names() {
        for sort in [
            ProcessSort::QueueLength,
            ProcessSort::Turns,
            ProcessSort::Handled,
            ProcessSort::Failures,
            ProcessSort::LastActivity,
            ProcessSort::MessagesPerSecond,
            ProcessSort::Id,
        ] {
            assert_eq!(ProcessSort::from_name(sort.name()), Some(sort));
        }
        assert_eq!(ProcessSort::from_name("nope"), None);
    }
}
