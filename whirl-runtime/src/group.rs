//! Groups: a set of processes sharing a worker pool, a run budget and a message predicate.
//!
//! Scheduling within a group is work-stealing on crossbeam-deque: each worker has a local FIFO
//! queue (bounded: beyond [`LOCAL_QUEUE_CAP`] tasks overflow to the group's injector) and an
//! optional LIFO slot for the process most recently woken by a handler on that worker, which
//! keeps request/response pairs on one core. Tasks posted from outside the group go to the
//! injector. Idle workers steal, then sleep (`idle.rs`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_deque::{Injector, Steal, Stealer};
use parking_lot::{Mutex, RwLock};

use crate::cell::Task;
use crate::control_thread::Entry;
use crate::controller::{AdaptiveConcurrency, ConcurrencyController, Controls};
use crate::counters::{Counters, Event, MessageCounts};
use crate::idle::Idle;
use crate::pool::{Pool, ThreadRange};
use crate::predicate::MessagePredicate;
use crate::runtime::RuntimeShared;
use crate::scheduler::{Ready, Scheduler};
use crate::stats::{self, GroupStats};
use crate::worker::schedule_on_current_worker;

/// Tasks a worker keeps locally before overflowing to the injector.
pub(crate) const LOCAL_QUEUE_CAP: usize = 256;

/// Default number of messages a process handles per turn before yielding its worker.
pub const DEFAULT_BUDGET: usize = 64;

pub(crate) struct GroupShared {
    pub(crate) name: String,
    pub(crate) runtime: Arc<RuntimeShared>,
    pub(crate) injector: Injector<Task>,
    /// Indexed by worker slot; `None` for a vacant slot.
    pub(crate) stealers: RwLock<Vec<Option<Stealer<Task>>>>,
    pub(crate) idle: Idle,
    pub(crate) counters: Counters,
    pub(crate) pool: Pool,
    budget: AtomicUsize,
    pub(crate) lifo_slot: bool,
    /// `None`: the built-in work-stealing FIFO.
    pub(crate) scheduler: Option<Box<dyn Scheduler>>,
    predicate: Option<Box<dyn MessagePredicate>>,
    /// Whether the predicate wants completion reports (cached: asked once, at build).
    observes: bool,
    /// Whether the predicate decides admissions now (see `update_admission`).
    admission_active: AtomicBool,
    /// Whether a thread controller may still grow the pool, which holds admission control
    /// off until the pool is at its maximum.
    grows: bool,
    pub(crate) controllers: Mutex<Vec<Entry>>,
    pub(crate) shares_state: Option<&'static str>,
    stopped: AtomicBool,
}

impl GroupShared {
    #[inline]
    pub(crate) fn budget(&self) -> usize {
        self.budget.load(Ordering::Relaxed)
    }

    pub(crate) fn set_budget(&self, budget: usize) {
        self.budget.store(budget.max(1), Ordering::Relaxed);
    }

    /// The group's predicate, whether or not it is deciding admissions now.
    #[inline]
    pub(crate) fn predicate(&self) -> Option<&dyn MessagePredicate> {
        self.predicate.as_deref()
    }

    /// The predicate to consult for a post now: none while a thread controller can still
    /// grow the pool (controllers do not fight; see `controller/mod.rs`).
    #[inline]
    pub(crate) fn admission(&self) -> Option<&dyn MessagePredicate> {
        match &self.predicate {
            Some(p) if self.admission_active.load(Ordering::Relaxed) => Some(p.as_ref()),
            _ => None,
        }
    }

    pub(crate) fn update_admission(&self) {
        let active = !self.grows || self.pool.target() >= self.pool.range.max();
        self.admission_active.store(active, Ordering::Relaxed);
    }

    /// Whether admitted messages report completions to the predicate (see `observe.rs`).
    #[inline]
    pub(crate) fn observes(&self) -> bool {
        self.observes
    }

    pub(crate) fn count_rejected(&self) {
        self.counters.add(Event::Posted, 1);
        self.counters.add(Event::Rejected, 1);
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Puts a process whose token the caller holds on a run queue. From one of this group's
    /// workers it goes to that worker (LIFO slot first); from anywhere else, to the injector.
    #[inline]
    pub(crate) fn schedule(self: &Arc<Self>, task: Task) {
        if let Some(scheduler) = &self.scheduler {
            self.push_scheduled(scheduler.as_ref(), task, false);
        } else if let Err(task) = schedule_on_current_worker(self, task, true) {
            self.push_remote(task);
        }
    }

    /// Re-queues a process that used up its budget, behind the others (no LIFO slot).
    pub(crate) fn yield_now(self: &Arc<Self>, task: Task) {
        if let Some(scheduler) = &self.scheduler {
            self.push_scheduled(scheduler.as_ref(), task, true);
        } else if let Err(task) = schedule_on_current_worker(self, task, false) {
            self.push_remote(task);
        }
    }

    fn push_scheduled(&self, scheduler: &dyn Scheduler, task: Task, yielded: bool) {
        if self.is_stopped() {
            // No worker will run it: terminate it here (see `push_remote`).
            task.abandon();
            return;
        }
        scheduler.push(Ready::new(task, yielded));
        self.idle.notify_one();
    }

    pub(crate) fn push_remote(&self, task: Task) {
        if self.is_stopped() {
            // The runtime has shut down and no worker will run the process (a monitor told of
            // a termination after shutdown, a message racing with it): terminate it on this
            // thread, so its hook runs and what it was sent is dead-lettered, not dropped.
            task.abandon();
            return;
        }
        self.injector.push(task);
        self.idle.notify_one();
    }

    /// Whether any queue a worker can take from holds work.
    pub(crate) fn has_visible_work(&self) -> bool {
        if let Some(scheduler) = &self.scheduler {
            return !scheduler.is_empty();
        }
        !self.injector.is_empty() || self.stealers.read().iter().flatten().any(|s| !s.is_empty())
    }

    /// Stops the workers once they are idle; returns their join handles. Whatever is still
    /// queued is terminated on the calling thread ([`GroupShared::rescue`]).
    pub(crate) fn stop(&self) -> Vec<JoinHandle<()>> {
        self.stopped.store(true, Ordering::Release);
        self.idle.notify_all();
        self.rescue();
        self.pool.take_handles()
    }

    /// What this group's workers are running now.
    pub(crate) fn running(&self) -> Vec<crate::probe::Running> {
        self.pool
            .slots
            .read()
            .iter()
            .filter_map(|slot| slot.probe.read())
            .collect()
    }

    /// Takes every process queued in this group (the injector, the group's scheduler, and
    /// the workers' local queues, which can be stolen from even while their worker is stuck in
    /// a handler) and terminates each on the calling thread with
    /// [`Runnable::abandon`](crate::cell::Runnable::abandon): its pending kill, its hook, its
    /// inbox dead-lettered. Shutdown calls it when workers cannot run them. Returns how many
    /// it took.
    pub(crate) fn rescue(&self) -> usize {
        let mut taken = 0;
        let mut abandon = |task: Task| {
            task.abandon();
            taken += 1;
        };
        take_all(|| self.injector.steal(), &mut abandon);
        if let Some(scheduler) = &self.scheduler {
            while let Some(ready) = scheduler.pop(0) {
                abandon(ready.into_task());
            }
        }
        // Cloned out of the lock: abandoning a process can schedule others.
        let stealers: Vec<_> = self.stealers.read().iter().flatten().cloned().collect();
        for stealer in stealers {
            take_all(|| stealer.steal(), &mut abandon);
        }
        taken
    }

    /// A snapshot of the group's statistics.
    pub(crate) fn stats(&self) -> GroupStats {
        let slots: Vec<_> = self.pool.slots.read().clone();
        let merged = stats::merge(slots.iter().map(|s| &s.stats));
        let now = self.pool.now();
        let idle_time = slots.iter().map(|s| s.stats.idle_total(now).0).sum();
        GroupStats {
            name: self.name.clone(),
            counts: self.counters.snapshot(),
            queue_length: self.counters.queued_estimate(),
            queue_latency: merged.queue_latency,
            handling_time: merged.handling,
            idle_time,
            lock_latency: merged.lock_wait,
            threads: self.pool.live(),
            thread_range: (self.pool.range.min(), self.pool.range.max()),
            budget: self.budget(),
            admission_active: self.predicate.is_some()
                && self.admission_active.load(Ordering::Relaxed),
            scheduler: self
                .scheduler
                .as_ref()
                .map_or_else(|| "work-stealing".to_owned(), |s| s.describe()),
            controllers: self
                .controllers
                .lock()
                .iter()
                .map(|c| c.controller().describe())
                .collect(),
            principals: merged.principals,
        }
    }
}

/// Hands every task `steal` yields to `each`, until the queue is empty.
fn take_all(steal: impl Fn() -> Steal<Task>, mut each: impl FnMut(Task)) {
    loop {
        match steal() {
            Steal::Success(task) => each(task),
            Steal::Empty => return,
            Steal::Retry => {}
        }
    }
}

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

    /// Number of worker threads now.
    pub fn threads(&self) -> usize {
        self.shared.pool.live()
    }

    /// The range the thread count may move in.
    pub fn thread_range(&self) -> ThreadRange {
        self.shared.pool.range
    }

    /// A snapshot of the group's statistics: counters, queue length, queue-latency and
    /// handling-time percentiles, idle time, lock latency, threads, controller state and
    /// per-principal counts. See [`stats`](crate::stats) for how each is measured.
    pub fn stats(&self) -> GroupStats {
        self.shared.stats()
    }

    /// Why this group hosts processes that share state, if it was built with
    /// [`GroupBuilder::shares_state`].
    pub fn shared_state_reason(&self) -> Option<&'static str> {
        self.shared.shares_state
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
    runtime: Arc<RuntimeShared>,
    name: String,
    threads: ThreadRange,
    budget: usize,
    lifo_slot: bool,
    scheduler: Option<Box<dyn Scheduler>>,
    predicate: Option<Box<dyn MessagePredicate>>,
    controllers: Vec<Box<dyn ConcurrencyController>>,
    shares_state: Option<&'static str>,
}

impl GroupBuilder {
    pub(crate) fn new(runtime: Arc<RuntimeShared>, name: String) -> Self {
        GroupBuilder {
            runtime,
            name,
            threads: ThreadRange::from(default_threads()),
            budget: DEFAULT_BUDGET,
            lifo_slot: true,
            scheduler: None,
            predicate: None,
            controllers: Vec::new(),
            shares_state: None,
        }
    }

    /// Number of worker threads: a number (at least 1), or a range such as `1..=8` for a
    /// [thread controller](Self::controller) to move in (the group starts at the minimum).
    /// Defaults to the number of cores. With a range and no controller, the group gets
    /// [`AdaptiveConcurrency`](crate::controller::AdaptiveConcurrency), the paper's default.
    pub fn threads(mut self, threads: impl Into<ThreadRange>) -> Self {
        self.threads = threads.into();
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
    /// same kind replaces the first). See [`controller`](crate::controller).
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

    /// Whether a process woken by a handler runs next on the same worker (default `true`).
    /// Good for request/response latency; turn it off to measure or for strict FIFO fairness.
    pub fn lifo_slot(mut self, enabled: bool) -> Self {
        self.lifo_slot = enabled;
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
    /// The reason shows in failures and logs: say what is shared and why isolation was not
    /// viable.
    pub fn shares_state(mut self, reason: &'static str) -> Self {
        self.shares_state = Some(reason);
        self
    }

    /// Creates the group and starts its workers.
    ///
    /// Group names should be unique: [`Runtime::group_named`](crate::Runtime::group_named) and
    /// [`Process::GROUP`](crate::Process::GROUP) find the first group built with a name.
    pub fn build(mut self) -> Group {
        let has_thread_controller = |cs: &[Box<dyn ConcurrencyController>]| {
            cs.iter().any(|c| c.controls() == Controls::Threads)
        };
        if !self.threads.is_fixed() && !has_thread_controller(&self.controllers) {
            self.controllers
                .push(Box::new(AdaptiveConcurrency::default()));
        }
        let grows = !self.threads.is_fixed() && has_thread_controller(&self.controllers);
        let shared = Arc::new(GroupShared {
            name: self.name,
            runtime: Arc::clone(&self.runtime),
            injector: Injector::new(),
            stealers: RwLock::new(Vec::new()),
            idle: Idle::new(),
            counters: Counters::new(),
            pool: Pool::new(self.threads, self.threads.min()),
            budget: AtomicUsize::new(self.budget),
            lifo_slot: self.lifo_slot,
            scheduler: self.scheduler,
            observes: self.predicate.as_ref().is_some_and(|p| p.observes()),
            predicate: self.predicate,
            admission_active: AtomicBool::new(true),
            grows,
            controllers: Mutex::new(self.controllers.into_iter().map(Entry::new).collect()),
            shares_state: self.shares_state,
            stopped: AtomicBool::new(false),
        });
        shared.resize(self.threads.min());
        self.runtime.add_group(Arc::clone(&shared));
        if !shared.controllers.lock().is_empty() {
            self.runtime.control.ensure_running(&self.runtime);
        }
        Group { shared }
    }
}

pub(crate) fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
}
