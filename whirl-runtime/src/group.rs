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

use crossbeam_deque::{Injector, Stealer};
use parking_lot::{Mutex, RwLock};

use crate::cell::Task;
use crate::counters::{Counters, Event, MessageCounts};
use crate::idle::Idle;
use crate::predicate::MessagePredicate;
use crate::runtime::RuntimeShared;
use crate::worker::{schedule_on_current_worker, WorkerThread};

/// Tasks a worker keeps locally before overflowing to the injector.
pub(crate) const LOCAL_QUEUE_CAP: usize = 256;

/// Default number of messages a process handles per turn before yielding its worker.
pub const DEFAULT_BUDGET: usize = 64;

pub(crate) struct GroupShared {
    pub(crate) name: String,
    pub(crate) runtime: Arc<RuntimeShared>,
    pub(crate) injector: Injector<Task>,
    pub(crate) stealers: RwLock<Vec<Stealer<Task>>>,
    pub(crate) idle: Idle,
    pub(crate) counters: Counters,
    budget: AtomicUsize,
    pub(crate) lifo_slot: bool,
    predicate: Option<Box<dyn MessagePredicate>>,
    /// Whether the predicate wants completion reports (cached: asked once, at build).
    observes: bool,
    pub(crate) shares_state: Option<&'static str>,
    stopped: AtomicBool,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

impl GroupShared {
    #[inline]
    pub(crate) fn budget(&self) -> usize {
        self.budget.load(Ordering::Relaxed)
    }

    #[inline]
    pub(crate) fn predicate(&self) -> Option<&dyn MessagePredicate> {
        self.predicate.as_deref()
    }

    /// Whether admitted messages carry an observation stamp (see `observe.rs`).
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
        if let Err(task) = schedule_on_current_worker(self, task, true) {
            self.push_remote(task);
        }
    }

    /// Re-queues a process that used up its budget, behind the others (no LIFO slot).
    pub(crate) fn yield_now(self: &Arc<Self>, task: Task) {
        if let Err(task) = schedule_on_current_worker(self, task, false) {
            self.push_remote(task);
        }
    }

    pub(crate) fn push_remote(&self, task: Task) {
        if self.is_stopped() {
            // Workers are gone; the task (a reference to the process) is simply dropped. The
            // process was already terminated by shutdown, or will be found by it.
            return;
        }
        self.injector.push(task);
        self.idle.notify_one();
    }

    /// Whether any queue a thief can see holds work.
    pub(crate) fn has_visible_work(&self) -> bool {
        !self.injector.is_empty() || self.stealers.read().iter().any(|s| !s.is_empty())
    }

    pub(crate) fn start_workers(self: &Arc<Self>, count: usize) {
        let mut workers = self.workers.lock();
        let first = self.stealers.read().len();
        for index in first..first + count {
            let (thread, stealer, unparker) = WorkerThread::new(Arc::clone(self), index);
            self.stealers.write().push(stealer);
            self.idle.register(index, unparker);
            let spawned = std::thread::Builder::new()
                .name(format!("whirl-{}-{index}", self.name))
                .spawn(move || thread.run());
            match spawned {
                Ok(handle) => workers.push(handle),
                Err(e) => tracing::error!(group = %self.name, "cannot start a worker: {e}"),
            }
        }
    }

    pub(crate) fn worker_count(&self) -> usize {
        self.workers.lock().len()
    }

    /// Stops the workers once they are idle; returns their join handles.
    pub(crate) fn stop(&self) -> Vec<JoinHandle<()>> {
        self.stopped.store(true, Ordering::Release);
        self.idle.notify_all();
        // Drop whatever is still queued: those are references to processes that shutdown
        // has already terminated or could not reach.
        while !self.injector.steal().is_empty() {}
        std::mem::take(&mut *self.workers.lock())
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

    /// Number of worker threads.
    pub fn threads(&self) -> usize {
        self.shared.worker_count()
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
        self.shared.budget.store(budget.max(1), Ordering::Relaxed);
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
    threads: usize,
    budget: usize,
    lifo_slot: bool,
    predicate: Option<Box<dyn MessagePredicate>>,
    shares_state: Option<&'static str>,
}

impl GroupBuilder {
    pub(crate) fn new(runtime: Arc<RuntimeShared>, name: String) -> Self {
        GroupBuilder {
            runtime,
            name,
            threads: default_threads(),
            budget: DEFAULT_BUDGET,
            lifo_slot: true,
            predicate: None,
            shares_state: None,
        }
    }

    /// Number of worker threads (at least 1). Defaults to the number of cores.
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
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
    /// `#[process(shares_state = "...")]`; the sharing stays confined to it.
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
    pub fn build(self) -> Group {
        let shared = Arc::new(GroupShared {
            name: self.name,
            runtime: Arc::clone(&self.runtime),
            injector: Injector::new(),
            stealers: RwLock::new(Vec::new()),
            idle: Idle::new(),
            counters: Counters::new(),
            budget: AtomicUsize::new(self.budget),
            lifo_slot: self.lifo_slot,
            observes: self.predicate.as_ref().is_some_and(|p| p.observes()),
            predicate: self.predicate,
            shares_state: self.shares_state,
            stopped: AtomicBool::new(false),
            workers: Mutex::new(Vec::new()),
        });
        shared.start_workers(self.threads);
        self.runtime.add_group(Arc::clone(&shared));
        Group { shared }
    }
}

pub(crate) fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
}
