//! The state of a group ([`GroupShared`]: a set of processes sharing a worker pool, a run
//! budget, a message predicate and optionally a scheduler) and of the runtime it belongs to
//! ([`Kernel`]: what every group of one runtime shares — the list of groups, process ids, the
//! table of live processes, names, timers, the dead-letter sink, the controller thread and the
//! socket poller). They are one module because each holds the other: a group reaches its
//! runtime's tables, and the runtime lists its groups.
//!
//! A group runs either on the runtime's shared workers ([`Workers`]: the default, where the group
//! is a scheduling domain with its own ready queue, a [`Domain`] place and a weight) or on
//! threads of its own (a *dedicated* group). A dedicated group's scheduling is work-stealing on
//! crossbeam-deque: each worker has a local FIFO queue (bounded: beyond [`LOCAL_QUEUE_CAP`]
//! tasks overflow to the group's injector) and an optional LIFO slot for a process woken by a
//! handler on that worker when nothing waits before it, which keeps request/response pairs on
//! one core.
//! Tasks posted from outside the group go to the injector. Idle workers steal, then sleep
//! (`idle.rs`). How shared workers choose among groups is `workers.rs`.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use crossbeam_utils::CachePadded;
use parking_lot::{Mutex, RwLock};

use super::control_thread::ControlThread;
use super::idle::Idle;
use super::names::Names;
use super::pool::{now, Pool};
use super::probe::Running;
use super::registry::Registry;
use super::scheduler::{Ready, Scheduler};
use super::task::Task;
use super::watchdog::Watchdog;
use crate::admission::MessagePredicate;
use crate::control::{
    merge, Counters, Entry, Event, GroupStats, MessageCounts, Rejections, RuntimeStats,
};
#[cfg(feature = "net")]
use crate::io::Net;
use crate::lifecycle::{
    unanswered_because, DeadLetter, DeadLetterRecord, DeadLetterSink, ExitReason, ProcessId,
    Unanswered,
};
use crate::principal::Principal;
use crate::time::Timers;

/// Tasks a worker keeps locally before overflowing to the injector.
pub(crate) const LOCAL_QUEUE_CAP: usize = 256;

/// Dead letters the kernel remembers for `RuntimeStats::recent_dead_letters`.
const RECENT_DEAD_LETTERS: usize = 32;

/// Default number of messages a process handles per turn before yielding its worker.
pub const DEFAULT_BUDGET: usize = 64;

pub(crate) struct GroupShared {
    pub(crate) name: String,
    pub(crate) kernel: Arc<Kernel>,
    pub(crate) injector: Injector<Task>,
    /// Indexed by worker slot; `None` for a vacant slot.
    pub(crate) stealers: RwLock<Vec<Option<Stealer<Task>>>>,
    pub(crate) idle: Idle,
    pub(crate) counters: Counters,
    /// Rejections per principal (the counters count them all).
    pub(crate) rejections: Rejections,
    pub(crate) pool: Pool,
    pub(super) budget: AtomicUsize,
    pub(crate) lifo_slot: bool,
    /// `None`: the built-in work-stealing FIFO.
    pub(crate) scheduler: Option<Box<dyn Scheduler>>,
    pub(super) predicate: Option<Box<dyn MessagePredicate>>,
    /// Whether the predicate wants completion reports (cached: asked once, at build).
    pub(super) observes: bool,
    /// Whether the predicate decides admissions now (see `update_admission`).
    pub(super) admission_active: AtomicBool,
    /// Whether a thread controller may still grow the pool, which holds admission control
    /// off until the pool is at its maximum.
    pub(super) grows: bool,
    pub(crate) controllers: Mutex<Vec<Entry>>,
    /// Reports turns that hold a worker longer than the group's threshold (`watchdog.rs`).
    pub(crate) watchdog: Watchdog,
    /// The automatic-grouping rule the watchdog's findings feed (`placement.rs`).
    pub(crate) placement: super::placement_rule::Placement<Arc<GroupShared>>,
    /// `Some` for a group that shares state: its members, which fail together (`fate.rs`).
    pub(crate) shares_state: Option<super::fate::SharedFate>,
    pub(super) stopped: AtomicBool,
    /// The group's CPU budget, if it has one (`cpu_budget.rs`).
    pub(crate) cpu_budget: Option<Box<super::cpu_budget::CpuGovernor>>,
    /// `Some` for a group on the runtime's shared workers; `None` for a dedicated group (or
    /// any group of a stepped runtime).
    pub(crate) domain: Option<Domain>,
}

/// A group's place on the runtime's shared workers: which of their scheduling domains it is,
/// its weight, and what weighted fair queuing keeps for it (`workers.rs`).
pub(crate) struct Domain {
    pub(crate) workers: Arc<Workers>,
    /// The group's index in `Workers::domains`.
    pub(crate) index: usize,
    /// Its weight against the other groups (`GroupBuilder::share`).
    pub(crate) share: u64,
    /// Virtual time: the handling time its turns took, scaled by `DEFAULT_SHARE / share`
    /// (nanoseconds for a group of the default share).
    pub(crate) vtime: CachePadded<AtomicU64>,
    /// Shared workers running a turn of the group now (bounded by the pool's target: the
    /// group's concurrency limit).
    pub(crate) running: CachePadded<AtomicUsize>,
    /// Thieves' ends of the shared workers' local queues of this group, by worker index:
    /// what a worker queued stays on its core unless another worker is idle and steals it.
    pub(crate) stealers: Box<[Stealer<Task>]>,
    /// The queues those ends belong to, until each worker takes its own (`workers.rs`).
    pub(crate) locals: Mutex<Vec<Option<Worker<Task>>>>,
}

impl Domain {
    /// A domain for the group at `index` of `workers`, starting at virtual time `vtime`.
    pub(crate) fn new(workers: Arc<Workers>, index: usize, share: u64, vtime: u64) -> Self {
        let locals: Vec<Worker<Task>> = (0..workers.count).map(|_| Worker::new_fifo()).collect();
        Domain {
            stealers: locals.iter().map(Worker::stealer).collect(),
            locals: Mutex::new(locals.into_iter().map(Some).collect()),
            workers,
            index,
            share,
            vtime: CachePadded::new(AtomicU64::new(vtime)),
            running: CachePadded::new(AtomicUsize::new(0)),
        }
    }
}

/// The runtime's shared workers: one thread per core unless configured, running the turns of
/// every group that does not own threads (`workers.rs` is their behaviour).
pub(crate) struct Workers {
    /// How many threads.
    pub(crate) count: usize,
    /// The groups on these workers, by [`Domain::index`]; `None` once a group stopped.
    pub(crate) domains: RwLock<Vec<Option<Arc<GroupShared>>>>,
    /// Bumped whenever `domains` changes, so a worker knows to refresh its copy.
    pub(crate) generation: AtomicUsize,
    /// Read by every post that queues a process: on a line of its own, away from what the
    /// workers write.
    pub(crate) idle: CachePadded<Idle>,
    /// The virtual time of the last group chosen: a group that was idle starts again from
    /// here, so idleness banks no credit.
    pub(crate) vclock: CachePadded<AtomicU64>,
    /// Set when a group limited to fewer turns at once than there are workers may have work
    /// waiting and a place free: work was queued for it, or a turn of it ended with more
    /// waiting (a hint: `workers.rs` serves such groups first, and clears it when it finds
    /// none it may serve).
    pub(crate) limited_ready: CachePadded<AtomicBool>,
    pub(crate) stopped: AtomicBool,
    pub(crate) handles: Mutex<Vec<JoinHandle<()>>>,
    /// The runtime's I/O poll, which these workers drive (`workers.rs`), and how to interrupt
    /// the one waiting in it; set when the runtime's [`Net`] starts.
    #[cfg(feature = "net")]
    pub(crate) io: std::sync::OnceLock<(Net, super::park::Interrupt)>,
    /// Whether a sleeping worker waits in the poll now (else a busy one may be looking at
    /// it between two turns, and a worker going to sleep tries again a moment later).
    #[cfg(feature = "net")]
    pub(crate) in_poll: AtomicBool,
}

impl GroupShared {
    /// Wakes a worker that may run this group's tasks, after one was queued where any of
    /// them can take it.
    #[inline]
    pub(crate) fn notify_one(&self) {
        match &self.domain {
            Some(domain) => domain.workers.idle.notify_one(),
            None => self.idle.notify_one(),
        }
    }

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

    /// Counts a message the predicate rejected, sent by or for `principal` if any.
    pub(crate) fn count_rejected(&self, principal: Option<&Principal>) {
        self.counters.add(Event::Posted, 1);
        self.counters.add(Event::Rejected, 1);
        if let Some(principal) = principal {
            self.rejections.record(principal);
        }
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    pub(super) fn push_scheduled(&self, scheduler: &dyn Scheduler, task: Task, yielded: bool) {
        if self.is_stopped() {
            // No worker will run it: terminate it here (see `push_remote`).
            task.abandon();
            return;
        }
        scheduler.push(Ready::new(task, yielded));
        self.note_limited_ready();
        self.notify_one();
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
        self.note_limited_ready();
        self.notify_one();
    }

    /// After work was queued for this group: if it runs on the shared workers, limited to
    /// fewer turns at once than there are workers, with a place free, tells the workers to
    /// serve it first (`workers.rs`, *Limited groups first*).
    #[inline]
    pub(crate) fn note_limited_ready(&self) {
        let Some(domain) = &self.domain else {
            return;
        };
        let limit = self.pool.target();
        let workers = &domain.workers;
        if limit < workers.count
            && domain.running.load(Ordering::Relaxed) < limit
            && !workers.limited_ready.load(Ordering::Relaxed)
        {
            workers.limited_ready.store(true, Ordering::Relaxed);
        }
    }

    /// Whether any queue a worker can take from holds work.
    pub(crate) fn has_visible_work(&self) -> bool {
        if let Some(scheduler) = &self.scheduler {
            return !scheduler.is_empty();
        }
        if let Some(domain) = &self.domain {
            return !self.injector.is_empty() || domain.stealers.iter().any(|s| !s.is_empty());
        }
        !self.injector.is_empty() || self.stealers.read().iter().flatten().any(|s| !s.is_empty())
    }

    /// Stops the workers once they are idle; returns their join handles. Whatever is still
    /// queued is terminated on the calling thread ([`GroupShared::rescue`]).
    pub(crate) fn stop(&self) -> Vec<JoinHandle<()>> {
        self.stopped.store(true, Ordering::Release);
        self.idle.notify_all();
        if let Some(domain) = &self.domain {
            domain.workers.detach(domain.index);
        }
        if let Some(cpu) = &self.cpu_budget {
            cpu.wake_all();
        }
        self.rescue();
        self.pool.take_handles()
    }

    /// Whether the group has work: a message queued or being handled, a process on a run
    /// queue, or a turn running (for CPU budgets' virtual ticks).
    pub(crate) fn is_busy(&self) -> bool {
        self.counters.queued_estimate() > 0
            || self.has_visible_work()
            || self
                .pool
                .slots
                .read()
                .iter()
                .any(|s| s.probe.read().is_some())
    }

    /// What this group's workers are running now.
    pub(crate) fn running(&self) -> Vec<Running> {
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
    /// `Runnable::abandon`: its pending kill, its hook, its
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
        if let Some(domain) = &self.domain {
            for stealer in domain.stealers.iter() {
                take_all(|| stealer.steal(), &mut abandon);
            }
        }
        taken
    }

    /// A snapshot of the group's statistics.
    pub(crate) fn stats(&self) -> GroupStats {
        let slots: Vec<_> = self.pool.slots.read().clone();
        let now = now();
        let merged = merge(slots.iter().map(|s| &s.stats), &self.rejections, now);
        let idle_time = slots.iter().map(|s| s.stats.idle_total(now).0).sum();
        GroupStats {
            name: self.name.clone(),
            counts: self.counters.snapshot(),
            queue_length: self.counters.queued_estimate(),
            queue_latency: merged.queue_latency,
            handling_time: merged.handling,
            recent_queue_latency: merged.recent_queue_latency,
            recent_handling_time: merged.recent_handling,
            idle_time,
            lock_latency: merged.lock_wait,
            slow_turns: self.watchdog.reported(),
            blocked_workers: self.watchdog.blocked(),
            slow_turn_threshold: self.watchdog.threshold(),
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
            classes: merged.classes,
            recent_slow_turns: self.watchdog.recent(),
            auto_moved: self.placement.moved(),
            cpu_budget: self.cpu_budget.as_ref().map(|c| c.stats()),
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

/// What the groups of one runtime share (see the module docs).
pub(crate) struct Kernel {
    groups: Mutex<Vec<Arc<GroupShared>>>,
    next_id: AtomicU64,
    closing: AtomicBool,
    /// Async handlers cancelled because their process was terminated by a shutdown: counted
    /// for the shutdown's report instead of being reported one by one.
    pub(crate) cancelled_by_shutdown: AtomicU64,
    dead_letters: DeadLetterSink,
    /// How long a `call` or `ask` waits for its answer unless the request says otherwise
    /// (`RuntimeBuilder::ask_timeout`).
    pub(crate) ask_timeout: Option<Duration>,
    /// No worker threads: turns run when the owner calls `Runtime::run_one`.
    pub(crate) stepped: bool,
    /// The last dead letters, oldest first (`RECENT_DEAD_LETTERS` at most).
    recent_dead_letters: Mutex<VecDeque<DeadLetterRecord>>,
    pub(crate) registry: Registry,
    pub(crate) timers: Timers,
    pub(crate) names: Names,
    pub(crate) control: Arc<ControlThread>,
    #[cfg(feature = "net")]
    net: Mutex<Option<Net>>,
    /// The tokio runtime whose context async handlers are polled in (feature `tokio`).
    #[cfg(feature = "tokio")]
    pub(crate) tokio: super::bridge::TokioBridge,
    /// Per-runtime tables of the layers above, one per type, made on first use
    /// ([`Kernel::extension`]): e.g. the process groups of `routing/pg.rs`.
    extensions: Mutex<Vec<Arc<dyn std::any::Any + Send + Sync>>>,
    /// How many shared workers to start (`RuntimeBuilder::threads`).
    pub(crate) worker_count: usize,
    /// The shared workers, started with the first group that runs on them.
    pub(crate) workers: Mutex<Option<Arc<Workers>>>,
}

impl Kernel {
    /// A kernel with no groups yet, whose dead letters go to `dead_letters`.
    pub(crate) fn new(
        dead_letters: DeadLetterSink,
        ask_timeout: Option<Duration>,
        stepped: bool,
        worker_count: usize,
    ) -> Self {
        Kernel {
            worker_count: worker_count.max(1),
            workers: Mutex::new(None),
            ask_timeout,
            stepped,
            groups: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
            closing: AtomicBool::new(false),
            cancelled_by_shutdown: AtomicU64::new(0),
            dead_letters,
            recent_dead_letters: Mutex::new(VecDeque::new()),
            registry: Registry::new(),
            timers: Timers::new(),
            names: Names::default(),
            control: Arc::default(),
            #[cfg(feature = "net")]
            net: Mutex::new(None),
            #[cfg(feature = "tokio")]
            tokio: super::bridge::TokioBridge::default(),
            extensions: Mutex::new(Vec::new()),
        }
    }

    /// This runtime's `T`, made with `T::default()` on first use: how a layer above keeps a
    /// per-runtime table without the kernel knowing its type.
    pub(crate) fn extension<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut extensions = self.extensions.lock();
        for existing in extensions.iter() {
            if let Ok(found) = Arc::clone(existing).downcast::<T>() {
                return found;
            }
        }
        let made = Arc::new(T::default());
        extensions.push(Arc::clone(&made) as Arc<dyn std::any::Any + Send + Sync>);
        made
    }

    /// Marks the runtime as shutting down (see [`is_closing`](Self::is_closing)); returns
    /// whether it already was.
    pub(crate) fn start_closing(&self) -> bool {
        self.closing.swap(true, Ordering::Relaxed)
    }

    pub(crate) fn next_process_id(&self) -> ProcessId {
        ProcessId(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    #[inline]
    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Relaxed)
    }

    /// Hands a letter to the user's sink. The sink runs on a worker (or a poster's thread):
    /// a panic in it is contained and logged, never allowed to kill the thread.
    pub(crate) fn dead_letter(&self, letter: DeadLetter) {
        {
            let mut recent = self.recent_dead_letters.lock();
            if recent.len() == RECENT_DEAD_LETTERS {
                recent.pop_front();
            }
            recent.push_back(DeadLetterRecord::of(&letter));
        }
        let sink = &self.dead_letters;
        // A request among the letters that the sink drops tells its caller why.
        let why = match letter.reason() {
            ExitReason::Shutdown => Unanswered::ShutDown,
            _ => Unanswered::Terminated,
        };
        if unanswered_because(why, || catch_unwind(AssertUnwindSafe(|| sink(letter)))).is_err() {
            tracing::error!("the dead-letter sink panicked; the letter is dropped");
        }
    }

    /// Adds `group`, unless a group of that name exists: names are unique within a runtime,
    /// so a process's `#[process(group = "...")]` names one group.
    pub(crate) fn add_group(&self, group: Arc<GroupShared>) -> Result<(), Arc<GroupShared>> {
        let mut groups = self.groups.lock();
        if groups.iter().any(|g| g.name == group.name) {
            return Err(group);
        }
        groups.push(group);
        Ok(())
    }

    /// The first group built with `name`.
    pub(crate) fn group_named(&self, name: &str) -> Option<Arc<GroupShared>> {
        self.groups.lock().iter().find(|g| g.name == name).cloned()
    }

    /// The runtime's poller, started on first use.
    #[cfg(feature = "net")]
    pub(crate) fn net(&self) -> std::io::Result<Net> {
        let mut net = self.net.lock();
        if let Some(n) = &*net {
            return Ok(n.clone());
        }
        if self.is_closing() {
            return Err(std::io::Error::other("the runtime is shutting down"));
        }
        // Driven by the shared workers, so that readiness runs the socket's process on the
        // worker that saw it; a stepped runtime has none, and a poller thread instead.
        let workers = match self.stepped {
            true => None,
            false => self.shared_workers().ok(),
        };
        let started = match workers {
            Some(workers) => {
                let started = Net::start_driven()?;
                let waking = started.clone();
                let interrupt: super::park::Interrupt = Arc::new(move || waking.wake_driver());
                // Set once: this is the runtime's only `Net`. Workers asleep already sleep
                // elsewhere: woken, the first to sleep again sleeps in the poll.
                let _ = workers.io.set((started.clone(), interrupt));
                workers.idle.notify_all();
                started
            }
            None => Net::start()?,
        };
        *net = Some(started.clone());
        Ok(started)
    }

    pub(crate) fn stats(&self) -> RuntimeStats {
        let groups: Vec<GroupStats> = self.groups().iter().map(|g| g.stats()).collect();
        RuntimeStats {
            counts: groups.iter().map(|g| g.counts).sum(),
            live_processes: self.registry.len(),
            groups,
            recent_dead_letters: self.recent_dead_letters.lock().iter().cloned().collect(),
        }
    }

    pub(crate) fn groups(&self) -> Vec<Arc<GroupShared>> {
        self.groups.lock().clone()
    }

    /// Removes every group (shutdown stops them).
    pub(crate) fn take_groups(&self) -> Vec<Arc<GroupShared>> {
        std::mem::take(&mut *self.groups.lock())
    }

    /// Removes the poller, if it was started (shutdown stops it).
    #[cfg(feature = "net")]
    pub(crate) fn take_net(&self) -> Option<Net> {
        self.net.lock().take()
    }

    pub(crate) fn counts(&self) -> MessageCounts {
        self.groups().iter().map(|g| g.counters.snapshot()).sum()
    }

    /// Whether the whole runtime was quiescent at one instant during the reading: all
    /// groups' "done" counters are read before any "started" counter.
    pub(crate) fn is_quiescent(&self) -> bool {
        let groups = self.groups();
        let done: Vec<_> = groups.iter().map(|g| g.counters.read_done()).collect();
        std::sync::atomic::fence(Ordering::SeqCst);
        groups
            .iter()
            .zip(done)
            .all(|(g, done)| g.counters.read_started().is_quiescent_with(&done))
    }
}
