//! Schedulers: the order in which a group's ready processes go to its workers.
//!
//! The default is no [`Scheduler`] at all: the group's workers run the built-in work-stealing
//! FIFO (`worker.rs`), which is the fast path. A group built with
//! [`GroupBuilder::scheduler`](crate::GroupBuilder::scheduler) hands every ready process to
//! its scheduler instead, and its workers ask the scheduler for the next one:
//!
//! * [`PrincipalPriority`]: ready queues per principal priority with per-level quotas, so
//!   important work goes first and no level starves (AppBackplane's ready queues).
//! * [`Stride`]: proportional share of handling time across principal classes (Waldspurger
//!   and Weihl's stride scheduling).
//! * [`Cohort`]: ready processes grouped by [`Stage`] (their process type) and run stage by
//!   stage, a batch at a time, for code and data locality (Whirlwind's cohort scheduling);
//!   [`Fifo`] is the same machinery with one queue, its baseline.
//!
//! A custom scheduler is an implementation of [`Scheduler`]. It is called from every worker
//! of the group and from posting threads, so it synchronises internally (a mutex is fine: a
//! custom scheduler trades the lock-free fast path for control).

use std::time::Duration;

mod cohort;
mod priority;
mod stride;

pub use cohort::{Cohort, Fifo};
pub use priority::PrincipalPriority;
pub use stride::Stride;

pub use super::stage::Stage;
use super::task::Task;
use crate::lifecycle::ProcessId;
use crate::principal::Principal;

/// A process that is ready to run: it has messages (or a lifecycle hook) and holds its
/// scheduling token. A scheduler owns it until it hands it back from [`Scheduler::pop`], and
/// must hand back every `Ready` it was given.
///
/// It cannot be lost silently: a `Ready` dropped instead of handed back (a scheduler bug, or a
/// scheduler dropped with processes queued) terminates its process on the dropping thread, as
/// a runtime shutdown does — the `terminated` hook runs, monitors are told, and what was left
/// in its inbox goes to the dead-letter sink (invariant I3) — and logs an error.
#[must_use = "a `Ready` must be handed back from `Scheduler::pop`; dropping it terminates its process"]
pub struct Ready {
    /// `None` once handed back to a worker.
    task: Option<Task>,
    yielded: bool,
}

impl Ready {
    pub(crate) fn new(task: Task, yielded: bool) -> Self {
        Ready {
            task: Some(task),
            yielded,
        }
    }

    pub(crate) fn into_task(mut self) -> Task {
        match self.task.take() {
            Some(task) => task,
            None => unreachable!("a `Ready` holds its task until it is taken, once"),
        }
    }

    fn task(&self) -> &Task {
        match &self.task {
            Some(task) => task,
            None => unreachable!("a `Ready` holds its task until it is taken, once"),
        }
    }

    /// The principal the process serves, if any.
    pub fn principal(&self) -> Option<&Principal> {
        self.task().principal()
    }

    /// The process.
    pub fn process(&self) -> ProcessId {
        self.task().id()
    }

    /// The priority the process inherits from its queued messages (AppBackplane: "work for an
    /// object is performed at the highest priority of outstanding requests"): the highest
    /// priority among the principals of the messages posted to it with
    /// [`on_behalf`](crate::request::Request::on_behalf) since its inbox last drained;
    /// `None` if there are none. It can rise while the process is queued (the scheduler is
    /// then told: [`Scheduler::priority_raised`]); read it when placing the process, under
    /// the lock that `priority_raised` takes too.
    pub fn inherited_priority(&self) -> Option<u8> {
        self.task().inherited_priority()
    }

    /// The process's stage: its process type. Processes of one stage run the same handler
    /// code over similar data, so running them back to back keeps that code and data in the
    /// caches ([`Cohort`]). One virtual call, no allocation.
    pub fn stage(&self) -> Stage {
        self.task().stage()
    }

    /// Whether the process is ready because it used up its run budget with messages left
    /// (rather than because a message or a kill request arrived while it was idle). Fair
    /// schedulers put such a process behind the others of its level.
    pub fn yielded(&self) -> bool {
        self.yielded
    }
}

impl Drop for Ready {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            tracing::error!(
                process = %task.id(),
                group = task.group_name(),
                "a scheduler dropped a ready process instead of handing it back; terminating it"
            );
            task.abandon();
        }
    }
}

impl std::fmt::Debug for Ready {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ready")
            .field("process", &self.process())
            .field("principal", &self.principal())
            .field("stage", &self.stage())
            .field("yielded", &self.yielded)
            .finish()
    }
}

/// What a worker reports after running one turn of a process a scheduler gave it.
#[derive(Debug)]
#[non_exhaustive]
pub struct TurnReport<'a> {
    /// The principal the process serves, if any.
    pub principal: Option<&'a Principal>,
    /// Messages handled in the turn.
    pub handled: usize,
    /// Wall-clock time the turn took (measured only when
    /// [`Scheduler::wants_turn_times`] is true; zero otherwise).
    pub elapsed: Duration,
}

/// The order in which a group's ready processes run. See the [module docs](crate::scheduler).
///
/// # Contract
///
/// * Every [`Ready`] given to [`push`](Scheduler::push) must come back out of
///   [`pop`](Scheduler::pop) exactly once (a process is in at most one scheduler queue at a
///   time: it holds its token while queued).
/// * [`len`](Scheduler::len) must not report zero while a `Ready` is queued: an idle worker
///   sleeps only after seeing zero, and it is woken by the next push.
/// * No method may block for long: `push` runs in posting threads, and all methods run on the
///   group's workers.
///
/// `Send + Sync + 'static`, not [`Isolated`](crate::Isolated): a scheduler is part of the
/// group, shared by its workers and posting threads, never process state.
pub trait Scheduler: Send + Sync + 'static {
    /// Queues a ready process.
    fn push(&self, ready: Ready);

    /// The next process for worker number `worker` (0-based, below the group's maximum
    /// thread count) to run, if any.
    fn pop(&self, worker: usize) -> Option<Ready>;

    /// How many processes are queued.
    fn len(&self) -> usize;

    /// Whether nothing is queued.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the runtime should time each turn for [`turn_finished`](Scheduler::turn_finished)
    /// (two clock reads per turn). Default: `false`.
    fn wants_turn_times(&self) -> bool {
        false
    }

    /// Called after each turn of a process this scheduler handed out. Default: nothing.
    fn turn_finished(&self, turn: &TurnReport<'_>) {
        let _ = turn;
    }

    /// Called when a process that may be queued here inherited a higher priority
    /// ([`Ready::inherited_priority`]): a message was posted to it on behalf of a principal of
    /// higher priority while it held its token. A priority scheduler moves the process up if it
    /// is queued (it may also be running, or not be here: then nothing is to be done).
    /// Default: nothing.
    fn priority_raised(&self, process: ProcessId) {
        let _ = process;
    }

    /// A short description of the scheduler's state for [`GroupStats`](crate::control::GroupStats).
    fn describe(&self) -> String;
}

#[cfg(all(test, not(loom)))]
pub(crate) mod testing {
    //! Ready processes without a runtime, for scheduler unit tests.

    use std::sync::atomic::AtomicU16;
    use std::sync::atomic::Ordering::Relaxed;
    use std::sync::Arc;

    use super::{Ready, Scheduler, Stage};
    use crate::group::{Recorder, Runnable};
    use crate::lifecycle::{ExitReason, ProcessId};
    use crate::principal::Principal;

    pub(crate) struct Fake {
        id: ProcessId,
        principal: Option<Principal>,
        /// The inherited priority plus one (0: none).
        pub(crate) inherited: AtomicU16,
        stage: Option<Stage>,
    }

    impl Runnable for Fake {
        fn run(self: Arc<Self>, _: bool, _: &Recorder) -> usize {
            0
        }
        fn abandon(self: Arc<Self>) {}
        fn group_name(&self) -> &str {
            "test"
        }
        fn kill(self: Arc<Self>, _: ExitReason) {}
        fn id(&self) -> ProcessId {
            self.id
        }
        fn principal(&self) -> Option<&Principal> {
            self.principal.as_ref()
        }
        fn inherited_priority(&self) -> Option<u8> {
            self.inherited.load(Relaxed).checked_sub(1).map(|p| p as u8)
        }
        fn request_move(
            self: Arc<Self>,
            _: &dyn std::any::Any,
        ) -> Result<(), crate::group::MoveError> {
            Err(crate::group::MoveError::SameGroup("test".into()))
        }
        fn stage(&self) -> Stage {
            self.stage.unwrap_or_else(Stage::of::<Self>)
        }
    }

    /// A ready process numbered `id` serving `principal`.
    pub(crate) fn ready(id: u64, principal: Option<Principal>, yielded: bool) -> Ready {
        Ready::new(fake(id, principal), yielded)
    }

    /// A process numbered `id` serving `principal`, to make `Ready`s of with [`of`] (and whose
    /// inherited priority a test may change).
    pub(crate) fn fake(id: u64, principal: Option<Principal>) -> Arc<Fake> {
        Arc::new(Fake {
            id: ProcessId(id),
            principal,
            inherited: AtomicU16::new(0),
            stage: None,
        })
    }

    /// A newly woken ready `process`.
    pub(crate) fn of(process: &Arc<Fake>) -> Ready {
        Ready::new(Arc::clone(process) as crate::group::Task, false)
    }

    /// A ready process numbered `id` of stage `stage`.
    pub(crate) fn ready_in(id: u64, stage: Stage, yielded: bool) -> Ready {
        Ready::new(
            Arc::new(Fake {
                id: ProcessId(id),
                principal: None,
                inherited: AtomicU16::new(0),
                stage: Some(stage),
            }),
            yielded,
        )
    }

    /// Checks that `s` hands back every `Ready` exactly once and keeps `len` and `is_empty`
    /// exact, over 5,000 processes pushed and popped in a pseudo-random interleaving (from
    /// `seed`) by `workers` workers. `make(id, r)` builds the `id`-th process from the draw
    /// `r`; `after_pop(s, ready, r)` runs after each pop (for schedulers fed turn reports).
    pub(crate) fn check_every_ready_once(
        s: &dyn Scheduler,
        seed: u64,
        workers: usize,
        mut make: impl FnMut(u64, u64) -> Ready,
        mut after_pop: impl FnMut(&dyn Scheduler, &Ready, u64),
    ) {
        let mut x = seed;
        let mut xorshift = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut seen = vec![false; 5000];
        let (mut pushed, mut popped) = (0usize, 0usize);
        while popped < seen.len() {
            let r = xorshift();
            if pushed < seen.len() && r % 3 != 0 {
                s.push(make(pushed as u64, r));
                pushed += 1;
            } else if let Some(item) = s.pop((r >> 4) as usize % workers) {
                let id = item.process().0 as usize;
                assert!(!seen[id], "process {id} popped twice");
                seen[id] = true;
                popped += 1;
                after_pop(s, &item, r);
            } else {
                assert_eq!(pushed, popped);
            }
            assert_eq!(s.len(), pushed - popped);
            assert_eq!(s.is_empty(), pushed == popped);
        }
        assert!(s.pop(0).is_none());
        assert!(seen.iter().all(|&s| s));
    }
}
