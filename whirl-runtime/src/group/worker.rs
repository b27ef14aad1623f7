//! A dedicated group's worker thread's run loop: take a ready process, run one turn of it, repeat; steal when
//! out of local work; sleep when there is none anywhere. Also where a group's tasks go
//! ([`GroupShared::schedule`]): to the current worker's LIFO slot or queue, a scheduler, or the
//! injector; and how the pool's workers are started ([`GroupShared::resize`]).

use std::cell::Cell;
use std::ptr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_deque::{Steal, Stealer, Worker};

use super::cpu_budget::CpuGovernor;
use super::idle::SleepDecision;
use super::park::{Parker, Unparker};
use super::pool::Slot;
use super::probe::Running;
use super::scheduler::{Scheduler, TurnReport};
use super::shared::{GroupShared, LOCAL_QUEUE_CAP};
use super::task::{is_occupied, Recorder, Sampler, Task};

/// How often (in turns) a worker looks at the injector before its own queue, so tasks posted
/// from outside are not starved by a worker that always has local work. The value tokio and Go
/// use.
const INJECTOR_CHECK_INTERVAL: u32 = 61;

/// Consecutive turns the LIFO slot may win before its task goes to the back of the queue;
/// bounds how long a ping-ponging pair can hold a worker.
const MAX_LIFO_STREAK: u32 = 16;

/// Failed search rounds (each a `yield_now`) before a worker parks.
const SEARCH_ROUNDS_BEFORE_SLEEP: u32 = 32;

thread_local! {
    static CURRENT: Cell<*const WorkerThread> = const { Cell::new(ptr::null()) };
}

/// Whether the calling thread is a whirl worker (that is, we are inside a handler).
pub(crate) fn on_worker_thread() -> bool {
    CURRENT.with(|c| !c.get().is_null()) || super::workers::on_shared_worker()
}

/// What the calling thread's worker is running, if the caller is a worker inside a turn: for
/// reports made on that thread, such as the panic hook's.
pub(crate) fn current_turn() -> Option<(Running, String)> {
    CURRENT.with(|c| {
        let current = c.get();
        if current.is_null() {
            return super::workers::current_turn();
        }
        // SAFETY: `CURRENT` is non-null only while `WorkerThread::run` is executing on this
        // thread, and it points at that function's own `self`, which outlives the call
        // (invariant I10 in ARCHITECTURE.md).
        let worker = unsafe { &*current };
        let running = worker.recorder.probe().read()?;
        Some((running, worker.group.name.clone()))
    })
}

/// Schedules `task` on the calling thread's worker if it belongs to `group`; otherwise hands
/// the task back.
#[inline]
fn schedule_on_current_worker(
    group: &Arc<GroupShared>,
    task: Task,
    lifo: bool,
) -> Result<(), Task> {
    CURRENT.with(|c| {
        let current = c.get();
        if current.is_null() {
            return Err(task);
        }
        // SAFETY: `CURRENT` is non-null only while `WorkerThread::run` is executing on this
        // thread, and it points at that function's own `self`, which outlives the call
        // (invariant I10 in ARCHITECTURE.md).
        let worker = unsafe { &*current };
        if !Arc::ptr_eq(&worker.group, group) {
            return Err(task);
        }
        worker.schedule_local(task, lifo);
        Ok(())
    })
}

/// Whether the turn running on this thread may keep its process a little longer, waiting for
/// more messages: only on a worker of `group` (without a scheduler of its own) that has nothing
/// else to run, neither locally nor in the injector, in a group that is not stopping.
pub(crate) fn may_linger(group: &Arc<GroupShared>) -> bool {
    if group.scheduler.is_some() || group.is_stopped() {
        return false;
    }
    if let Some(domain) = &group.domain {
        return super::workers::may_linger(group, domain);
    }
    CURRENT.with(|c| {
        let current = c.get();
        if current.is_null() {
            return false;
        }
        // SAFETY: `CURRENT` is non-null only while `WorkerThread::run` is executing on this
        // thread, and it points at that function's own `self`, which outlives the call
        // (invariant I10 in ARCHITECTURE.md).
        let worker = unsafe { &*current };
        Arc::ptr_eq(&worker.group, group)
            && worker.local.is_empty()
            && !worker.has_lifo_task()
            && group.injector.is_empty()
    })
}

/// Where a group's tasks go: the half of a group that knows its workers.
impl GroupShared {
    /// Puts a process whose token the caller holds on a run queue. From one of this group's
    /// workers it goes to that worker (LIFO slot first); from anywhere else, to the injector.
    #[inline]
    pub(crate) fn schedule(self: &Arc<Self>, task: Task) {
        if let Some(scheduler) = &self.scheduler {
            self.push_scheduled(scheduler.as_ref(), task, false);
        } else if let Some(domain) = &self.domain {
            self.schedule_shared(domain, task, true);
        } else if let Err(task) = schedule_on_current_worker(self, task, true) {
            self.push_remote(task);
        }
    }

    /// Re-queues a process that used up its budget, behind the others (no LIFO slot).
    pub(crate) fn yield_now(self: &Arc<Self>, task: Task) {
        if let Some(scheduler) = &self.scheduler {
            self.push_scheduled(scheduler.as_ref(), task, true);
        } else if let Some(domain) = &self.domain {
            self.schedule_shared(domain, task, false);
        } else if let Err(task) = schedule_on_current_worker(self, task, false) {
            self.push_remote(task);
        }
    }

    /// Moves the pool toward `threads` (clamped to the range): starts workers now, or lets
    /// the surplus retire. Returns the new target.
    pub(crate) fn resize(self: &Arc<Self>, threads: usize) -> usize {
        if self.kernel.stepped {
            // Turns run on the caller's thread (`GroupShared::run_stepped`).
            self.update_admission();
            return self.pool.range.min();
        }
        if let Some(domain) = &self.domain {
            // On shared workers the size is a concurrency limit: no thread to start, but
            // sleeping workers may now take what the lower limit held back.
            let before = self.pool.target();
            let limit = self.pool.set_limit(threads);
            if limit > before {
                domain.workers.idle.notify_all();
            }
            self.update_admission();
            return limit;
        }
        let target = self.pool.resize(
            threads,
            || self.is_stopped(),
            |index, slot| {
                let (thread, stealer, unparker) = WorkerThread::new(Arc::clone(self), index, slot);
                self.idle.register(index, unparker);
                {
                    let mut stealers = self.stealers.write();
                    if stealers.len() <= index {
                        stealers.resize_with(index + 1, || None);
                    }
                    stealers[index] = Some(stealer);
                }
                let spawned = std::thread::Builder::new()
                    .name(format!("whirl-{}-{index}", self.name))
                    .spawn(move || thread.run());
                if spawned.is_err() {
                    self.stealers.write()[index] = None;
                }
                spawned
            },
        );
        if self.pool.live() > target {
            // Sleepers wake, find the pool too big, and retire.
            self.idle.notify_all();
        }
        self.update_admission();
        target
    }
}

/// Turns of a stepped runtime (`RuntimeBuilder::stepped`), on the caller's thread.
impl GroupShared {
    /// Takes the next ready process as a worker would, and runs one turn of it here.
    pub(crate) fn run_stepped(self: &Arc<Self>) -> Option<usize> {
        let task = match &self.scheduler {
            Some(scheduler) => scheduler.pop(0).map(|ready| ready.into_task())?,
            None => loop {
                match self.injector.steal() {
                    Steal::Success(task) => break task,
                    Steal::Empty => return None,
                    Steal::Retry => continue,
                }
            },
        };
        let principal = task.principal().cloned();
        let recorder = Recorder::new(self.pool.stepping_slot());
        let handled = task.run(true, &recorder);
        if let Some(scheduler) = &self.scheduler {
            scheduler.turn_finished(&TurnReport {
                principal: principal.as_ref(),
                handled,
                elapsed: Duration::ZERO,
            });
        }
        Some(handled)
    }
}

pub(crate) struct WorkerThread {
    group: Arc<GroupShared>,
    index: usize,
    recorder: Recorder,
    local: Worker<Task>,
    lifo: Cell<Option<Task>>,
    lifo_streak: Cell<u32>,
    tick: Cell<u32>,
    sampler: Sampler,
    rng: Cell<u32>,
    parker: Parker,
}

/// How a search for work ended.
enum Found {
    Task(Task),
    Stop,
    Retire,
}

/// Clears `CURRENT` when the run loop exits, however it exits.
struct CurrentGuard;

impl Drop for CurrentGuard {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(ptr::null()));
    }
}

impl WorkerThread {
    pub(crate) fn new(
        group: Arc<GroupShared>,
        index: usize,
        slot: Arc<Slot>,
    ) -> (Self, Stealer<Task>, Unparker) {
        let local = Worker::new_fifo();
        let stealer = local.stealer();
        let (parker, unparker) = Parker::new();
        let worker = WorkerThread {
            group,
            index,
            recorder: Recorder::new(slot),
            local,
            lifo: Cell::new(None),
            lifo_streak: Cell::new(0),
            tick: Cell::new(0),
            sampler: Sampler::new(),
            rng: Cell::new(0x9E37_79B9 ^ (index as u32).wrapping_mul(0x85EB_CA6B) | 1),
            parker,
        };
        (worker, stealer, unparker)
    }

    pub(crate) fn run(self) {
        CURRENT.with(|c| c.set(&self));
        let _guard = CurrentGuard;
        let group = Arc::clone(&self.group);
        let ended = match group.scheduler.as_deref() {
            None => self.run_work_stealing(),
            Some(scheduler) => self.run_scheduled(scheduler),
        };
        if let Found::Retire = ended {
            self.retire();
        }
        self.publish_stats();
    }

    /// The built-in scheduler: local queue and LIFO slot, the injector, stealing.
    fn run_work_stealing(&self) -> Found {
        loop {
            let tick = self.tick.get().wrapping_add(1);
            self.tick.set(tick);
            if tick.is_multiple_of(INJECTOR_CHECK_INTERVAL) && self.group.pool.try_retire() {
                return Found::Retire;
            }
            self.respect_cpu_budget();
            if let Some(task) = self.next_local_task(tick) {
                let _ = self.run_task(task);
                continue;
            }
            let found = self.search(|| {
                self.steal_from_injector()
                    .or_else(|| self.steal_from_peers())
            });
            match found {
                Found::Task(task) => {
                    let _ = self.run_task(task);
                }
                ended => return ended,
            }
        }
    }

    /// A group with its own [`Scheduler`]: ask it for every turn.
    fn run_scheduled(&self, scheduler: &dyn Scheduler) -> Found {
        let find = || scheduler.pop(self.index).map(|ready| ready.into_task());
        loop {
            self.tick.set(self.tick.get().wrapping_add(1));
            if self.group.pool.try_retire() {
                return Found::Retire;
            }
            self.respect_cpu_budget();
            let task = match find() {
                Some(task) => task,
                None => match self.search(find) {
                    Found::Task(task) => task,
                    ended => return ended,
                },
            };
            let principal = task.principal().cloned();
            let start = scheduler.wants_turn_times().then(Instant::now);
            let handled = self.run_task(task);
            scheduler.turn_finished(&TurnReport {
                principal: principal.as_ref(),
                handled,
                elapsed: start.map_or(Duration::ZERO, |s| s.elapsed()),
            });
        }
    }

    /// Runs one turn; returns the messages handled (the sampling is `task.rs`'s `Sampler`).
    /// The turn is sampled (timed, its queue latencies recorded) one time in
    /// [`SAMPLE_EVERY`](crate::control::SAMPLE_EVERY), and also when it is the first of
    /// this worker in a new millisecond of the shared coarse clock to handle a message: so a
    /// quiet group has every turn sampled (a new user saw `0 samples` after a thousand
    /// messages handled in long turns), and a busy worker adds at most 1,000 sampled turns a
    /// second to its one in 64. A turn that handled nothing (a process's start, a wake-up
    /// with an empty inbox) leaves the millisecond's sample to the next turn: otherwise a
    /// process spawned and then sent one long message in the same millisecond would never
    /// be measured. The check is one relaxed load of a static.
    #[inline]
    fn run_task(&self, task: Task) -> usize {
        self.sampler
            .run(self.tick.get(), &self.recorder, |sampled| {
                match &self.group.cpu_budget {
                    None => task.run(sampled, &self.recorder),
                    Some(cpu) => self.run_budgeted(cpu, task, sampled),
                }
            })
    }

    /// Runs a turn of a group with a CPU budget: waits first if the budget is spent (holding
    /// the task: the group's other workers wait too), then charges the turn's time.
    #[inline(never)]
    fn run_budgeted(&self, cpu: &CpuGovernor, task: Task, sampled: bool) -> usize {
        let mut start = Instant::now();
        if cpu.exhausted(start) {
            self.wait_for_budget(cpu);
            start = Instant::now();
        }
        let handled = task.run(sampled, &self.recorder);
        cpu.charge(start.elapsed());
        handled
    }

    /// Waits, counted as idle, until the group's CPU budget is re-armed (`cpu_budget.rs`).
    #[cold]
    fn wait_for_budget(&self, cpu: &CpuGovernor) {
        if self.group.is_stopped() {
            // A stopped group ignores its budget: shutdown never waits for a tick.
            return;
        }
        self.begin_idle();
        cpu.wait(
            || self.group.is_stopped(),
            || super::workers::others_idle(&self.group),
        );
        self.end_idle();
    }

    /// Before taking a task: waits while the group's CPU budget is spent, so that the task
    /// taken after is the one the queues hold then (a higher-priority one may have come).
    #[inline]
    fn respect_cpu_budget(&self) {
        if let Some(cpu) = &self.group.cpu_budget {
            if cpu.exhausted(Instant::now()) {
                self.wait_for_budget(cpu);
            }
        }
    }

    fn publish_stats(&self) {
        self.recorder.publish();
    }

    /// Leaves the pool: queued processes go to the injector for the others, the slot is
    /// freed for the next worker started.
    fn retire(&self) {
        let mut handed_over = false;
        if let Some(task) = self.lifo.take() {
            self.group.injector.push(task);
            handed_over = true;
        }
        while let Some(task) = self.local.pop() {
            self.group.injector.push(task);
            handed_over = true;
        }
        if let Some(stealer) = self.group.stealers.write().get_mut(self.index) {
            *stealer = None;
        }
        if handed_over {
            self.group.idle.notify_one();
        }
        self.publish_stats();
        self.group.pool.vacate(self.index);
    }

    pub(crate) fn schedule_local(&self, task: Task, lifo: bool) {
        if lifo && self.group.lifo_slot && !self.has_lifo_task() && self.local.is_empty() {
            // The task overtakes nobody (the slot is free, nothing waits on this worker): it
            // runs next, and there is nobody else to wake. Otherwise it queues behind, as the
            // shared workers do (`workers.rs`, *Crossing groups on one worker*).
            self.lifo.set(Some(task));
            return;
        } else if !lifo && self.local.is_empty() && !self.group.injector.is_empty() {
            // A process yielding its budget goes behind everything waiting, and when this
            // worker has nothing local, what waits is in the injector: queueing locally would
            // run it again before them (for up to INJECTOR_CHECK_INTERVAL turns).
            self.group.injector.push(task);
            self.group.idle.notify_one();
            return;
        } else {
            self.push_queue(task);
        }
        // Wake a sleeper only if this worker now has more than the one task it will run
        // next: a lone process yielding its budget would otherwise wake a thread that finds
        // nothing to steal, or steals the process and moves it to a cold cache.
        let pending = self.local.len() + usize::from(self.has_lifo_task());
        if pending > 1 {
            self.group.idle.notify_one();
        }
    }

    fn has_lifo_task(&self) -> bool {
        is_occupied(&self.lifo)
    }

    fn push_queue(&self, task: Task) {
        if self.local.len() >= LOCAL_QUEUE_CAP {
            self.group.injector.push(task);
        } else {
            self.local.push(task);
        }
    }

    fn next_local_task(&self, tick: u32) -> Option<Task> {
        if tick.is_multiple_of(INJECTOR_CHECK_INTERVAL) {
            if let Some(task) = self.steal_from_injector() {
                return Some(task);
            }
        }
        if let Some(task) = self.lifo.take() {
            let streak = self.lifo_streak.get();
            if streak < MAX_LIFO_STREAK {
                self.lifo_streak.set(streak + 1);
                return Some(task);
            }
            self.push_queue(task);
        }
        self.lifo_streak.set(0);
        self.local.pop()
    }

    fn steal_from_injector(&self) -> Option<Task> {
        loop {
            match self.group.injector.steal_batch_and_pop(&self.local) {
                Steal::Success(task) => return Some(task),
                Steal::Empty => return None,
                Steal::Retry => continue,
            }
        }
    }

    fn steal_from_peers(&self) -> Option<Task> {
        let stealers = self.group.stealers.read();
        let n = stealers.len();
        if n <= 1 {
            return None;
        }
        let start = self.next_random() as usize % n;
        for i in 0..n {
            let victim = (start + i) % n;
            if victim == self.index {
                continue;
            }
            let Some(stealer) = &stealers[victim] else {
                continue;
            };
            loop {
                match stealer.steal_batch_and_pop(&self.local) {
                    Steal::Success(task) => return Some(task),
                    Steal::Empty => break,
                    Steal::Retry => continue,
                }
            }
        }
        None
    }

    fn next_random(&self) -> u32 {
        // xorshift32: only spreads thieves over victims, quality does not matter.
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.rng.set(x);
        x
    }

    /// Looks for work with `find`, sleeping when there is none; also ends when the group
    /// stops or the pool has a worker too many.
    fn search(&self, find: impl Fn() -> Option<Task>) -> Found {
        let idle = &self.group.idle;
        let pool = &self.group.pool;
        idle.start_searching();
        self.begin_idle();
        let mut rounds = 0;
        let found = loop {
            if let Some(task) = find() {
                idle.stop_searching_found_work();
                break Found::Task(task);
            }
            if self.group.is_stopped() {
                break Found::Stop;
            }
            if pool.try_retire() {
                idle.stop_searching_retired();
                break Found::Retire;
            }
            // Search a little longer before sleeping: while this worker counts as searching,
            // posts skip the wake-up system call, which is most of the cost of a process
            // that drains its inbox faster than a steady sender fills it. Yielding (not
            // busy-spinning) leaves the core to that sender when cores are scarce.
            if rounds < SEARCH_ROUNDS_BEFORE_SLEEP {
                rounds += 1;
                std::thread::yield_now();
                continue;
            }
            let decision = idle.prepare_to_sleep(self.index, || {
                self.group.is_stopped()
                    || self.group.has_visible_work()
                    || pool.live() > pool.target()
            });
            if decision == SleepDecision::Park {
                loop {
                    self.parker.park(None);
                    if self.group.is_stopped() {
                        self.end_idle();
                        return Found::Stop;
                    }
                    if !idle.is_sleeping(self.index) {
                        break;
                    }
                }
            }
        };
        self.end_idle();
        found
    }

    /// Marks the start of an idle spell (publishing what the last turns recorded).
    fn begin_idle(&self) {
        self.recorder.begin_idle();
    }

    fn end_idle(&self) {
        self.recorder.end_idle();
    }
}
