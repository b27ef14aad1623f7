//! Groups measure themselves: what [`Group::stats`](crate::Group::stats) and
//! [`Runtime::stats`](crate::Runtime::stats) report, and how workers collect it cheaply
//! enough to leave on.
//!
//! * Counters (posted, handled...) are the group's striped counters (`counters.rs`).
//! * Queue latency comes from the enqueue stamp every message carries in its inbox slot
//!   (`observe.rs`: a coarse millisecond clock, so 1 ms resolution). Workers record it for the
//!   messages of *sampled* turns: one turn in 64 per worker, the first turn of each worker in
//!   every millisecond (so at low volume every turn is sampled), and every turn of a process
//!   that serves a principal.
//! * Handling time is measured on the same sampled turns (two clock reads per turn, not per
//!   message): the turn's time divided among its messages.
//! * Idle time is measured per worker from the moment it runs out of work until it finds
//!   some (searching and parked).
//! * Lock latency is what handlers report through [`Ctx::lock_timed`](crate::Ctx::lock_timed):
//!   a whirl process itself is never locked (its scheduling token is taken without waiting),
//!   so the waits that matter are those for state a `shares_state` group shares.
//! * Slow turns are counted by the group's slow-turn watchdog, on the controller thread, from
//!   what each worker publishes as a turn begins (its probe): nothing is measured on the
//!   message path. A turn that holds its worker longer than the group's threshold
//!   ([`GroupBuilder::slow_turn_threshold`](crate::GroupBuilder::slow_turn_threshold)) is
//!   counted once, and its worker counts as *blocked* for as long as the turn lasts.
//!
//! * Rejections per principal are counted on the post path that failed (one short lock per
//!   rejected message of a principal, none on the path that succeeds), for the first
//!   [`MAX_REJECTED_PRINCIPALS`] principals a group rejects; the group's own `rejected` counter
//!   counts every rejection.
//!
//! Each worker buffers what it records and publishes it to its slot's histograms (under a
//! lock nobody else takes on the message path) every 32 sampled turns, every 50 ms, when it
//! runs out of work, and after every turn of a principal's process (so per-principal counts
//! are exact once the group is idle).

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, SystemTime};

use parking_lot::Mutex;

use super::controller::ControllerState;
use super::counters::MessageCounts;
use super::latency::{micros, nanos, LatencySummary, Measured};
use crate::lifecycle::{DeadLetterRecord, ProcessId};
use crate::principal::Principal;

/// Principals whose rejections a group counts one by one: the first this many it rejects (the
/// group's `rejected` counter counts every rejection).
pub const MAX_REJECTED_PRINCIPALS: usize = 4096;
/// Slow turns a group remembers for [`GroupStats::recent_slow_turns`].
pub(crate) const RECENT_SLOW_TURNS: usize = 32;

/// One turn in this many is timed and has its messages' queue latencies recorded.
pub(crate) const SAMPLE_EVERY: u32 = 64;
/// Sampled turns between publications of a worker's local statistics.
const PUBLISH_EVERY: u32 = 32;
/// Longest a busy worker keeps its statistics to itself.
const PUBLISH_INTERVAL: Duration = Duration::from_millis(50);
/// What a group's processes did for one principal.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct PrincipalCounts {
    /// The principal's id.
    pub id: u64,
    /// Its priority.
    pub priority: u8,
    /// Its class.
    pub class: u16,
    /// Messages handled for it in this group (each worker keeps counts for its 1024 busiest
    /// principals at most, forgetting the less busy half when it has more).
    pub handled: u64,
    /// Messages for it that this group's predicate rejected (counted for the first
    /// [`MAX_REJECTED_PRINCIPALS`] principals the group rejects).
    pub rejected: u64,
    /// Time spent in this group's handlers for it.
    pub handling_time: Duration,
}

impl PrincipalCounts {
    fn zero(p: &Principal) -> Self {
        PrincipalCounts {
            id: p.id(),
            priority: p.priority(),
            class: p.class(),
            handled: 0,
            rejected: 0,
            handling_time: Duration::ZERO,
        }
    }

    fn add(&mut self, other: &PrincipalCounts) {
        self.handled += other.handled;
        self.rejected += other.rejected;
        self.handling_time += other.handling_time;
    }
}

/// What a group's processes did for the principals of one class and priority: exact totals
/// since the group was built (unlike [`PrincipalCounts`], nothing is forgotten), and bounded
/// in number by the classes and priorities a program uses, not by its sessions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct ClassCounts {
    /// The principals' class.
    pub class: u16,
    /// Their priority.
    pub priority: u8,
    /// Messages handled for them in this group.
    pub handled: u64,
    /// Messages for them that this group's predicate rejected.
    pub rejected: u64,
    /// Time spent in this group's handlers for them.
    pub handling_time: Duration,
}

impl ClassCounts {
    fn add(&mut self, other: &PrincipalCounts) {
        self.class = other.class;
        self.priority = other.priority;
        self.handled += other.handled;
        self.rejected += other.rejected;
        self.handling_time += other.handling_time;
    }
}

/// The key of a [`ClassCounts`].
type ClassKey = (u16, u8);

fn fold_class(classes: &mut HashMap<ClassKey, ClassCounts>, counts: &PrincipalCounts) {
    classes
        .entry((counts.class, counts.priority))
        .or_default()
        .add(counts);
}

fn merge_class(classes: &mut HashMap<ClassKey, ClassCounts>, counts: &ClassCounts) {
    let entry = classes.entry((counts.class, counts.priority)).or_default();
    entry.class = counts.class;
    entry.priority = counts.priority;
    entry.handled += counts.handled;
    entry.rejected += counts.rejected;
    entry.handling_time += counts.handling_time;
}

/// A turn the group's watchdog found holding its worker longer than the group's threshold.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct SlowTurn {
    /// The process whose turn it was.
    pub process: ProcessId,
    /// The type of the message being handled, when the worker had published it.
    pub message_type: Option<&'static str>,
    /// How long the turn had held its worker when the watchdog saw it (at least the
    /// threshold; the turn may have gone on).
    pub held: Duration,
    /// When the watchdog saw it.
    pub seen_at: SystemTime,
}

/// Rejections per principal in one group (see the [module docs](self)).
#[derive(Default)]
pub(crate) struct Rejections {
    by_principal: Mutex<HashMap<u64, PrincipalCounts>>,
    /// Every rejection, by class and priority.
    by_class: Mutex<HashMap<ClassKey, ClassCounts>>,
}

impl Rejections {
    /// Counts one message of `principal` rejected.
    pub(crate) fn record(&self, principal: &Principal) {
        principal.record_rejected();
        let mut one = PrincipalCounts::zero(principal);
        one.rejected = 1;
        fold_class(&mut self.by_class.lock(), &one);
        let mut by = self.by_principal.lock();
        if let Some(counts) = by.get_mut(&principal.id()) {
            counts.rejected += 1;
        } else if by.len() < MAX_REJECTED_PRINCIPALS {
            let mut counts = PrincipalCounts::zero(principal);
            counts.rejected = 1;
            by.insert(principal.id(), counts);
        }
    }
}

/// A snapshot of a group's statistics. See the [module docs](crate::control) for how each
/// figure is measured.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct GroupStats {
    /// The group's name.
    pub name: String,
    /// Message and process counters.
    pub counts: MessageCounts,
    /// Messages queued now.
    pub queue_length: u64,
    /// Time messages spent queued before their handler ran.
    pub queue_latency: LatencySummary,
    /// Time handlers took per message.
    pub handling_time: LatencySummary,
    /// Queue latency over the last one to two seconds (what a live chart wants: the figures
    /// above cover the group's whole life).
    pub recent_queue_latency: LatencySummary,
    /// Handling time over the last one to two seconds.
    pub recent_handling_time: LatencySummary,
    /// Total time the group's workers have spent waiting for work (on shared workers: the
    /// time each shared worker spent not running this group's turns, summed).
    pub idle_time: Duration,
    /// Lock waits reported by handlers ([`Ctx::lock_timed`](crate::Ctx::lock_timed)).
    pub lock_latency: LatencySummary,
    /// Turns that held a worker longer than the group's slow-turn threshold, since the group
    /// was built; each was reported once with a `tracing` warning (see
    /// [`GroupBuilder::slow_turn_threshold`](crate::GroupBuilder::slow_turn_threshold)).
    pub slow_turns: u64,
    /// Workers in such a turn now, as of the watchdog's last look.
    pub blocked_workers: usize,
    /// The group's slow-turn threshold; `None` when slow turns are not watched.
    pub slow_turn_threshold: Option<Duration>,
    /// Worker threads now; for a group on the shared workers, its concurrency limit.
    pub threads: usize,
    /// The range the thread count (or concurrency limit) may move in.
    pub thread_range: (usize, usize),
    /// Messages a process handles per turn.
    pub budget: usize,
    /// Whether the group's predicate is deciding admissions now (see the controller module's
    /// "Controllers do not fight").
    pub admission_active: bool,
    /// The scheduler (`"work-stealing"` for the default).
    pub scheduler: String,
    /// The group's controllers and their state.
    pub controllers: Vec<ControllerState>,
    /// Per-principal counts, busiest (handled plus rejected) first.
    pub principals: Vec<PrincipalCounts>,
    /// Counts per class and priority of principal, exact, ordered by class then priority.
    pub classes: Vec<ClassCounts>,
    /// The last slow turns the watchdog found (at most 32), oldest first.
    pub recent_slow_turns: Vec<SlowTurn>,
    /// Processes the group's automatic-grouping rule moved to another group
    /// ([`Group::auto_move`](crate::Group::auto_move)), since the group was built.
    pub auto_moved: u64,
    /// The group's CPU budget and what it spent, if it has one
    /// ([`GroupBuilder::cpu_budget`](crate::GroupBuilder::cpu_budget)).
    pub cpu_budget: Option<CpuBudgetStats>,
}

/// What a group with a CPU budget spent and how often it waited
/// ([`GroupBuilder::cpu_budget`](crate::GroupBuilder::cpu_budget)).
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct CpuBudgetStats {
    /// The share of the cores the group may use.
    pub share: f64,
    /// The integration period.
    pub period: Duration,
    /// Handling time allowed per period (`share × period × cores`).
    pub allowance: Duration,
    /// Handling time spent since the group was built.
    pub spent: Duration,
    /// Handling time charged since the last tick, real or virtual (overspending carried in).
    pub spent_this_period: Duration,
    /// Integration periods begun since the group was built (real ticks, counted when a worker
    /// looks).
    pub periods: u64,
    /// Times a worker found the budget spent and waited.
    pub throttled: u64,
    /// Total time workers waited for the budget.
    pub throttled_time: Duration,
    /// Times a waiting worker re-armed the budget early because the rest of the runtime left
    /// the CPU idle.
    pub virtual_ticks: u64,
}

/// A snapshot of every group's statistics.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct RuntimeStats {
    /// Counters summed over the groups.
    pub counts: MessageCounts,
    /// Processes alive now.
    pub live_processes: usize,
    /// Each group, in the order they were built.
    pub groups: Vec<GroupStats>,
    /// The last dead letters (at most 32), oldest first; every one is counted in
    /// `counts.dead_lettered` and was given to the runtime's dead-letter sink.
    pub recent_dead_letters: Vec<DeadLetterRecord>,
}

/// How long a window of recent latencies lasts: the `recent_*` figures cover the window in
/// progress and, for its first `RECENT_WINDOW`, the one before it.
pub(crate) const RECENT_WINDOW: Duration = Duration::from_secs(1);

/// Latencies published since `since` (time since the group's epoch).
struct Window {
    since: Duration,
    queue_latency: Measured,
    handling: Measured,
}

impl Window {
    fn new() -> Self {
        Window {
            since: Duration::ZERO,
            queue_latency: Measured::new(),
            handling: Measured::new(),
        }
    }

    fn reset(&mut self, since: Duration) {
        self.since = since;
        self.queue_latency.reset();
        self.handling.reset();
    }
}

/// Statistics a worker has published: merged across workers by readers.
pub(crate) struct Published {
    queue_latency: Measured,
    handling: Measured,
    lock_wait: Measured,
    pub(crate) principals: HashMap<u64, PrincipalCounts>,
    /// What `principals` holds and forgets, by class and priority, never forgotten.
    classes: HashMap<ClassKey, ClassCounts>,
    /// Recent latencies: the window in progress and the one before it.
    current: Window,
    previous: Window,
}

impl Published {
    fn new() -> Self {
        Published {
            queue_latency: Measured::new(),
            handling: Measured::new(),
            lock_wait: Measured::new(),
            principals: HashMap::new(),
            classes: HashMap::new(),
            current: Window::new(),
            previous: Window::new(),
        }
    }

    /// Starts a new window if the current one is `RECENT_WINDOW` old at `now`.
    fn rotate(&mut self, now: Duration) {
        let age = now.saturating_sub(self.current.since);
        if age < RECENT_WINDOW {
            return;
        }
        if age < 2 * RECENT_WINDOW {
            std::mem::swap(&mut self.current, &mut self.previous);
            self.current.reset(now);
        } else {
            // Nothing was published for a whole window: both are stale.
            self.previous.reset(now);
            self.current.reset(now);
        }
    }
}

/// Sums of what controllers average over a period, readable without a lock.
#[derive(Default)]
pub(crate) struct Sums {
    pub(crate) queue_latency_micros: AtomicU64,
    pub(crate) queue_latency_count: AtomicU64,
    pub(crate) lock_wait_nanos: AtomicU64,
    pub(crate) lock_wait_count: AtomicU64,
}

/// The shared half of a worker's statistics: one per worker slot, outliving the workers that
/// occupy the slot in turn (so a retired worker's history stays counted).
pub(crate) struct SlotStats {
    pub(crate) published: Mutex<Published>,
    pub(crate) sums: Sums,
    /// Completed idle time, nanoseconds.
    pub(crate) idle_nanos: AtomicU64,
    /// When the current idle spell began (nanoseconds since the group's epoch, plus one), or
    /// zero while the worker is busy or the slot empty.
    pub(crate) idle_since: AtomicU64,
}

impl SlotStats {
    pub(crate) fn new() -> Self {
        SlotStats {
            published: Mutex::new(Published::new()),
            sums: Sums::default(),
            idle_nanos: AtomicU64::new(0),
            idle_since: AtomicU64::new(0),
        }
    }

    /// Idle time so far, counting a spell in progress up to `now` (since the epoch).
    pub(crate) fn idle_total(&self, now: Duration) -> (Duration, Duration) {
        let done = Duration::from_nanos(self.idle_nanos.load(Relaxed));
        let since = self.idle_since.load(Relaxed);
        let current = if since == 0 {
            Duration::ZERO
        } else {
            now.saturating_sub(Duration::from_nanos(since - 1))
        };
        (done + current, current)
    }
}

/// What a worker records between publications: raw values, folded into the slot's
/// histograms at publication (a histogram is tens of kilobytes; clearing one per publication
/// would cost more than the recording).
pub(crate) struct LocalStats {
    /// Microseconds.
    queue_latency: Vec<Duration>,
    /// (microseconds per message, messages, the turn's nanoseconds) per timed turn.
    handling: Vec<(u64, u64, u64)>,
    lock_wait: Vec<Duration>,
    principals: HashMap<u64, PrincipalCounts>,
    queue_latency_micros: u64,
    lock_wait_nanos: u64,
    sampled_since_publish: u32,
    /// Coarse-clock time of the last publication.
    last_publish: Option<Duration>,
}

impl LocalStats {
    pub(crate) fn new() -> Self {
        LocalStats {
            queue_latency: Vec::new(),
            handling: Vec::new(),
            lock_wait: Vec::new(),
            principals: HashMap::new(),
            queue_latency_micros: 0,
            lock_wait_nanos: 0,
            sampled_since_publish: 0,
            last_publish: None,
        }
    }

    /// A message of a sampled turn waited `latency` in its inbox.
    pub(crate) fn record_queue_latency(&mut self, latency: Duration) {
        self.queue_latency.push(latency);
        self.queue_latency_micros += micros(latency);
    }

    /// A handler waited `wait` for a lock.
    pub(crate) fn record_lock_wait(&mut self, wait: Duration) {
        self.lock_wait.push(wait);
        self.lock_wait_nanos += nanos(wait);
    }

    /// A timed turn handled `handled` messages in `elapsed`, for `principal` if any. Returns
    /// whether it is time to publish.
    pub(crate) fn record_turn(
        &mut self,
        handled: u64,
        elapsed: Duration,
        principal: Option<&Principal>,
        now: Duration,
    ) -> bool {
        if handled > 0 {
            let per_message = elapsed / u32::try_from(handled).unwrap_or(u32::MAX);
            self.handling
                .push((micros(per_message), handled, nanos(elapsed)));
        }
        self.sampled_since_publish += 1;
        let last = *self.last_publish.get_or_insert(now);
        let Some(p) = principal else {
            return self.sampled_since_publish >= PUBLISH_EVERY
                || now.saturating_sub(last) >= PUBLISH_INTERVAL;
        };
        p.record_handled(handled, elapsed);
        let entry = self
            .principals
            .entry(p.id())
            .or_insert_with(|| PrincipalCounts::zero(p));
        entry.handled += handled;
        entry.handling_time += elapsed;
        // Per-principal counts are published at once (one uncontended lock per turn of a
        // principal's process), so they are exact whenever the counters are.
        true
    }

    /// Whether anything was recorded since the last publication.
    pub(crate) fn is_dirty(&self) -> bool {
        self.sampled_since_publish > 0
            || !self.lock_wait.is_empty()
            || !self.queue_latency.is_empty()
    }

    /// Moves what was recorded into the slot.
    pub(crate) fn publish(&mut self, slot: &SlotStats, now: Duration) {
        let (queued, locks) = (self.queue_latency.len(), self.lock_wait.len());
        {
            let mut p = slot.published.lock();
            p.rotate(now);
            let p = &mut *p;
            for d in self.queue_latency.drain(..) {
                let (us, ns) = (micros(d), nanos(d));
                p.queue_latency.record(us, 1, ns);
                p.current.queue_latency.record(us, 1, ns);
            }
            for (us, n, ns) in self.handling.drain(..) {
                p.handling.record(us, n, ns);
                p.current.handling.record(us, n, ns);
            }
            for d in self.lock_wait.drain(..) {
                p.lock_wait.record(micros(d), 1, nanos(d));
            }
            for (id, counts) in self.principals.drain() {
                fold_class(&mut p.classes, &counts);
                p.principals
                    .entry(id)
                    .and_modify(|entry| entry.add(&counts))
                    .or_insert(counts);
            }
            prune_principals(&mut p.principals);
        }
        let sums = &slot.sums;
        sums.queue_latency_micros
            .fetch_add(std::mem::take(&mut self.queue_latency_micros), Relaxed);
        sums.queue_latency_count.fetch_add(queued as u64, Relaxed);
        sums.lock_wait_nanos
            .fetch_add(std::mem::take(&mut self.lock_wait_nanos), Relaxed);
        sums.lock_wait_count.fetch_add(locks as u64, Relaxed);
        self.sampled_since_publish = 0;
        self.last_publish = Some(now);
    }
}

/// Principals a worker slot keeps counts for: past it, the less busy half is forgotten.
const MAX_SLOT_PRINCIPALS: usize = 1024;

/// Bounds a slot's per-principal counts: a server that gives every session (every
/// reconnection of a cookie-less client) its own principal would otherwise keep a count for
/// each forever. Past [`MAX_SLOT_PRINCIPALS`], keeps the busier half (by messages handled
/// and rejected, the order statistics list them in) and gives back the table's memory:
/// amortized O(1) per new principal.
fn prune_principals(principals: &mut HashMap<u64, PrincipalCounts>) {
    if principals.len() <= MAX_SLOT_PRINCIPALS {
        return;
    }
    let mut load: Vec<u64> = principals
        .values()
        .map(|c| c.handled + c.rejected)
        .collect();
    let keep = MAX_SLOT_PRINCIPALS / 2;
    let cut = load.len() - keep;
    let (_, &mut floor, above) = load.select_nth_unstable(cut);
    // Everything above the floor, and as many at it as make up `keep`.
    let mut ties = keep - above.iter().filter(|&&l| l > floor).count();
    principals.retain(|_, c| {
        let l = c.handled + c.rejected;
        if l == floor && ties > 0 {
            ties -= 1;
            return true;
        }
        l > floor
    });
    principals.shrink_to(MAX_SLOT_PRINCIPALS);
}

/// The merged view of a group's slots.
pub(crate) struct Merged {
    pub(crate) queue_latency: LatencySummary,
    pub(crate) handling: LatencySummary,
    pub(crate) recent_queue_latency: LatencySummary,
    pub(crate) recent_handling: LatencySummary,
    pub(crate) lock_wait: LatencySummary,
    pub(crate) principals: Vec<PrincipalCounts>,
    pub(crate) classes: Vec<ClassCounts>,
}

/// Merges the slots' publications and the group's rejections, as of `now` (time since the
/// group's epoch: it decides which windows of recent latencies are still recent).
pub(crate) fn merge<'a>(
    slots: impl Iterator<Item = &'a SlotStats>,
    rejections: &Rejections,
    now: Duration,
) -> Merged {
    fn fold(principals: &mut HashMap<u64, PrincipalCounts>, counts: &PrincipalCounts) {
        principals
            .entry(counts.id)
            .and_modify(|entry| entry.add(counts))
            .or_insert_with(|| counts.clone());
    }
    let mut all = Published::new();
    let mut recent = Window::new();
    for slot in slots {
        let p = slot.published.lock();
        all.queue_latency.add(&p.queue_latency);
        all.handling.add(&p.handling);
        all.lock_wait.add(&p.lock_wait);
        let age = now.saturating_sub(p.current.since);
        let windows = match age {
            _ if age < RECENT_WINDOW => [Some(&p.current), Some(&p.previous)],
            _ if age < 2 * RECENT_WINDOW => [Some(&p.current), None],
            _ => [None, None],
        };
        for w in windows.into_iter().flatten() {
            recent.queue_latency.add(&w.queue_latency);
            recent.handling.add(&w.handling);
        }
        for counts in p.principals.values() {
            fold(&mut all.principals, counts);
        }
        for counts in p.classes.values() {
            merge_class(&mut all.classes, counts);
        }
    }
    for counts in rejections.by_principal.lock().values() {
        fold(&mut all.principals, counts);
    }
    for counts in rejections.by_class.lock().values() {
        merge_class(&mut all.classes, counts);
    }
    let mut classes: Vec<_> = all.classes.into_values().collect();
    classes.sort_by_key(|c| (c.class, c.priority));
    let mut principals: Vec<_> = all.principals.into_values().collect();
    principals.sort_by(|a, b| {
        (b.handled + b.rejected)
            .cmp(&(a.handled + a.rejected))
            .then(a.id.cmp(&b.id))
    });
    Merged {
        queue_latency: all.queue_latency.summary(),
        handling: all.handling.summary(),
        recent_queue_latency: recent.queue_latency.summary(),
        recent_handling: recent.handling.summary(),
        lock_wait: all.lock_wait.summary(),
        principals,
        classes,
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::control::LATENCY_BUCKETS;

    #[test]
    fn a_slot_keeps_counts_for_its_busiest_principals_only() {
        let mut principals = HashMap::new();
        for id in 0..(MAX_SLOT_PRINCIPALS as u64 + 1) {
            let p = Principal::builder(id).build().expect("a valid principal");
            let mut counts = PrincipalCounts::zero(&p);
            // A few busy principals among many with one message each.
            counts.handled = if id % 1000 == 0 { 100 + id } else { 1 };
            principals.insert(id, counts);
        }
        prune_principals(&mut principals);
        assert_eq!(principals.len(), MAX_SLOT_PRINCIPALS / 2);
        assert!((0..=MAX_SLOT_PRINCIPALS as u64)
            .step_by(1000)
            .all(|id| principals.contains_key(&id)));
        prune_principals(&mut principals);
        assert_eq!(
            principals.len(),
            MAX_SLOT_PRINCIPALS / 2,
            "under the bound: kept"
        );
    }

    #[test]
    fn class_counts_stay_exact_when_principals_are_forgotten() {
        let slot = SlotStats::new();
        let rejections = Rejections::default();
        let now = Duration::from_millis(1);
        let sessions = MAX_REJECTED_PRINCIPALS as u64 + 1000;
        for id in 0..sessions {
            let class = u16::from(id % 2 == 0);
            let p = Principal::builder(id)
                .class(class)
                .build()
                .expect("a valid principal");
            let mut local = LocalStats::new();
            local.record_turn(2, Duration::from_micros(10), Some(&p), now);
            local.publish(&slot, now);
            rejections.record(&p);
        }
        let merged = merge(std::iter::once(&slot), &rejections, now);
        assert!(
            merged.principals.len() < sessions as usize,
            "sessions were forgotten"
        );
        let totals: Vec<_> = merged
            .classes
            .iter()
            .map(|c| (c.class, c.handled, c.rejected))
            .collect();
        let half = sessions / 2;
        assert_eq!(totals, [(0, 2 * half, half), (1, 2 * half, half)]);
    }

    #[test]
    fn published_statistics_merge_across_slots() {
        let (a, b) = (SlotStats::new(), SlotStats::new());
        let now = Duration::from_secs(1);
        let session = Principal::builder(9)
            .priority(2)
            .class(1)
            .build()
            .expect("a valid principal");
        let mut local = LocalStats::new();
        for ms in [1, 2, 3, 4, 100] {
            local.record_queue_latency(Duration::from_millis(ms));
        }
        local.record_turn(4, Duration::from_micros(400), Some(&session), now);
        local.publish(&a, now);
        assert!(!local.is_dirty());
        local.record_lock_wait(Duration::from_millis(2));
        local.record_turn(1, Duration::from_micros(50), Some(&session), now);
        local.publish(&b, now);

        let rejections = Rejections::default();
        rejections.record(&session);
        rejections.record(&Principal::builder(10).build().expect("a valid principal"));
        let merged = merge([&a, &b].into_iter(), &rejections, now);
        assert_eq!(
            merged.recent_queue_latency.samples, 5,
            "published within the window"
        );
        let later = merge([&a, &b].into_iter(), &rejections, now + 3 * RECENT_WINDOW);
        assert_eq!(
            later.recent_queue_latency.samples, 0,
            "stale windows are left out"
        );
        assert_eq!(later.queue_latency.samples, 5);
        assert_eq!(merged.queue_latency.samples, 5);
        // Two significant digits: within 1%.
        let near =
            |d: Duration, us: u64| d.as_micros().abs_diff(u128::from(us)) * 100 <= u128::from(us);
        assert!(
            near(merged.queue_latency.p50, 3_000),
            "{:?}",
            merged.queue_latency
        );
        assert!(merged.queue_latency.max >= Duration::from_millis(99));
        // Cumulative at 1 ms, 2.5 ms, 5 ms and 100 ms: 1, 2, 4 and all 5 of 1, 2, 3, 4, 100 ms.
        let at = |bound: Duration| {
            let i = LATENCY_BUCKETS
                .iter()
                .position(|&b| b == bound)
                .expect("a bound");
            merged.queue_latency.buckets[i]
        };
        assert_eq!(
            [
                Duration::from_millis(1),
                Duration::from_micros(2_500),
                Duration::from_millis(5),
                Duration::from_millis(100)
            ]
            .map(at),
            [1, 2, 4, 5]
        );
        assert_eq!(merged.handling.samples, 5);
        assert!(near(merged.handling.p50, 100), "{:?}", merged.handling);
        assert_eq!(merged.lock_wait.samples, 1);
        assert_eq!(merged.principals.len(), 2);
        assert_eq!(merged.principals[0].handled, 5);
        assert_eq!(merged.principals[0].rejected, 1);
        assert_eq!(
            (merged.principals[1].id, merged.principals[1].rejected),
            (10, 1)
        );
        assert_eq!(session.rejected(), 1);
        assert_eq!(
            merged.principals[0].handling_time,
            Duration::from_micros(450)
        );
        assert_eq!(session.handled(), 5);
        assert_eq!(a.sums.queue_latency_count.load(Relaxed), 5);
        assert_eq!(b.sums.lock_wait_count.load(Relaxed), 1);
    }

    #[test]
    fn idle_time_counts_the_spell_in_progress() {
        let slot = SlotStats::new();
        slot.idle_nanos.store(1_000, Relaxed);
        slot.idle_since.store(5_000 + 1, Relaxed);
        let (total, current) = slot.idle_total(Duration::from_nanos(8_000));
        assert_eq!(current, Duration::from_nanos(3_000));
        assert_eq!(total, Duration::from_nanos(4_000));
    }

    #[test]
    fn publishing_is_due_after_enough_sampled_turns() {
        let mut local = LocalStats::new();
        let now = Duration::from_secs(1);
        let due = (0..PUBLISH_EVERY)
            .map(|_| local.record_turn(1, Duration::from_micros(1), None, now))
            .collect::<Vec<_>>();
        assert!(!due[0]);
        assert!(due[due.len() - 1]);
    }
}

// SAFETY: the statistics snapshots are plain data copied out of the runtime's counters:
// numbers, durations, times, names, and vectors of the same; nothing in them is shared with the
// runtime once taken. A process may answer with one (a status page's backend). (I8)
unsafe impl crate::isolation::Isolated for RuntimeStats {}
impl crate::isolation::Reply for RuntimeStats {}
// SAFETY: as above. (I8)
unsafe impl crate::isolation::Isolated for GroupStats {}
impl crate::isolation::Reply for GroupStats {}
// SAFETY: as above. (I8)
unsafe impl crate::isolation::Isolated for LatencySummary {}
impl crate::isolation::Reply for LatencySummary {}
// SAFETY: as above. (I8)
unsafe impl crate::isolation::Isolated for PrincipalCounts {}
impl crate::isolation::Reply for PrincipalCounts {}
// SAFETY: as above. (I8)
unsafe impl crate::isolation::Isolated for SlowTurn {}
impl crate::isolation::Reply for SlowTurn {}
// SAFETY: as above. (I8)
unsafe impl crate::isolation::Isolated for CpuBudgetStats {}
impl crate::isolation::Reply for CpuBudgetStats {}
