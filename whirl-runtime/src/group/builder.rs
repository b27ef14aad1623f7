//! Groups as users see them: a [`Group`] handle, and the [`GroupBuilder`] that creates one
//! (its pool, scheduler, predicate and controllers) and registers it with the runtime.

use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_deque::Injector;
use parking_lot::{Mutex, RwLock};

use super::control_thread::Controlled;
use super::cpu_budget::{CpuBudget, CpuGovernor};
use super::idle::Idle;
use super::pool::{Pool, ThreadRange};
use super::scheduler::Scheduler;
use super::shared::{Domain, GroupShared, Kernel, DEFAULT_BUDGET};
use super::watchdog::{Watchdog, DEFAULT_SLOW_TURN_THRESHOLD};
use crate::admission::MessagePredicate;
use crate::control::{
    AdaptiveConcurrency, ConcurrencyController, Controls, Counters, Entry, GroupStats,
    MessageCounts,
};

/// A handle on a group: spawn processes into it, read its counters.
#[derive(Clone)]
pub struct Group {
    shared: Arc<GroupShared>,
}

impl Group {
    pub(crate) fn from_shared(shared: Arc<GroupShared>) -> Self {
        Group { shared }
    }

    pub(crate) fn shared(&self) -> &Arc<GroupShared> {
        &self.shared
    }

    /// The group's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The group's message counters.
    pub fn counts(&self) -> MessageCounts {
        self.shared.counters.snapshot()
    }

    /// Number of worker threads now: for a group on the shared workers, its concurrency
    /// limit (how many of them may run its turns at once).
    pub fn threads(&self) -> usize {
        self.shared.pool.live()
    }

    /// Whether the group owns its threads ([`GroupBuilder::threads`]) rather than running on
    /// the runtime's shared workers.
    pub fn is_dedicated(&self) -> bool {
        self.shared.domain.is_none()
    }

    /// The range the thread count (or, on shared workers, the concurrency limit) may move in.
    pub fn thread_range(&self) -> ThreadRange {
        self.shared.pool.range
    }

    /// A snapshot of the group's statistics: counters, queue length, queue-latency and
    /// handling-time percentiles, idle time, lock latency, threads, controller state and
    /// per-principal counts. See [`stats`](crate::control) for how each is measured.
    pub fn stats(&self) -> GroupStats {
        self.shared.stats()
    }

    /// Why this group hosts processes that share state, if it was built with
    /// [`GroupBuilder::shares_state`].
    pub fn shared_state_reason(&self) -> Option<&'static str> {
        self.shared.shares_state.as_ref().map(|fate| fate.reason)
    }

    /// Messages a process handles per turn before yielding.
    pub fn budget(&self) -> usize {
        self.shared.budget()
    }

    /// Changes the run budget (at least 1). Takes effect at each process's next turn.
    pub fn set_budget(&self, budget: usize) {
        self.shared.set_budget(budget);
    }
}

// SAFETY: a handle on a group's configuration, which the runtime synchronises; it grants no
// access to any process's state (invariant I8).
unsafe impl crate::isolation::Isolated for Group {}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("name", &self.shared.name)
            .field("threads", &self.threads())
            .finish_non_exhaustive()
    }
}

/// Configures a new group; made by [`Runtime::group`](crate::Runtime::group).
#[must_use = "a group builder does nothing until `build` is called"]
pub struct GroupBuilder {
    kernel: Arc<Kernel>,
    name: String,
    threads: ThreadRange,
    /// Whether the group owns its threads (`threads` was called).
    dedicated: bool,
    share: u64,
    budget: usize,
    lifo_slot: bool,
    scheduler: Option<Box<dyn Scheduler>>,
    predicate: Option<Box<dyn MessagePredicate>>,
    controllers: Vec<Box<dyn ConcurrencyController>>,
    slow_turn_threshold: Option<Duration>,
    shares_state: Option<&'static str>,
    cpu_budget: Option<CpuBudget>,
}

impl GroupBuilder {
    /// The slow-turn threshold of a group whose builder does not set one
    /// ([`slow_turn_threshold`](Self::slow_turn_threshold)): 100 ms.
    pub const DEFAULT_SLOW_TURN_THRESHOLD: Duration = DEFAULT_SLOW_TURN_THRESHOLD;

    /// The weight of a group that does not set one ([`share`](Self::share)).
    pub const DEFAULT_SHARE: u32 = super::workers::DEFAULT_SHARE as u32;

    pub(crate) fn new(kernel: Arc<Kernel>, name: String) -> Self {
        GroupBuilder {
            threads: ThreadRange::from(kernel.worker_count),
            kernel,
            name,
            dedicated: false,
            share: super::workers::DEFAULT_SHARE,
            budget: DEFAULT_BUDGET,
            lifo_slot: true,
            scheduler: None,
            predicate: None,
            controllers: Vec::new(),
            slow_turn_threshold: Some(DEFAULT_SLOW_TURN_THRESHOLD),
            shares_state: None,
            cpu_budget: None,
        }
    }

    /// Gives the group threads of its own (a *dedicated* group), instead of running it on the
    /// runtime's shared workers: a number (at least 1), or a range such as `1..=8` for a
    /// [thread controller](Self::controller) to move in (the group starts at the minimum).
    /// With a range and no controller, the group gets [`AdaptiveConcurrency`], the paper's
    /// default.
    ///
    /// Own threads are for work that must not share them: handlers that block (sleep, wait on
    /// a lock or on blocking I/O), or a group that must be isolated from everything else.
    /// Crossing into or out of a dedicated group costs a thread wake-up per message that
    /// finds its process idle; crossing between groups on the shared workers does not.
    pub fn threads(mut self, threads: impl Into<ThreadRange>) -> Self {
        self.threads = threads.into();
        self.dedicated = true;
        self
    }

    /// Keeps the group on the runtime's shared workers (the default) and limits how many of
    /// them may run its turns at once: a number (at least 1), or a range for a
    /// [thread controller](Self::controller) to move in (starting at the minimum; with no
    /// controller, [`AdaptiveConcurrency`]). Defaults to every shared worker. Undoes
    /// [`threads`](Self::threads).
    pub fn concurrency(mut self, limit: impl Into<ThreadRange>) -> Self {
        self.threads = limit.into();
        self.dedicated = false;
        self
    }

    /// The group's weight on the shared workers (at least 1; default
    /// [`DEFAULT_SHARE`](Self::DEFAULT_SHARE), 100). When several groups have work, the workers
    /// divide their time among them in proportion to their shares (weighted fair queuing, as
    /// Seastar's scheduling groups share a core): a group of share 200 gets twice the handling
    /// time of one of share 100. An idle group's unused time is not banked. Ignored by a
    /// dedicated group.
    pub fn share(mut self, share: u32) -> Self {
        self.share = u64::from(share.max(1));
        self
    }

    /// The order in which ready processes run (default: work-stealing FIFO, the fast path).
    /// See [`scheduler`](crate::scheduler).
    pub fn scheduler(mut self, scheduler: impl Scheduler) -> Self {
        self.scheduler = Some(Box::new(scheduler));
        self
    }

    /// Adds a concurrency controller, sampled by the runtime's controller thread: one that
    /// controls the thread count and/or one that controls the run budget (a second of the
    /// same kind replaces the first). See [`control`](crate::control).
    pub fn controller(mut self, controller: impl ConcurrencyController) -> Self {
        let controls = controller.controls();
        self.controllers.retain(|c| c.controls() != controls);
        self.controllers.push(Box::new(controller));
        self
    }

    /// Messages a process handles per turn before yielding its worker (at least 1).
    pub fn budget(mut self, budget: usize) -> Self {
        self.budget = budget.max(1);
        self
    }

    /// Whether a process woken by a handler runs next on the same worker (default `true`), when
    /// that overtakes nobody: the worker's slot is free and nothing of the group waits in its
    /// queue (else it queues behind, in order). Spares a queue operation per hop of a
    /// request/response chain; turn it off to measure.
    pub fn lifo_slot(mut self, enabled: bool) -> Self {
        self.lifo_slot = enabled;
        self
    }

    /// How long a turn may hold a worker before it is reported as slow (default
    /// [100 ms](Self::DEFAULT_SLOW_TURN_THRESHOLD)); `None` turns the report off.
    ///
    /// A handler that blocks (sleeps, waits on a lock or on blocking I/O) or computes for long
    /// keeps its worker from every other process of the group. The runtime's controller thread
    /// looks at what each worker runs every half threshold (never more often than every 5 ms),
    /// and for each turn found running longer than the threshold it
    ///
    /// * emits one `tracing` warning, `"slow turn: a handler held a worker longer than the
    ///   group's threshold"`, with the fields `process` (its id), `group`, `message_type` (the
    ///   type of the message being handled), `duration_ms` (how long the turn had run when
    ///   noticed; it may run on) and `threshold_ms`;
    /// * counts it in [`GroupStats::slow_turns`](crate::control::GroupStats::slow_turns);
    /// * counts its worker in `blocked_workers` while the turn lasts
    ///   ([`GroupStats`] and the [`GroupSample`](crate::control::GroupSample) concurrency
    ///   controllers see: [`AdaptiveConcurrency`] gives a group whose workers are blocked and
    ///   whose messages wait another thread).
    ///
    /// A turn is the run of up to [`budget`](Self::budget) messages of one process: many
    /// messages that together exceed the threshold are reported too. Nothing is measured on
    /// the message path; the cost is the controller thread's look, a few loads per worker.
    /// Put processes whose handlers are *meant* to block in a group of their own, with a
    /// threshold that fits them (or `None`).
    pub fn slow_turn_threshold(mut self, threshold: Option<Duration>) -> Self {
        self.slow_turn_threshold = threshold;
        self
    }

    /// Limits the CPU the group uses: per integration period, its workers together spend at
    /// most the budget's [allowance](CpuBudget::allowance) of handling time (a share of the
    /// machine's cores), then wait for the next period, unless the rest of the runtime leaves
    /// the CPU idle (a *virtual tick* re-arms the budget early). Messages wait meanwhile;
    /// none is lost. See [`CpuBudget`]; [`GroupStats::cpu_budget`](crate::control::GroupStats::cpu_budget)
    /// reports what was spent, how often the group waited and the virtual ticks.
    ///
    /// Every turn of such a group is timed (two clock reads), so budget groups whose work is
    /// worth limiting, not the message-passing fast path.
    pub fn cpu_budget(mut self, budget: CpuBudget) -> Self {
        self.cpu_budget = Some(budget);
        self
    }

    /// The group's admission control.
    pub fn predicate(mut self, predicate: impl MessagePredicate) -> Self {
        self.predicate = Some(Box::new(predicate));
        self
    }

    /// Declares, loudly, that this group hosts processes that knowingly share mutable state
    /// (the Whirlwind paper's section VI-C: processes around an in-memory database that locks
    /// for itself), and why. Only such a group runs processes declared
    /// `#[process(unsafe(shares_state = "..."))]`; the sharing stays confined to it.
    ///
    /// The group's processes fail together: when one fails, every other one is killed with
    /// [`FailureKind::SharedState`](crate::FailureKind::SharedState), since the state they
    /// share may be left inconsistent (see `group/fate.rs`). A normal end or a supervisor's
    /// stop takes nobody with it. Processes cannot move into or out of such a group.
    ///
    /// The reason shows in failures and logs: say what is shared and why isolation was not
    /// viable.
    pub fn shares_state(mut self, reason: &'static str) -> Self {
        self.shares_state = Some(reason);
        self
    }

    /// Creates the group: on the runtime's shared workers (started with the first such group),
    /// or with its own threads, started now.
    ///
    /// Group names are unique within a runtime (a process's
    /// [`Process::GROUP`](crate::Process::GROUP) names one group): a second group with a name
    /// already built is refused, as is a group whose workers cannot be started.
    pub fn build(mut self) -> Result<Group, GroupError> {
        if self.kernel.is_closing() {
            return Err(GroupError::ShutDown { name: self.name });
        }
        if self.kernel.group_named(&self.name).is_some() {
            return Err(GroupError::NameTaken { name: self.name });
        }
        let has_thread_controller = |cs: &[Box<dyn ConcurrencyController>]| {
            cs.iter().any(|c| c.controls() == Controls::Threads)
        };
        if !self.threads.is_fixed() && !has_thread_controller(&self.controllers) {
            self.controllers
                .push(Box::new(AdaptiveConcurrency::default()));
        }
        let grows = !self.threads.is_fixed() && has_thread_controller(&self.controllers);
        let domain = if self.dedicated || self.kernel.stepped {
            None
        } else {
            let workers = self
                .kernel
                .shared_workers()
                .map_err(|_| GroupError::StartWorkers {
                    name: self.name.clone(),
                    started: 0,
                    wanted: self.kernel.worker_count,
                })?;
            let index = workers.reserve();
            let vclock = workers.vclock.load(std::sync::atomic::Ordering::Relaxed);
            Some(Domain::new(workers, index, self.share, vclock))
        };
        let shared = Arc::new(GroupShared {
            name: self.name,
            kernel: Arc::clone(&self.kernel),
            injector: Injector::new(),
            stealers: RwLock::new(Vec::new()),
            idle: Idle::new(),
            counters: Counters::new(),
            rejections: Default::default(),
            pool: Pool::new(self.threads, self.threads.min()),
            budget: AtomicUsize::new(self.budget),
            lifo_slot: self.lifo_slot,
            scheduler: self.scheduler,
            observes: self.predicate.as_ref().is_some_and(|p| p.observes()),
            predicate: self.predicate,
            admission_active: AtomicBool::new(true),
            grows,
            controllers: Mutex::new(self.controllers.into_iter().map(Entry::new).collect()),
            watchdog: Watchdog::new(self.slow_turn_threshold),
            placement: Default::default(),
            shares_state: self.shares_state.map(super::fate::SharedFate::new),
            stopped: AtomicBool::new(false),
            cpu_budget: self.cpu_budget.map(|b| Box::new(CpuGovernor::new(b))),
            domain,
        });
        if let Some(domain) = &shared.domain {
            shared.pool.shared_slots(domain.workers.count);
        }
        shared.resize(self.threads.min());
        if !shared.kernel.stepped && shared.pool.live() < self.threads.min() {
            let name = shared.name.clone();
            join_all(shared.stop());
            return Err(GroupError::StartWorkers {
                name,
                started: shared.pool.live(),
                wanted: self.threads.min(),
            });
        }
        if let Err(shared) = self.kernel.add_group(Arc::clone(&shared)) {
            // Another builder took the name meanwhile.
            let name = shared.name.clone();
            join_all(shared.stop());
            return Err(GroupError::NameTaken { name });
        }
        if let Some(domain) = &shared.domain {
            domain.workers.attach(domain.index, Arc::clone(&shared));
            // A spawn may have queued a task since `add_group` made the group findable, its
            // wake-up finding a worker that did not know the group yet.
            domain.workers.idle.notify_one();
        }
        let has_controllers = !shared.controllers.lock().is_empty();
        if has_controllers || shared.watchdog.threshold().is_some() {
            let watched: Arc<dyn Controlled> = shared.clone();
            self.kernel.control.watch(Arc::downgrade(&watched));
        }
        Ok(Group { shared })
    }
}

fn join_all(handles: Vec<std::thread::JoinHandle<()>>) {
    for handle in handles {
        let _ = handle.join();
    }
}

/// Why a group could not be built ([`GroupBuilder::build`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GroupError {
    /// The runtime already has a group of this name.
    #[error("the runtime already has a group named `{name}`: group names are unique")]
    NameTaken {
        /// The name asked for.
        name: String,
    },
    /// The operating system refused to start the group's minimum number of worker threads.
    #[error("group `{name}`: started {started} of the {wanted} worker threads it needs")]
    StartWorkers {
        /// The group's name.
        name: String,
        /// Threads that did start (and were stopped again).
        started: usize,
        /// The group's minimum.
        wanted: usize,
    },
    /// The runtime is shutting down.
    #[error("group `{name}` was built after the runtime shut down")]
    ShutDown {
        /// The name asked for.
        name: String,
    },
}
