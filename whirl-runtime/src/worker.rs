//! A worker thread's run loop: take a ready process, run one turn of it, repeat; steal when
//! out of local work; sleep when there is none anywhere.

use std::cell::Cell;
use std::ptr;
use std::sync::Arc;

use crossbeam_deque::{Steal, Stealer, Worker};

use crate::cell::Task;
use crate::group::{GroupShared, LOCAL_QUEUE_CAP};
use crate::idle::SleepDecision;
use crate::park::{Parker, Unparker};

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
    CURRENT.with(|c| !c.get().is_null())
}

/// Schedules `task` on the calling thread's worker if it belongs to `group`; otherwise hands
/// the task back.
#[inline]
pub(crate) fn schedule_on_current_worker(
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
        // thread, and it points at that function's own `self`, which outlives the call.
        let worker = unsafe { &*current };
        if !Arc::ptr_eq(&worker.group, group) {
            return Err(task);
        }
        worker.schedule_local(task, lifo);
        Ok(())
    })
}

pub(crate) struct WorkerThread {
    group: Arc<GroupShared>,
    index: usize,
    local: Worker<Task>,
    lifo: Cell<Option<Task>>,
    lifo_streak: Cell<u32>,
    tick: Cell<u32>,
    rng: Cell<u32>,
    parker: Parker,
}

/// Clears `CURRENT` when the run loop exits, however it exits.
struct CurrentGuard;

impl Drop for CurrentGuard {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(ptr::null()));
    }
}

impl WorkerThread {
    pub(crate) fn new(group: Arc<GroupShared>, index: usize) -> (Self, Stealer<Task>, Unparker) {
        let local = Worker::new_fifo();
        let stealer = local.stealer();
        let (parker, unparker) = Parker::new();
        let worker = WorkerThread {
            group,
            index,
            local,
            lifo: Cell::new(None),
            lifo_streak: Cell::new(0),
            tick: Cell::new(0),
            rng: Cell::new(0x9E37_79B9 ^ (index as u32).wrapping_mul(0x85EB_CA6B) | 1),
            parker,
        };
        (worker, stealer, unparker)
    }

    pub(crate) fn run(self) {
        CURRENT.with(|c| c.set(&self));
        let _guard = CurrentGuard;
        loop {
            if let Some(task) = self.next_local_task() {
                task.run();
                continue;
            }
            if !self.search_and_run() {
                return;
            }
        }
    }

    pub(crate) fn schedule_local(&self, task: Task, lifo: bool) {
        if lifo && self.group.lifo_slot {
            match self.lifo.replace(Some(task)) {
                // The slot was empty: this worker runs the task next; nobody else to wake.
                None => return,
                Some(displaced) => self.push_queue(displaced),
            }
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
        let task = self.lifo.take();
        let occupied = task.is_some();
        self.lifo.set(task);
        occupied
    }

    fn push_queue(&self, task: Task) {
        if self.local.len() >= LOCAL_QUEUE_CAP {
            self.group.injector.push(task);
        } else {
            self.local.push(task);
        }
    }

    fn next_local_task(&self) -> Option<Task> {
        let tick = self.tick.get().wrapping_add(1);
        self.tick.set(tick);
        if tick % INJECTOR_CHECK_INTERVAL == 0 {
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
            loop {
                match stealers[victim].steal_batch_and_pop(&self.local) {
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

    /// Looks for work elsewhere, sleeping when there is none. Returns `false` when the group
    /// is stopping.
    fn search_and_run(&self) -> bool {
        let idle = &self.group.idle;
        idle.start_searching();
        let mut rounds = 0;
        loop {
            if let Some(task) = self
                .steal_from_injector()
                .or_else(|| self.steal_from_peers())
            {
                idle.stop_searching_found_work();
                task.run();
                return true;
            }
            if self.group.is_stopped() {
                return false;
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
                self.group.is_stopped() || self.group.has_visible_work()
            });
            if decision == SleepDecision::Park {
                loop {
                    self.parker.park(None);
                    if self.group.is_stopped() {
                        return false;
                    }
                    if !idle.is_sleeping(self.index) {
                        break;
                    }
                }
            }
        }
    }
}
