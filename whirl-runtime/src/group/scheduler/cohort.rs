//! Cohort scheduling (Whirlwind §V, after Larus and Parkes): ready processes grouped by stage
//! and run stage by stage, so that a worker runs a batch of processes with the same handler
//! code and similar data back to back while that code and data are in its caches.
//!
//! [`Cohort`] keeps one FIFO of ready processes per [`Stage`] (the process type, in order of
//! first sight) and, per worker, a cursor: the stage the worker is serving and how many turns
//! of its batch are left. A worker keeps taking processes of its stage until the batch is used
//! up or the stage has nothing ready, then moves to the next stage with work, round-robin.
//! [`Fifo`] is the same code with every process in one queue and no batch limit: the baseline
//! that differs from [`Cohort`] only by the grouping (both take one mutex per push and per pop).

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use parking_lot::Mutex;

use super::{Ready, Scheduler, Stage};

/// The default number of turns a worker gives one stage before moving to the next.
const DEFAULT_BATCH: u32 = 64;

/// Ready processes run stage by stage, a batch at a time, for code and data locality
/// (Whirlwind's cohort scheduling; SEDA's stages, inside one group).
///
/// * A process's stage is its process type ([`Ready::stage`]). A multi-stage pipeline in one
///   group (parse → look up → render → log, each a process type with many instances) has one
///   ready queue per stage.
/// * Each worker serves one stage at a time: it takes that stage's ready processes in FIFO
///   order, up to [`batch`](Cohort::batch) turns (default 64), then moves to the next stage
///   that has work, round-robin in order of first sight. A stage that runs dry ends the batch
///   early. So each stage with work is served by every worker at least once every
///   `stages` batches: no stage starves, and a process waits at most for the processes queued
///   before it in its stage plus one batch of every other stage per turn it waits.
/// * Yielded and newly woken processes both join the back of their stage's queue. A process
///   keeps its per-sender message order whatever the scheduler does (its inbox is FIFO).
/// * Workers keep separate cursors, so two workers may serve two stages at once.
///
/// The win is locality: when the stages together touch more code and data than a core's
/// caches hold and each alone fits, running one stage's turns back to back replaces cache
/// misses with hits. It shows when turns are short (a few messages each) and many processes
/// of a stage are ready at once. With few ready processes per stage, batches are short and
/// this behaves like [`Fifo`]. Compare the two on a workload with
/// `cargo run --release -p bench --bin cohort_bench`.
///
/// `push` finds its stage by a scan of the stages seen so far (a short vector), so this suits
/// tens of stages; queues are reused, so steady-state `push` and `pop` do not allocate.
///
/// ```
/// use whirl::scheduler::{Cohort, Scheduler};
///
/// // Up to 32 turns of one stage before the next stage gets a worker's turn.
/// let scheduler = Cohort::new().batch(32);
/// assert!(scheduler.is_empty());
/// assert!(scheduler.describe().starts_with("cohort"));
/// ```
pub struct Cohort {
    staged: Staged,
}

/// Ready processes in one FIFO, whatever their stage: [`Cohort`]'s machinery without the
/// grouping, the baseline to measure cohort scheduling against through the same
/// [`Scheduler`] path (one mutex per push and per pop). The built-in work-stealing scheduler of
/// a group without a [`Scheduler`] is faster than either.
///
/// ```
/// use whirl::scheduler::{Fifo, Scheduler};
///
/// let scheduler = Fifo::new();
/// assert_eq!(scheduler.len(), 0);
/// assert!(scheduler.describe().starts_with("fifo"));
/// ```
pub struct Fifo {
    staged: Staged,
}

/// The machinery of both: queues by stage (one queue when not grouping), a cursor per worker.
struct Staged {
    /// Whether processes are queued by stage (`Cohort`) or all in one queue (`Fifo`).
    grouping: bool,
    batch: u32,
    inner: Mutex<Queues>,
    /// Queued processes: raised before a push and lowered after a pop, so it never
    /// understates what is queued (it may overstate it for an instant).
    len: AtomicUsize,
}

struct StageQueue {
    /// `None` for `Fifo`'s one queue.
    stage: Option<Stage>,
    queue: VecDeque<Ready>,
    /// Batches begun on this stage.
    batches: u64,
}

/// What one worker is serving.
#[derive(Clone, Copy)]
struct Cursor {
    /// The index of the stage in `Queues::stages`; `usize::MAX` before the first batch, so
    /// the first batch goes to the first stage with work.
    stage: usize,
    /// Turns left in the current batch.
    left: u32,
}

const FRESH: Cursor = Cursor {
    stage: usize::MAX,
    left: 0,
};

#[derive(Default)]
struct Queues {
    /// The stages seen so far, in order of first sight.
    stages: Vec<StageQueue>,
    /// By worker number; grown on a worker's first pop.
    cursors: Vec<Cursor>,
}

impl Staged {
    fn new(grouping: bool, batch: u32) -> Self {
        Staged {
            grouping,
            batch,
            inner: Mutex::new(Queues::default()),
            len: AtomicUsize::new(0),
        }
    }

    fn push(&self, ready: Ready) {
        let stage = self.grouping.then(|| ready.stage());
        let mut inner = self.inner.lock();
        let i = match inner.stages.iter().position(|s| s.stage == stage) {
            Some(i) => i,
            None => {
                inner.stages.push(StageQueue {
                    stage,
                    queue: VecDeque::new(),
                    batches: 0,
                });
                inner.stages.len() - 1
            }
        };
        self.len.fetch_add(1, SeqCst);
        inner.stages[i].queue.push_back(ready);
    }

    fn pop(&self, worker: usize) -> Option<Ready> {
        let mut inner = self.inner.lock();
        let Queues { stages, cursors } = &mut *inner;
        if cursors.len() <= worker {
            cursors.resize(worker + 1, FRESH);
        }
        let cursor = &mut cursors[worker];
        let current = stages.get(cursor.stage).filter(|s| !s.queue.is_empty());
        if cursor.left == 0 || current.is_none() {
            // The batch is over: the next stage with work after this one, round-robin (this
            // one last).
            let n = stages.len();
            let next = (1..=n)
                .map(|k| cursor.stage.wrapping_add(k) % n)
                .find(|&i| !stages[i].queue.is_empty())?;
            cursor.stage = next;
            cursor.left = self.batch;
            stages[next].batches += 1;
        }
        let ready = stages[cursor.stage].queue.pop_front();
        if ready.is_some() {
            cursor.left -= 1;
            self.len.fetch_sub(1, SeqCst);
        }
        ready
    }

    fn describe(&self, name: &str) -> String {
        let inner = self.inner.lock();
        let queued: usize = inner.stages.iter().map(|s| s.queue.len()).sum();
        let mut out = format!("{name}: {queued} queued");
        if self.grouping {
            let _ = write!(out, ", batch {}, stages", self.batch);
            for (n, s) in inner.stages.iter().enumerate() {
                let sep = if n == 0 { " " } else { ", " };
                let stage = s.stage.map_or("?", |s| s.short_name());
                let (q, b) = (s.queue.len(), s.batches);
                let _ = write!(out, "{sep}{stage}:{q} queued ({b} batches)");
            }
        }
        out
    }
}

impl Cohort {
    /// A cohort scheduler with batches of 64 turns.
    pub fn new() -> Self {
        Cohort {
            staged: Staged::new(true, DEFAULT_BATCH),
        }
    }

    /// This scheduler with up to `turns` turns of one stage per batch (at least 1: 0 counts
    /// as 1). Longer batches keep a stage's code and data in cache longer; shorter ones let
    /// the other stages in sooner.
    pub fn batch(mut self, turns: u32) -> Self {
        self.staged.batch = turns.max(1);
        self
    }
}

impl Default for Cohort {
    fn default() -> Self {
        Self::new()
    }
}

impl Fifo {
    /// A FIFO scheduler.
    pub fn new() -> Self {
        Fifo {
            staged: Staged::new(false, u32::MAX),
        }
    }
}

impl Default for Fifo {
    fn default() -> Self {
        Self::new()
    }
}

impl Scheduler for Cohort {
    fn push(&self, ready: Ready) {
        self.staged.push(ready);
    }

    fn pop(&self, worker: usize) -> Option<Ready> {
        self.staged.pop(worker)
    }

    fn len(&self) -> usize {
        self.staged.len.load(SeqCst)
    }

    fn describe(&self) -> String {
        self.staged.describe("cohort")
    }
}

impl Scheduler for Fifo {
    fn push(&self, ready: Ready) {
        self.staged.push(ready);
    }

    fn pop(&self, worker: usize) -> Option<Ready> {
        self.staged.pop(worker)
    }

    fn len(&self) -> usize {
        self.staged.len.load(SeqCst)
    }

    fn describe(&self) -> String {
        self.staged.describe("fifo")
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::group::scheduler::testing::{check_every_ready_once, ready_in};

    struct A;
    struct B;
    struct C;

    fn stage_name(r: &Ready) -> &'static str {
        r.stage().short_name()
    }

    /// Pops everything `worker` gets, as `(stage, id)`.
    fn drain(s: &dyn Scheduler, worker: usize) -> Vec<(&'static str, u64)> {
        std::iter::from_fn(|| s.pop(worker))
            .map(|r| (stage_name(&r), r.process().0))
            .collect()
    }

    #[test]
    fn stages_run_in_batches_round_robin() {
        let s = Cohort::new().batch(2);
        // Interleaved arrivals: A1 B2 C3 A4 B5 C6 A7 B8 A9.
        let stages = [Stage::of::<A>(), Stage::of::<B>(), Stage::of::<C>()];
        for id in 1..=9u64 {
            let stage = if id == 9 {
                stages[0]
            } else {
                stages[(id as usize - 1) % 3]
            };
            s.push(ready_in(id, stage, false));
        }
        assert_eq!(s.len(), 9);
        let order = drain(&s, 0);
        assert_eq!(
            order,
            [
                ("A", 1),
                ("A", 4),
                ("B", 2),
                ("B", 5),
                ("C", 3),
                ("C", 6),
                ("A", 7),
                ("A", 9),
                ("B", 8),
            ]
        );
        assert!(s.is_empty());
        assert!(
            s.describe().contains("A:0 queued (2 batches)"),
            "{}",
            s.describe()
        );
    }

    #[test]
    fn fifo_keeps_arrival_order_across_stages() {
        let s = Fifo::new();
        for id in 0..10u64 {
            let stage = if id % 2 == 0 {
                Stage::of::<A>()
            } else {
                Stage::of::<B>()
            };
            s.push(ready_in(id, stage, false));
        }
        let ids: Vec<u64> = drain(&s, 1).into_iter().map(|(_, id)| id).collect();
        assert_eq!(ids, (0..10).collect::<Vec<_>>());
        assert_eq!(s.describe(), "fifo: 0 queued");
    }

    #[test]
    fn a_batch_ends_when_its_stage_runs_dry_and_resumes_with_new_work() {
        let s = Cohort::new().batch(10);
        s.push(ready_in(1, Stage::of::<A>(), false));
        s.push(ready_in(2, Stage::of::<B>(), false));
        assert_eq!(stage_name(&s.pop(0).unwrap()), "A");
        // A is empty: B next, though A's batch had turns left.
        s.push(ready_in(3, Stage::of::<B>(), false));
        assert_eq!(s.pop(0).unwrap().process().0, 2);
        // A woken process of the stage being served joins its batch.
        s.push(ready_in(4, Stage::of::<A>(), false));
        assert_eq!(s.pop(0).unwrap().process().0, 3);
        assert_eq!(s.pop(0).unwrap().process().0, 4);
        assert!(s.pop(0).is_none());
    }

    #[test]
    fn no_stage_starves_under_endless_work_of_another() {
        let s = Cohort::new().batch(8);
        // Stage A always has work: every process popped comes straight back (yielded).
        for id in 0..100 {
            s.push(ready_in(id, Stage::of::<A>(), false));
        }
        s.push(ready_in(1000, Stage::of::<B>(), false));
        s.push(ready_in(1001, Stage::of::<C>(), false));
        let mut served_at = Vec::new();
        for turn in 0..40 {
            let r = s.pop(0).unwrap();
            if stage_name(&r) == "A" {
                s.push(r);
            } else {
                served_at.push((r.process().0, turn));
            }
        }
        // A's first batch (8 turns), then B, then C.
        assert_eq!(served_at, [(1000, 8), (1001, 9)]);
        assert_eq!(s.len(), 100);
    }

    #[test]
    fn workers_keep_their_own_batch() {
        let s = Cohort::new().batch(3);
        for id in 0..6u64 {
            s.push(ready_in(id, Stage::of::<A>(), false));
            s.push(ready_in(10 + id, Stage::of::<B>(), false));
        }
        // Both workers start on A; each runs its own batch of 3 (a shared batch would end
        // after 3 turns in all and move both to B).
        let mut w0 = Vec::new();
        let mut w1 = Vec::new();
        for _ in 0..3 {
            w0.push(stage_name(&s.pop(0).unwrap()));
            w1.push(stage_name(&s.pop(1).unwrap()));
        }
        assert_eq!(w0, ["A", "A", "A"]);
        assert_eq!(w1, ["A", "A", "A"]);
        assert_eq!(stage_name(&s.pop(0).unwrap()), "B");
        assert_eq!(stage_name(&s.pop(1).unwrap()), "B");
    }

    #[test]
    fn every_item_exactly_once_and_len() {
        let stages = [Stage::of::<A>(), Stage::of::<B>(), Stage::of::<C>()];
        let cohort = Cohort::new().batch(3);
        let fifo = Fifo::new();
        for s in [&cohort as &dyn Scheduler, &fifo] {
            check_every_ready_once(
                s,
                0x9E37_79B9_7F4A_7C15,
                3,
                |id, r| ready_in(id, stages[(r >> 8) as usize % 3], r & 0x10000 == 0),
                |_, _, _| {},
            );
        }
    }
}
