//! The runtime's shared workers: groups as scheduling domains on one pool of threads.
//!
//! A group, like a SEDA stage, is a unit of control: its queue, admission predicate,
//! scheduler, statistics, controllers and CPU budget. It need not be a unit of threads. By
//! default every group runs on the runtime's shared workers (one per core unless
//! `RuntimeBuilder::threads` says otherwise), so that crossing from one group to another costs
//! a queue operation, not a thread wake-up. A group that must own threads (blocking work,
//! isolation from everything else) says so with `GroupBuilder::threads` (`worker.rs` runs
//! those).
//!
//! **Choosing a group.** Each group on the shared workers is a [`Domain`]: it keeps its own
//! ready queue (its injector, or its [`Scheduler`](crate::scheduler::Scheduler), asked with
//! the worker's index as a dedicated group's workers ask it), a weight (its *share*), a
//! virtual time and a concurrency limit. A worker picks the runnable group with the least
//! virtual time (weighted fair queuing, as Seastar's scheduling groups share a reactor), takes
//! one process from that group's queue and runs one turn of it. The turn's handling time, read
//! from the shared coarse clock (one load; turns shorter than its 1 ms tick are charged 0 or 1
//! tick, right on average), is added to the group's virtual time divided by its share. A group
//! that was idle starts again from the virtual time of the last group chosen, so idleness banks
//! no credit. A group is not runnable while it has as many turns running as its concurrency
//! limit (the number its thread controller moves, on shared workers), or while its CPU budget
//! is spent: the workers run other groups meanwhile and look again at its next tick or, when
//! nothing else wants the CPU, re-arm it early (a virtual tick).
//!
//! **Crossing groups on one worker.** A handler that makes a process of another group ready
//! (a post that took the process's scheduling token) puts it in its worker's LIFO slot, as
//! tokio does for one task waking another: the worker runs it right after the current turn,
//! with its caches warm and no other thread woken. Fairness bounds this: the slot is used only
//! if the target group has no scheduler of its own (whose order must be kept), wants a LIFO
//! slot, and is not ahead of the virtual clock by more than [`HANDOFF_SLACK`]; a worker runs at
//! most [`MAX_LIFO_STREAK`] processes in a row from the slot while other work waits. And the
//! slot overtakes nobody: a process takes it only while it is free and nothing of its group
//! waits in this worker's queue; else it queues behind. (tokio's slot takes the last process
//! woken and pushes the one it held behind. Under load that lets some requests run through
//! every stage at once while others wait behind the whole backlog at each stage: at 1,000
//! connections iris_http's p99 was 5x its median. Now work in a queue runs in the order it
//! was made ready, and the slot only spares a queue operation when nothing waits.) Readiness
//! from the I/O poll follows the same rule: a poll that finds many sockets ready puts the
//! first in the slot if it is free and queues the rest in order.
//!
//! **Limited groups first.** A group limited to fewer turns at once than there are workers
//! (`concurrency = 1` for a slow stage, or the limit its controller set) is what a group owning
//! that many threads was: its places should not stay empty while it has work, or its
//! throughput, often the service's bottleneck, falls behind the short turns of the other
//! groups (and of the LIFO slot's chains). So a worker between two turns serves such a group
//! first, least virtual time first among them, ahead of its LIFO slot and of the virtual-time
//! choice, as long as another worker stays free for the other groups; what waited in the slot
//! goes to its local queue, where an idle worker can steal it. The group's concurrency limit
//! bounds what this takes from the others (a limit of 1 on 2 workers: half the CPU at most),
//! and its CPU budget still holds. Queuing work for such a group while it has a place free,
//! or a turn of it ending with more of its work waiting, sets a hint the workers read with one
//! load per turn.
//!
//! **Queues.** A group's ready processes wait in one of three places: its shared queue (the
//! injector, for processes made ready from outside the workers), or, for a process made
//! ready on a worker (refused the LIFO slot, moved out of it, or yielding its budget), that
//! worker's local queue of the group, a crossbeam deque whose other end every other worker
//! may steal from. So a process stays on the core whose cache holds it unless another core
//! is idle; a worker that took a group takes from its own queue of it, then from the group's
//! shared queue (first, every [`INJECTOR_CHECK_INTERVAL`] turns, so that it is not starved),
//! then from the other workers' queues of it. A group with a scheduler of its own keeps its
//! ready processes there instead.
//!
//! **Idle workers** search every group, yield a few rounds, then sleep with `idle.rs`'s
//! protocol. A task queued in a group's shared queue wakes one unless a worker is searching;
//! one queued in a worker's local queue wakes one if that worker now holds more than the
//! process it will run next (its slot and its queues of every group). With the `net`
//! feature, the first to sleep sleeps in the runtime's I/O poll (`io/poller.rs`; waking it
//! interrupts the poll), and the processes its readiness events make ready land in its LIFO
//! slot and queues: a socket's process runs on the worker that saw the event. Busy workers
//! look at the poll, without waiting, every [`IO_CHECK_INTERVAL`] turns or
//! [`IO_CHECK_PERIOD`], whichever comes first.
//!
//! **Statistics.** A group keeps one slot per shared worker (the probe of what that worker
//! runs of it, and statistics), so its watchdog, statistics and controllers read it as they
//! read a dedicated group's. A worker's time counts as the group's idle time whenever it is
//! not running that group's turns.

use std::cell::{Cell, RefCell};
use std::ptr;
use std::rc::Rc;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_deque::{Steal, Worker};
use crossbeam_utils::CachePadded;
use parking_lot::{Mutex, RwLock};

use super::idle::{Idle, SleepDecision};
use super::park::Parker;
use super::probe::Running;
use super::scheduler::TurnReport;
use super::shared::{Domain, GroupShared, Kernel, Workers, LOCAL_QUEUE_CAP};
use super::task::{is_occupied, Recorder, Sampler, Task};
use crate::time::{shared_clock, Clock};

/// The weight of a group that does not set one (`GroupBuilder::share`).
pub(crate) const DEFAULT_SHARE: u64 = 100;

/// How far ahead of the virtual clock (in a default-share group's nanoseconds) a group may be
/// and still take a process handed over through the LIFO slot: 2 ms.
pub(crate) const HANDOFF_SLACK: u64 = 2_000_000;

/// Consecutive turns the LIFO slot may win before its process goes to its group's queue.
pub(crate) const MAX_LIFO_STREAK: u32 = 16;

/// Turns between looks at a group's shared queue before its worker's local queue, so that
/// processes queued from outside are not starved by those queued here (as `worker.rs`).
const INJECTOR_CHECK_INTERVAL: u32 = 61;

/// Turns between looks at the I/O poll by a busy worker (as tokio's `event_interval`).
#[cfg(feature = "net")]
const IO_CHECK_INTERVAL: u32 = 61;

/// How often (coarse-clock nanoseconds) a busy worker looks at the I/O poll if its turns are
/// long (it looks between turns only): 1 ms.
#[cfg(feature = "net")]
const IO_CHECK_PERIOD: u64 = 1_000_000;

/// How long a worker whose poll failed sleeps before it polls again.
#[cfg(feature = "net")]
const POLL_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// Failed search rounds (each a `yield_now`) before a worker parks.
const SEARCH_ROUNDS_BEFORE_SLEEP: u32 = 32;

thread_local! {
    static SHARED: Cell<*const SharedWorker> = const { Cell::new(ptr::null()) };
}

/// Runs `f` on the calling thread's shared worker, if it is one.
#[inline]
fn with_current<R>(f: impl FnOnce(&SharedWorker) -> R) -> Option<R> {
    SHARED.with(|c| {
        let current = c.get();
        if current.is_null() {
            return None;
        }
        // SAFETY: `SHARED` is non-null only while `SharedWorker::run` is executing on this
        // thread, and it points at that function's own `self`, which outlives the call
        // (invariant I10 in ARCHITECTURE.md).
        Some(f(unsafe { &*current }))
    })
}

/// Whether the calling thread is one of the shared workers.
pub(crate) fn on_shared_worker() -> bool {
    SHARED.with(|c| !c.get().is_null())
}

/// What the calling shared worker is running, and the group's name.
pub(crate) fn current_turn() -> Option<(Running, String)> {
    with_current(|worker| {
        let local = worker.current.take()?;
        let running = local.recorder.probe().read();
        let name = local.group.name.clone();
        worker.current.set(Some(local));
        Some((running?, name))
    })
    .flatten()
}

/// Whether the turn running on this thread may keep its process of `group` a little longer:
/// only on a shared worker with nothing else to run anywhere.
pub(crate) fn may_linger(group: &Arc<GroupShared>, domain: &Domain) -> bool {
    with_current(|worker| {
        Arc::ptr_eq(&worker.workers, &domain.workers) && worker.has_nothing_but(group)
    })
    .unwrap_or(false)
}

/// Starting and stopping the shared workers.
impl Kernel {
    /// The shared workers, started on first use.
    pub(crate) fn shared_workers(&self) -> std::io::Result<Arc<Workers>> {
        let mut slot = self.workers.lock();
        if let Some(workers) = &*slot {
            return Ok(Arc::clone(workers));
        }
        if self.is_closing() {
            // Shutdown took the workers, or is about to: none are started again.
            return Err(std::io::Error::other("the runtime is shutting down"));
        }
        let workers = Arc::new(Workers {
            count: self.worker_count,
            domains: RwLock::new(Vec::new()),
            generation: AtomicUsize::new(0),
            idle: CachePadded::new(Idle::new()),
            vclock: CachePadded::new(AtomicU64::new(0)),
            limited_ready: CachePadded::new(AtomicBool::new(false)),
            stopped: AtomicBool::new(false),
            handles: Mutex::new(Vec::new()),
            #[cfg(feature = "net")]
            io: std::sync::OnceLock::new(),
            #[cfg(feature = "net")]
            in_poll: AtomicBool::new(false),
        });
        workers.start()?;
        *slot = Some(Arc::clone(&workers));
        Ok(workers)
    }

    /// Removes the shared workers, if they were started (shutdown stops them).
    pub(crate) fn take_workers(&self) -> Option<Arc<Workers>> {
        self.workers.lock().take()
    }
}

impl Workers {
    fn start(self: &Arc<Self>) -> std::io::Result<()> {
        for index in 0..self.count {
            let (parker, unparker) = Parker::new();
            self.idle.register(index, unparker);
            let workers = Arc::clone(self);
            let spawned = std::thread::Builder::new()
                .name(format!("whirl-worker-{index}"))
                .spawn(move || SharedWorker::new(workers, index, parker).run());
            match spawned {
                Ok(handle) => self.handles.lock().push(handle),
                Err(e) => {
                    for handle in self.stop() {
                        let _ = handle.join();
                    }
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// A place for a new group; [`Workers::attach`] fills it once the group exists.
    pub(crate) fn reserve(&self) -> usize {
        let mut domains = self.domains.write();
        domains.push(None);
        domains.len() - 1
    }

    /// Puts `group` on the workers, in the place [`Workers::reserve`] gave it.
    pub(crate) fn attach(&self, index: usize, group: Arc<GroupShared>) {
        if let Some(place) = self.domains.write().get_mut(index) {
            *place = Some(group);
        }
        self.generation.fetch_add(1, Release);
    }

    /// Takes a stopped group off the workers.
    pub(crate) fn detach(&self, index: usize) {
        if let Some(place) = self.domains.write().get_mut(index) {
            *place = None;
        }
        self.generation.fetch_add(1, Release);
    }

    /// Stops the workers once they are idle; returns their join handles.
    pub(crate) fn stop(&self) -> Vec<JoinHandle<()>> {
        self.stopped.store(true, Release);
        self.idle.notify_all();
        std::mem::take(&mut *self.handles.lock())
    }

    fn is_stopped(&self) -> bool {
        self.stopped.load(Acquire)
    }
}

/// Where a shared group's tasks go.
impl GroupShared {
    /// Queues a process of this group (on shared workers) whose token the caller holds: to the
    /// calling worker's LIFO slot when fairness allows, else to the group's queue. `lifo` is
    /// false for a process yielding its budget, which goes behind the group's queue.
    #[inline]
    pub(crate) fn schedule_shared(self: &Arc<Self>, domain: &Domain, task: Task, lifo: bool) {
        let kept = SHARED.with(|c| {
            let current = c.get();
            if current.is_null() {
                return Err(task);
            }
            // SAFETY: `SHARED` is non-null only while `SharedWorker::run` is executing on
            // this thread, and it points at that function's own `self`, which outlives the
            // call (invariant I10 in ARCHITECTURE.md).
            let worker = unsafe { &*current };
            if Arc::ptr_eq(&worker.workers, &domain.workers) {
                worker.schedule(self, domain, task, lifo)
            } else {
                Err(task)
            }
        });
        if let Err(task) = kept {
            self.push_remote(task);
        }
    }
}

/// A group as one shared worker knows it: the group and the recorder of that worker's slot in
/// it.
struct Local {
    group: Arc<GroupShared>,
    recorder: Recorder,
    /// This worker's queue of the group's processes (other workers steal from its other end,
    /// `Domain::stealers`); `None` for a group with a scheduler of its own, whose scheduler
    /// holds its ready processes.
    queue: Option<Worker<Task>>,
}

impl Local {
    fn domain(&self) -> Option<&Domain> {
        self.group.domain.as_ref()
    }

    /// Hands what this worker queued of the group to the group's queue (where a stopped
    /// group's processes are terminated): the worker no longer serves the group.
    fn hand_back(&self) {
        if let Some(queue) = &self.queue {
            while let Some(task) = queue.pop() {
                self.group.push_remote(task);
            }
        }
    }
}

/// One shared worker thread.
struct SharedWorker {
    workers: Arc<Workers>,
    index: usize,
    parker: Parker,
    /// The groups on the workers, by domain index, as of `generation`.
    domains: RefCell<Vec<Option<Rc<Local>>>>,
    generation: Cell<usize>,
    /// The process to run next, and its group.
    lifo: Cell<Option<(Rc<Local>, Task)>>,
    lifo_streak: Cell<u32>,
    tick: Cell<u32>,
    sampler: Sampler,
    /// The group of the turn running now.
    current: Cell<Option<Rc<Local>>>,
    /// The group whose slot is not idle: the last one this worker ran since it last searched.
    last: Cell<Option<Rc<Local>>>,
    /// Whether the claimed turn was counted in its group's `running`.
    counted: Cell<bool>,
    /// When this worker last looked at the I/O poll between turns (coarse clock).
    #[cfg(feature = "net")]
    io_checked: Cell<u64>,
}

/// Clears `SHARED` when the run loop exits, however it exits.
struct CurrentGuard;

impl Drop for CurrentGuard {
    fn drop(&mut self) {
        SHARED.with(|c| c.set(ptr::null()));
    }
}

impl SharedWorker {
    fn new(workers: Arc<Workers>, index: usize, parker: Parker) -> Self {
        SharedWorker {
            workers,
            index,
            parker,
            domains: RefCell::new(Vec::new()),
            generation: Cell::new(usize::MAX),
            lifo: Cell::new(None),
            lifo_streak: Cell::new(0),
            tick: Cell::new(0),
            sampler: Sampler::new(),
            current: Cell::new(None),
            last: Cell::new(None),
            counted: Cell::new(false),
            #[cfg(feature = "net")]
            io_checked: Cell::new(0),
        }
    }

    fn run(self) {
        SHARED.with(|c| c.set(&self));
        let _guard = CurrentGuard;
        while !self.workers.is_stopped() {
            self.check_io();
            let next = self.next();
            let Some((local, task)) = next.or_else(|| self.search()) else {
                break;
            };
            self.run_turn(&local, task);
        }
        // No longer a worker: what terminating a process schedules goes to its group's queue
        // (stopped, so terminated there too), not to this worker's slot.
        SHARED.with(|c| c.set(ptr::null()));
        if let Some((_, task)) = self.lifo.take() {
            // The runtime stopped: terminate it here, so nothing it was sent is lost.
            task.abandon();
        }
        for local in self.domains.borrow().iter().flatten() {
            local.hand_back();
        }
        for local in self.domains.borrow().iter().flatten() {
            local.recorder.publish();
        }
    }

    /// Reads the groups on the workers again if they changed.
    fn refresh(&self) {
        let generation = self.workers.generation.load(Acquire);
        if generation == self.generation.get() {
            return;
        }
        // Handed back once both borrows end: terminating a stopped group's processes runs
        // their hooks, which may build groups (and take `Workers::domains`).
        let mut gone: Vec<Rc<Local>> = Vec::new();
        {
            let Ok(mut mine) = self.domains.try_borrow_mut() else {
                return;
            };
            let all = self.workers.domains.read();
            self.refresh_places(&mut mine, &all, &mut gone);
        }
        self.generation.set(generation);
        for old in gone {
            // Its group stopped: what this worker queued of it is terminated there.
            old.hand_back();
        }
    }

    /// Brings this worker's view of the groups (`mine`) in line with `all`; the views of
    /// groups that left go to `gone`.
    fn refresh_places(
        &self,
        mine: &mut Vec<Option<Rc<Local>>>,
        all: &[Option<Arc<GroupShared>>],
        gone: &mut Vec<Rc<Local>>,
    ) {
        mine.resize(all.len(), None);
        for (place, group) in mine.iter_mut().zip(all.iter()) {
            let same = match (place.as_ref(), group) {
                (Some(local), Some(group)) => Arc::ptr_eq(&local.group, group),
                (None, None) => true,
                _ => false,
            };
            if same {
                continue;
            }
            gone.extend(place.take());
            *place = group.as_ref().and_then(|group| {
                let slot = group.pool.slots.read().get(self.index).cloned()?;
                let queue = match (&group.scheduler, &group.domain) {
                    (None, Some(domain)) => domain.locals.lock().get_mut(self.index)?.take(),
                    _ => None,
                };
                Some(Rc::new(Local {
                    group: Arc::clone(group),
                    recorder: Recorder::new(slot),
                    queue,
                }))
            });
        }
    }

    /// The next turn to run, if any is ready: a limited group's first, then the LIFO slot's,
    /// then the group [`pick`](SharedWorker::pick) chooses.
    #[inline]
    fn next(&self) -> Option<(Rc<Local>, Task)> {
        self.limited_first()
            .or_else(|| self.next_from_lifo())
            .or_else(|| self.pick())
    }

    /// A turn of a group limited to fewer turns at once than there are workers, if one has
    /// work waiting and a place free, and another worker stays free for the other groups
    /// (module doc, *Limited groups first*). One load when no such group was hinted at since
    /// the last look.
    #[inline]
    fn limited_first(&self) -> Option<(Rc<Local>, Task)> {
        let workers = &self.workers;
        if !workers.limited_ready.load(Relaxed) {
            return None;
        }
        workers.limited_ready.store(false, Relaxed);
        self.refresh();
        let domains = self.domains.borrow();
        let mut limited_running = 0;
        let mut best: Option<(u64, &Rc<Local>)> = None;
        for local in domains.iter().flatten() {
            let group = &local.group;
            let Some(domain) = local.domain() else {
                continue;
            };
            if group.pool.target() >= workers.count {
                continue;
            }
            limited_running += domain.running.load(Relaxed);
            if !self.runnable(group) {
                continue;
            }
            let v = domain.vtime.load(Relaxed);
            if best.is_none_or(|(b, _)| v < b) {
                best = Some((v, local));
            }
        }
        if limited_running + 1 >= workers.count {
            // Serving one first would leave no worker free for the others.
            return None;
        }
        let (_, local) = best?;
        if !self.claim(&local.group) {
            return None;
        }
        let Some(task) = self.pop(local) else {
            self.release(&local.group);
            return None;
        };
        // Whatever waits in the slot goes where an idle worker can take it: this turn may be
        // long.
        if let Some((waiting, next)) = self.lifo.take() {
            self.queue_locally(&waiting, next, true);
        }
        self.lifo_streak.set(0);
        Some((Rc::clone(local), task))
    }

    /// The process in the LIFO slot, if it may run now.
    #[inline]
    fn next_from_lifo(&self) -> Option<(Rc<Local>, Task)> {
        let (local, task) = self.lifo.take()?;
        let streak = self.lifo_streak.get();
        if streak >= MAX_LIFO_STREAK && !self.has_nothing_but(&local.group) {
            // Too long a streak while others wait: behind its group's queue on this worker
            // (waking another, as this one may well choose another group), and the worker
            // chooses again.
            self.lifo_streak.set(0);
            self.queue_locally(&local, task, true);
            return None;
        }
        if self.claim(&local.group) {
            // Past the streak only when nobody else waits: it starts over.
            self.lifo_streak.set(if streak >= MAX_LIFO_STREAK {
                0
            } else {
                streak + 1
            });
            return Some((local, task));
        }
        // The group may not run more now: behind its queue, for whichever worker may (the one
        // ending a turn of it wakes another if it was at its limit).
        self.lifo_streak.set(0);
        self.queue_locally(&local, task, false);
        None
    }

    /// Takes a process from the runnable group with the least virtual time, claiming a place
    /// under its concurrency limit.
    fn pick(&self) -> Option<(Rc<Local>, Task)> {
        self.refresh();
        let domains = self.domains.borrow();
        let clock = self.workers.vclock.load(Relaxed);
        // Groups whose queue came up empty (a race with another worker): the first 64 by a
        // bit each; beyond, the attempts are bounded by the number of groups anyway.
        let mut tried: u64 = 0;
        let was_tried = |tried: u64, i: usize| i < 64 && tried & (1 << i) != 0;
        for _ in 0..domains.len() {
            let mut best: Option<(u64, usize)> = None;
            for (i, local) in domains.iter().enumerate() {
                let Some(local) = local else { continue };
                let Some(domain) = local.domain() else {
                    continue;
                };
                if was_tried(tried, i) || !self.runnable(&local.group) {
                    continue;
                }
                let v = domain.vtime.load(Relaxed).max(clock);
                if best.is_none_or(|(b, _)| v < b) {
                    best = Some((v, i));
                }
            }
            let (v, i) = best?;
            if i < 64 {
                tried |= 1 << i;
            }
            let Some(local) = domains[i].clone() else {
                continue;
            };
            if !self.claim(&local.group) {
                continue;
            }
            if let Some(task) = self.pop(&local) {
                // Written only when it moves: every worker reads this line.
                if v > self.workers.vclock.load(Relaxed) {
                    self.workers.vclock.fetch_max(v, Relaxed);
                }
                self.lifo_streak.set(0);
                return Some((local, task));
            }
            self.release(&local.group);
        }
        None
    }

    /// A ready process of `local`'s group: from its scheduler if it has one; else from this
    /// worker's queue of it, the group's shared queue (first, every
    /// [`INJECTOR_CHECK_INTERVAL`] turns), or another worker's queue.
    fn pop(&self, local: &Local) -> Option<Task> {
        let group = &local.group;
        if let Some(scheduler) = &group.scheduler {
            return scheduler.pop(self.index).map(|ready| ready.into_task());
        }
        let Some(queue) = &local.queue else {
            return take(|| group.injector.steal());
        };
        if self.tick.get().is_multiple_of(INJECTOR_CHECK_INTERVAL) {
            if let Some(task) = take(|| group.injector.steal_batch_and_pop(queue)) {
                return Some(task);
            }
        }
        if let Some(task) = queue.pop() {
            return Some(task);
        }
        if let Some(task) = take(|| group.injector.steal_batch_and_pop(queue)) {
            return Some(task);
        }
        let stealers = group.domain.as_ref().map_or(&[][..], |d| &d.stealers[..]);
        let n = stealers.len();
        (1..n).find_map(|i| take(|| stealers[(self.index + i) % n].steal_batch_and_pop(queue)))
    }

    /// Queues a process of `local`'s group on this worker, behind the others (on the group's
    /// shared queue if this worker has no queue of it, or a full one). Wakes a worker if `wake`
    /// and this worker now has more than the process it will run next.
    fn queue_locally(&self, local: &Local, task: Task, wake: bool) {
        match &local.queue {
            Some(queue) if queue.len() < LOCAL_QUEUE_CAP => {
                queue.push(task);
                local.group.note_limited_ready();
                if wake && self.holds_more_than_one() {
                    local.group.notify_one();
                }
            }
            _ if wake => local.group.push_remote(task),
            _ => local.group.injector.push(task),
        }
    }

    /// Whether this worker holds more than the one process it will run next, in its LIFO slot
    /// and its queues of every group: then another worker is worth waking to steal.
    fn holds_more_than_one(&self) -> bool {
        let Ok(domains) = self.domains.try_borrow() else {
            return true;
        };
        let mut held = usize::from(self.has_lifo_task());
        for local in domains.iter().flatten() {
            held += local.queue.as_ref().map_or(0, Worker::len);
            if held > 1 {
                return true;
            }
        }
        false
    }

    /// Whether `group` has work a worker may take now.
    fn runnable(&self, group: &GroupShared) -> bool {
        !group.is_stopped() && group.has_visible_work() && self.may_run(group)
    }

    /// Whether `group` is under its concurrency limit and its CPU budget. A group passed over
    /// for its budget is counted as throttled (`CpuGovernor::passed_over`).
    fn may_run(&self, group: &GroupShared) -> bool {
        let under_limit = match &group.domain {
            Some(domain) => domain.running.load(Relaxed) < group.pool.target(),
            None => false,
        };
        under_limit
            && group.cpu_budget.as_ref().is_none_or(|cpu| {
                let now = Instant::now();
                let spent = cpu.exhausted(now);
                if spent {
                    cpu.passed_over(now);
                }
                !spent
            })
    }

    /// Counts a turn of `group` about to run, if its concurrency limit and CPU budget allow.
    /// A group whose limit is every worker is not counted (one atomic read-modify-write
    /// fewer per turn); `counted` says which, for `release`.
    #[inline]
    fn claim(&self, group: &GroupShared) -> bool {
        let Some(domain) = &group.domain else {
            return false;
        };
        if let Some(cpu) = &group.cpu_budget {
            let now = Instant::now();
            if cpu.exhausted(now) {
                return false;
            }
            cpu.resumed(now);
        }
        let limit = group.pool.target();
        if limit >= self.workers.count {
            // No limit in effect: nothing to count (`release` sees the same).
            self.counted.set(false);
            return true;
        }
        let mut running = domain.running.load(Relaxed);
        loop {
            if running >= limit {
                self.counted.set(false);
                return false;
            }
            match domain
                .running
                .compare_exchange_weak(running, running + 1, Relaxed, Relaxed)
            {
                Ok(_) => break,
                Err(now) => running = now,
            }
        }
        self.counted.set(true);
        true
    }

    /// Ends what [`SharedWorker::claim`] counted, if it counted.
    #[inline]
    fn release(&self, group: &GroupShared) {
        if !self.counted.replace(false) {
            return;
        }
        if let Some(domain) = &group.domain {
            let before = domain.running.fetch_sub(1, Relaxed);
            if group.has_visible_work() {
                // A place is free now, with work waiting: served first by the next worker to
                // look (and woken for if the group was at its limit).
                if !self.workers.limited_ready.load(Relaxed) {
                    self.workers.limited_ready.store(true, Relaxed);
                }
                if before >= group.pool.target() {
                    group.notify_one();
                }
            }
        }
    }

    /// Runs one turn of a process of `local`'s group (a place claimed), charging its group.
    #[inline]
    fn run_turn(&self, local: &Rc<Local>, task: Task) {
        let group = &local.group;
        self.switch_to(local);
        let clock = self.workers.vclock.load(Relaxed);
        if let Some(domain) = local.domain() {
            if domain.vtime.load(Relaxed) < clock {
                // Back from idleness: from the clock, with no credit banked.
                domain.vtime.fetch_max(clock, Relaxed);
            }
        }
        let principal = match &group.scheduler {
            Some(_) => task.principal().cloned(),
            None => None,
        };
        let timed = group.cpu_budget.is_some()
            || group
                .scheduler
                .as_ref()
                .is_some_and(|s| s.wants_turn_times());
        let start = timed.then(Instant::now);
        let coarse = shared_clock().nanos();
        self.current.set(Some(Rc::clone(local)));
        let handled = self.run_sampled(&local.recorder, task);
        self.current.set(None);
        let elapsed = start.map_or(Duration::ZERO, |s| s.elapsed());
        if let Some(cpu) = &group.cpu_budget {
            cpu.charge(elapsed);
        }
        if let Some(scheduler) = &group.scheduler {
            scheduler.turn_finished(&TurnReport {
                principal: principal.as_ref(),
                handled,
                elapsed,
            });
        }
        if let Some(domain) = local.domain() {
            let charged = shared_clock().nanos().saturating_sub(coarse);
            if charged > 0 {
                domain.vtime.fetch_add(
                    charged.saturating_mul(DEFAULT_SHARE) / domain.share,
                    Relaxed,
                );
            }
        }
        self.release(group);
    }

    /// Runs the turn, sampled as a dedicated worker samples (`task.rs`, `Sampler`).
    #[inline]
    fn run_sampled(&self, recorder: &Recorder, task: Task) -> usize {
        let tick = self.tick.get().wrapping_add(1);
        self.tick.set(tick);
        self.sampler
            .run(tick, recorder, |sampled| task.run(sampled, recorder))
    }

    /// The worker now serves `local`'s group: the group it served before becomes idle (as
    /// this worker sees it), this one busy.
    #[inline]
    fn switch_to(&self, local: &Rc<Local>) {
        match self.last.take() {
            Some(last) if Rc::ptr_eq(&last, local) => {
                self.last.set(Some(last));
                return;
            }
            Some(last) => last.recorder.begin_idle(),
            None => {}
        }
        local.recorder.end_idle();
        self.last.set(Some(Rc::clone(local)));
    }

    /// Queues a process of `group` made ready by the turn running on this worker.
    #[inline]
    fn schedule(
        &self,
        group: &Arc<GroupShared>,
        domain: &Domain,
        task: Task,
        lifo: bool,
    ) -> Result<(), Task> {
        if group.is_stopped() {
            return Err(task);
        }
        let Some(local) = self.local_of(group, domain) else {
            // This worker has not seen the group yet.
            return Err(task);
        };
        if !lifo {
            // A yield goes behind what this worker holds of the group, which it runs first
            // (the shared queue comes first every INJECTOR_CHECK_INTERVAL turns). When it holds
            // nothing of the group, what waits is in the shared queue: queued here, the process
            // would run again before all of that.
            if local.queue.as_ref().is_none_or(|q| q.is_empty()) && !group.injector.is_empty() {
                group.injector.push(task);
                group.notify_one();
            } else {
                self.queue_locally(&local, task, true);
            }
            return Ok(());
        }
        let clock = self.workers.vclock.load(Relaxed);
        // The slot's process runs before everything queued: it may overtake nobody, neither
        // the process already in the slot nor one of its own group waiting on this worker
        // (module doc, *Crossing groups on one worker*).
        let overtakes = self.has_lifo_task() || local.queue.as_ref().is_some_and(|q| !q.is_empty());
        if overtakes
            || !group.lifo_slot
            || domain.vtime.load(Relaxed) > clock.saturating_add(HANDOFF_SLACK)
        {
            // No handoff: behind the group's queue on this worker, whose choice among groups
            // (or another worker's stealing) decides when it runs.
            self.queue_locally(&local, task, true);
            return Ok(());
        }
        self.lifo.set(Some((local, task)));
        Ok(())
    }

    /// This worker's view of `group`, if it has one yet.
    fn local_of(&self, group: &Arc<GroupShared>, domain: &Domain) -> Option<Rc<Local>> {
        let domains = self.domains.try_borrow().ok()?;
        let local = domains.get(domain.index)?.as_ref()?;
        Arc::ptr_eq(&local.group, group).then(|| Rc::clone(local))
    }

    #[inline]
    fn has_lifo_task(&self) -> bool {
        is_occupied(&self.lifo)
    }

    /// Whether nothing but `group`'s running process could use this worker: the LIFO slot is
    /// empty, and no group has work queued.
    #[inline]
    fn has_nothing_but(&self, group: &Arc<GroupShared>) -> bool {
        if self.has_lifo_task() || group.has_visible_work() {
            return false;
        }
        let Ok(domains) = self.domains.try_borrow() else {
            return false;
        };
        domains
            .iter()
            .flatten()
            .all(|local| Arc::ptr_eq(&local.group, group) || !local.group.has_visible_work())
    }

    /// Whether any group has work a worker may take now.
    fn any_runnable(&self) -> bool {
        self.refresh();
        let Ok(domains) = self.domains.try_borrow() else {
            return true;
        };
        domains
            .iter()
            .flatten()
            .any(|local| self.runnable(&local.group))
    }

    /// Groups that have work but a spent CPU budget: re-arms them at once if nothing else
    /// wants the CPU (a virtual tick; then `Some(ZERO)`), and otherwise says how long to sleep
    /// at most before looking again. `None` if no group is held back.
    fn held_back(&self) -> Option<Duration> {
        let domains = self.domains.try_borrow().ok()?;
        let now = Instant::now();
        let mut wait: Option<Duration> = None;
        for local in domains.iter().flatten() {
            let group = &local.group;
            let Some(cpu) = &group.cpu_budget else {
                continue;
            };
            if group.is_stopped() || !group.has_visible_work() || !cpu.exhausted(now) {
                continue;
            }
            let look = cpu.passed_over(now);
            if cpu.virtual_tick(|| others_idle(group)) {
                return Some(Duration::ZERO);
            }
            wait = Some(wait.map_or(look, |w| w.min(look)));
        }
        wait
    }

    /// Sleeps until woken, or for `timeout`: in the runtime's I/O poll if the workers drive it
    /// and no other worker waits in it (returning how many readiness events it handed to
    /// their processes, which this worker then runs), else on its parker.
    fn sleep(&self, timeout: Option<Duration>) -> usize {
        #[cfg(feature = "net")]
        if let Some((net, interrupt)) = self.workers.io.get() {
            if let Some(mut driver) = net.try_drive() {
                // Work posted meanwhile wakes another sleeper first: woken, this one would
                // leave the poll unwatched while the other sleeps on.
                self.workers.idle.wake_last(self.index);
                self.workers.in_poll.store(true, Release);
                let slept = self.parker.park_in(interrupt, || driver.poll(timeout));
                self.workers.in_poll.store(false, Release);
                return match slept {
                    Some(Ok(dispatched)) => dispatched,
                    Some(Err(_)) => {
                        // Not in a loop around a failing poll: let go of it for a while.
                        drop(driver);
                        self.parker.park(Some(POLL_ERROR_PAUSE));
                        0
                    }
                    None => 0,
                };
            }
            if !self.workers.in_poll.load(Acquire) {
                // A busy worker looks at the poll between two turns, and nobody will wait in
                // it once that one goes on: sleep a moment only, then try to take it.
                let moment = Duration::from_nanos(IO_CHECK_PERIOD);
                self.parker
                    .park(Some(timeout.map_or(moment, |t| t.min(moment))));
                return 0;
            }
        }
        self.parker.park(timeout);
        0
    }

    /// Every [`IO_CHECK_INTERVAL`] turns, or [`IO_CHECK_PERIOD`] of the coarse clock if that
    /// comes first (long turns), between two: readiness events, without waiting, if no worker
    /// waits in the poll (so sockets are served while every worker is busy).
    #[inline]
    fn check_io(&self) {
        #[cfg(feature = "net")]
        if self.workers.io.get().is_some() {
            let now = shared_clock().nanos();
            let due = self.tick.get().is_multiple_of(IO_CHECK_INTERVAL)
                || now.saturating_sub(self.io_checked.get()) >= IO_CHECK_PERIOD;
            if due {
                self.io_checked.set(now);
                self.poll_now();
            }
        }
    }

    /// Readiness events, without waiting, if no other worker has the poll; how many
    /// callbacks ran (the processes they made ready are in this worker's slot and queues).
    #[inline]
    fn poll_now(&self) -> usize {
        #[cfg(feature = "net")]
        if let Some(mut driver) = self.workers.io.get().and_then(|(net, _)| net.try_drive()) {
            // An error is logged; the next look, or a sleeping worker, tries again.
            return driver.poll(Some(Duration::ZERO)).unwrap_or(0);
        }
        0
    }

    /// Looks for work, sleeping when there is none; `None` once the workers stop.
    fn search(&self) -> Option<(Rc<Local>, Task)> {
        let idle = &self.workers.idle;
        idle.start_searching();
        if let Some(last) = self.last.take() {
            last.recorder.begin_idle();
        }
        let mut rounds = 0;
        loop {
            // The slot too: terminating a process (a stopped group's) may have filled it.
            if let Some(found) = self.next() {
                idle.stop_searching_found_work();
                return Some(found);
            }
            if self.workers.is_stopped() {
                return None;
            }
            if rounds < SEARCH_ROUNDS_BEFORE_SLEEP {
                rounds += 1;
                // Sockets first: while every worker searches, nobody waits in the poll, and
                // readiness would only be seen once one sleeps.
                if self.poll_now() == 0 {
                    std::thread::yield_now();
                }
                continue;
            }
            let decision = idle.prepare_to_sleep(self.index, || {
                self.workers.is_stopped() || self.has_lifo_task() || self.any_runnable()
            });
            if decision == SleepDecision::Park {
                // Looked at after registering as a sleeper: a task queued for a group held
                // back by its budget before this point is seen here (and bounds the sleep);
                // one queued after it finds this worker asleep and wakes it.
                let timeout = self.held_back();
                if timeout == Some(Duration::ZERO) {
                    idle.unregister(self.index);
                    continue;
                }
                loop {
                    let dispatched = self.sleep(timeout);
                    if self.workers.is_stopped() {
                        return None;
                    }
                    if dispatched > 0 {
                        // Readiness made processes ready, in this worker's slot and queues:
                        // searching again, it runs them.
                        idle.unregister(self.index);
                        break;
                    }
                    if !idle.is_sleeping(self.index) {
                        break;
                    }
                    if timeout.is_some() {
                        // Time to look at the held-back groups again: searching once more.
                        idle.unregister(self.index);
                        break;
                    }
                }
            }
        }
    }
}

/// Takes from a crossbeam queue, retrying while it says so.
#[inline]
fn take(mut steal: impl FnMut() -> Steal<Task>) -> Option<Task> {
    loop {
        match steal() {
            Steal::Success(task) => return Some(task),
            Steal::Empty => return None,
            Steal::Retry => continue,
        }
    }
}

/// Whether every group of `group`'s runtime other than `group` leaves the CPU idle: no message
/// queued, nothing on a run queue and no turn running — or held back by its own CPU budget.
pub(crate) fn others_idle(group: &Arc<GroupShared>) -> bool {
    group.kernel.groups().iter().all(|other| {
        Arc::ptr_eq(other, group)
            || other.is_stopped()
            || other
                .cpu_budget
                .as_ref()
                .is_some_and(|c| c.is_waiting() || (other.domain.is_some() && c.is_spent()))
            || !other.is_busy()
    })
}
