//! AppBackplane scheduling: a group's CPU budget per integration period, for a group with
//! threads of its own and for one on the shared workers (workers wait, or pass the group over,
//! when it is spent; virtual ticks when the rest of the runtime is idle, shutdown while waiting), and
//! priority inheritance (a process runs at the highest priority among the principals of its
//! queued messages).

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use whirl::prelude::*;
use whirl::scheduler::{CpuBudget, PrincipalPriority};
use whirl::SharedClient;

/// How long a condition may take to hold; generous, for loaded CI machines.
const DEADLINE: Duration = Duration::from_secs(120);

fn eventually(done: impl Fn() -> bool) -> bool {
    let until = Instant::now() + DEADLINE;
    while Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    done()
}

/// Keeps this thread busy for `d` of wall-clock time (what a CPU budget charges).
fn burn(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

#[derive(Message)]
struct Burn;

/// Burns `micros` per message; with `feed`, posts itself the next message (always busy).
#[process]
struct Burner {
    micros: u64,
    feed: bool,
}

#[process]
impl Burner {
    #[handle]
    fn burn(&mut self, _: Burn, ctx: &mut Ctx<Self>) {
        burn(Duration::from_micros(self.micros));
        if self.feed {
            let _ = ctx.myself().post(Burn);
        }
    }
}

fn budget(share: f64, period_ms: u64) -> CpuBudget {
    CpuBudget::new(share, Duration::from_millis(period_ms))
        .expect("a valid budget")
        .cores(1)
}

fn cpu(group: &Group) -> whirl::control::CpuBudgetStats {
    group.stats().cpu_budget.expect("a budgeted group")
}

/// Where a test's groups run: a thread of their own each, or the runtime's shared workers.
trait On {
    fn on(self, shared: bool) -> Self;
}

impl On for whirl::GroupBuilder {
    fn on(self, shared: bool) -> Self {
        if shared {
            self
        } else {
            self.threads(1)
        }
    }
}

/// A runtime with two shared workers (what the shared variants run on).
fn runtime() -> Runtime {
    Runtime::builder().threads(2).build().unwrap()
}

fn a_budgeted_group_gets_its_share_and_handles_every_message_after(shared: bool) {
    let rt = runtime();
    // One message per turn, so that the budget is checked between messages.
    let free = rt.group("free").on(shared).budget(1).build().unwrap();
    let capped = rt
        .group("capped")
        .on(shared)
        .budget(1)
        .cpu_budget(budget(0.25, 20).virtual_ticks(false))
        .build()
        .unwrap();
    let n = 400;
    let a = free.spawn(Burner {
        micros: 500,
        feed: false,
    });
    let b = capped.spawn(Burner {
        micros: 500,
        feed: false,
    });
    for _ in 0..n {
        a.post(Burn).unwrap();
        b.post(Burn).unwrap();
    }
    assert!(eventually(|| free.counts().handled == n));
    let capped_handled = capped.counts().handled;
    let ratio = capped_handled as f64 / n as f64;
    // A quarter of a core against a whole one: ≈ 0.25, with room for a loaded machine.
    assert!(
        (0.08..0.6).contains(&ratio),
        "the capped group handled {capped_handled} while the free one handled {n} ({ratio:.2})"
    );
    let stats = cpu(&capped);
    assert!(stats.throttled > 0 && stats.periods > 0, "{stats:?}");
    assert_eq!(stats.virtual_ticks, 0, "virtual ticks are off");
    assert!(free.stats().cpu_budget.is_none());
    // Waiting loses nothing: every message is handled, at the budget's pace.
    assert!(eventually(|| capped.counts().handled == n));
    rt.block_until_idle();
    let c = capped.counts();
    assert_eq!((c.posted, c.handled, c.dead_lettered), (n, n, 0));
    assert!(cpu(&capped).spent >= Duration::from_micros(500 * n));
    rt.shutdown_graceful();
}

fn a_virtual_tick_re_arms_the_budget_only_when_the_rest_of_the_runtime_is_idle(shared: bool) {
    let rt = runtime();
    let busy = rt.group("busy").on(shared).budget(1).build().unwrap();
    let capped = rt
        .group("capped")
        .on(shared)
        .budget(1)
        .cpu_budget(budget(0.1, 20))
        .build()
        .unwrap();
    // Another group always has work: the budget is a cap.
    let spinner = busy.spawn(Burner {
        micros: 200,
        feed: true,
    });
    spinner.post(Burn).unwrap();
    let b = capped.spawn(Burner {
        micros: 1_000,
        feed: false,
    });
    let n = 40;
    for _ in 0..n {
        b.post(Burn).unwrap();
    }
    // 2 ms per 20 ms period: 10 messages need several periods.
    assert!(eventually(|| capped.counts().handled >= 10));
    let stats = cpu(&capped);
    assert!(stats.throttled > 0, "{stats:?}");
    assert_eq!(
        stats.virtual_ticks, 0,
        "the busy group wants the CPU: {stats:?}"
    );
    // The busy group stops: the capped one no longer waits for ticks.
    spinner.exit(ExitReason::Shutdown);
    assert!(eventually(|| capped.counts().handled == n));
    let stats = cpu(&capped);
    assert!(stats.virtual_ticks > 0, "{stats:?}");
    rt.block_until_idle();
    rt.shutdown_graceful();
}

fn a_lone_budgeted_group_is_re_armed_at_once(shared: bool) {
    let rt = runtime();
    let capped = rt
        .group("alone")
        .on(shared)
        .budget(1)
        // 6 ms per minute: without virtual ticks, 50 ms of work would take minutes.
        .cpu_budget(budget(0.0001, 60_000))
        .build()
        .unwrap();
    let b = capped.spawn(Burner {
        micros: 1_000,
        feed: false,
    });
    for _ in 0..50 {
        b.post(Burn).unwrap();
    }
    assert!(eventually(|| capped.counts().handled == 50));
    let stats = cpu(&capped);
    assert!(stats.virtual_ticks > 0 && stats.throttled > 0, "{stats:?}");
    rt.shutdown_graceful();
}

fn shutdown_does_not_wait_for_the_next_tick(shared: bool) {
    let rt = runtime();
    let capped = rt
        .group("capped")
        .on(shared)
        .budget(1)
        .cpu_budget(budget(0.00001, 600_000).virtual_ticks(false))
        .build()
        .unwrap();
    let b = capped.spawn(Burner {
        micros: 1_000,
        feed: false,
    });
    for _ in 0..20 {
        b.post(Burn).unwrap();
    }
    // 6 ms of budget per 10 minutes, spent by the first few messages: the worker waits.
    assert!(eventually(|| cpu(&capped).throttled > 0));
    assert!(capped.counts().handled < 20);
    // Shutdown wakes it; what is left goes to the dead letters, nothing is lost. (Were the
    // wait not woken, this would hang for ten minutes.)
    let report = rt.shutdown_timeout(Duration::from_millis(50));
    let c = capped.counts();
    assert_eq!(c.posted, c.handled + c.dead_lettered, "{c:?}");
    assert!(report.dead_lettered > 0, "{report:?}");
}

#[test]
fn a_budgeted_group_gets_its_share_and_handles_every_message_after_with_own_threads() {
    a_budgeted_group_gets_its_share_and_handles_every_message_after(false);
}

#[test]
fn a_budgeted_group_gets_its_share_and_handles_every_message_after_on_shared_workers() {
    a_budgeted_group_gets_its_share_and_handles_every_message_after(true);
}

#[test]
fn a_virtual_tick_re_arms_the_budget_only_when_the_rest_of_the_runtime_is_idle_with_own_threads() {
    a_virtual_tick_re_arms_the_budget_only_when_the_rest_of_the_runtime_is_idle(false);
}

#[test]
fn a_virtual_tick_re_arms_the_budget_only_when_the_rest_of_the_runtime_is_idle_on_shared_workers() {
    a_virtual_tick_re_arms_the_budget_only_when_the_rest_of_the_runtime_is_idle(true);
}

#[test]
fn a_lone_budgeted_group_is_re_armed_at_once_with_own_threads() {
    a_lone_budgeted_group_is_re_armed_at_once(false);
}

#[test]
fn a_lone_budgeted_group_is_re_armed_at_once_on_shared_workers() {
    a_lone_budgeted_group_is_re_armed_at_once(true);
}

#[test]
fn shutdown_does_not_wait_for_the_next_tick_with_own_threads() {
    shutdown_does_not_wait_for_the_next_tick(false);
}

#[test]
fn shutdown_does_not_wait_for_the_next_tick_on_shared_workers() {
    shutdown_does_not_wait_for_the_next_tick(true);
}

#[derive(Message)]
struct Hold;

#[derive(Message)]
struct Work;

/// Blocks its worker until `open`, after saying it has begun.
#[process]
struct Gate {
    entered: SharedClient<Arc<AtomicBool>>,
    open: SharedClient<Arc<AtomicBool>>,
}

#[process]
impl Gate {
    #[handle]
    fn hold(&mut self, _: Hold) {
        self.entered.store(true, SeqCst);
        while !self.open.load(SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Notes its number in the shared log when it handles work.
#[process]
struct Worker {
    n: u64,
    log: SharedClient<Arc<Mutex<Vec<u64>>>>,
}

#[process]
impl Worker {
    #[handle]
    fn work(&mut self, _: Work) {
        self.log.lock().unwrap().push(self.n);
    }
}

const REASON: &str = "test instrument: the order in which the processes ran, read by the test";

/// Runs `queue` (posting to a group whose only worker is held) and returns the order in
/// which the processes then ran.
fn run_held(
    rt: &Runtime,
    group: &Group,
    log: &Arc<Mutex<Vec<u64>>>,
    queue: impl FnOnce(),
) -> Vec<u64> {
    let (entered, open) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let gate = group
        .spawner()
        .principal(
            Principal::builder(100)
                .priority(9)
                .build()
                .expect("a valid principal"),
        )
        .spawn(Gate {
            entered: SharedClient::new(Arc::clone(&entered), REASON),
            open: SharedClient::new(Arc::clone(&open), REASON),
        });
    gate.post(Hold).unwrap();
    assert!(eventually(|| entered.load(SeqCst)));
    queue();
    open.store(true, SeqCst);
    rt.block_until_idle();
    gate.exit(ExitReason::Normal);
    std::mem::take(&mut *log.lock().unwrap())
}

#[test]
fn a_process_holding_a_high_priority_message_runs_first() {
    for inheritance in [true, false] {
        let rt = Runtime::new();
        let group = rt
            .group("prio")
            .threads(1)
            .scheduler(PrincipalPriority::new().inheritance(inheritance))
            .build()
            .unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let low = |n: u64| {
            group
                .spawner()
                .principal(
                    Principal::builder(n)
                        .priority(1)
                        .build()
                        .expect("a valid principal"),
                )
                .spawn(Worker {
                    n,
                    log: SharedClient::new(Arc::clone(&log), REASON),
                })
        };
        let (l1, x, l2, l3, y) = (low(1), low(2), low(3), low(4), low(5));
        rt.block_until_idle();
        let vip = Principal::builder(50)
            .priority(7)
            .build()
            .expect("a valid principal");
        let order = run_held(&rt, &group, &log, || {
            l1.post(Work).unwrap();
            // `x` is queued at its own level, behind `l1`...
            x.post(Work).unwrap();
            l2.post(Work).unwrap();
            l3.post(Work).unwrap();
            // ...until a VIP's message reaches it: it moves up.
            x.request(Work).on_behalf(&vip).post().unwrap();
            // `y` is woken by a VIP's message: it is queued high at once.
            y.request(Work).on_behalf(&vip).post().unwrap();
        });
        if inheritance {
            assert_eq!(order, [2, 2, 5, 1, 3, 4]);
        } else {
            assert_eq!(order, [1, 2, 2, 3, 4, 5]);
        }
        // A drained inbox forgets the priority: `x` is low again.
        let order = run_held(&rt, &group, &log, || {
            l1.post(Work).unwrap();
            x.post(Work).unwrap();
        });
        assert_eq!(order, [1, 2]);
        rt.shutdown_graceful();
    }
}
