//! Groups as scheduling domains on the runtime's shared workers: where turns run, a request
//! crossing groups on one thread, groups' shares of the workers, a concurrency limit, and
//! groups that still own threads beside them.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use whirl::prelude::*;
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

const HARNESS: &str = "test harness: what the test thread reads back";

fn shared<T: Send + Sync + 'static>(value: T) -> SharedClient<T> {
    SharedClient::new(value, HARNESS)
}

#[derive(Message)]
struct Next(Addr<Stage>);

#[derive(Message)]
struct Hop(u64);

/// A stage of a four-group pipeline: notes the thread each hop ran on, then passes it on.
#[process]
struct Stage {
    next: Option<Addr<Stage>>,
    threads: SharedClient<Arc<Mutex<Vec<String>>>>,
}

#[process]
impl Stage {
    #[handle]
    fn next(&mut self, Next(next): Next) {
        self.next = Some(next);
    }

    #[handle]
    fn hop(&mut self, Hop(left): Hop) {
        let name = std::thread::current().name().unwrap_or("").to_owned();
        if let Ok(mut threads) = self.threads.lock() {
            threads.push(name);
        }
        if left > 0 {
            if let Some(next) = &self.next {
                let _ = next.post(Hop(left - 1));
            }
        }
    }
}

/// Sends one request around four stages in four groups `hops` times, one hop at a time;
/// returns the thread each hop ran on.
fn around_four_groups(rt: &Runtime, groups: &[Group], hops: u64) -> Vec<String> {
    let threads = Arc::new(Mutex::new(Vec::new()));
    let stages: Vec<Addr<Stage>> = groups
        .iter()
        .map(|group| {
            group.spawn(Stage {
                next: None,
                threads: shared(Arc::clone(&threads)),
            })
        })
        .collect();
    for (i, stage) in stages.iter().enumerate() {
        stage.post(Next(stages[(i + 1) % 4].clone())).unwrap();
    }
    rt.block_until_idle();
    stages[0].post(Hop(hops - 1)).unwrap();
    assert!(eventually(|| threads.lock().unwrap().len() as u64 == hops));
    rt.block_until_idle();
    let seen = threads.lock().unwrap().clone();
    seen
}

/// The share of hops that ran on the thread of the hop before.
fn stayed(threads: &[String]) -> f64 {
    let same = threads.windows(2).filter(|w| w[0] == w[1]).count();
    same as f64 / (threads.len() - 1) as f64
}

#[test]
fn groups_without_threads_of_their_own_run_on_the_shared_workers() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let web = rt.group("web").build().unwrap();
    let blocking = rt.group("blocking").threads(1).build().unwrap();
    assert!(!web.is_dedicated() && !rt.default_group().is_dedicated());
    assert!(blocking.is_dedicated());
    // On shared workers, "threads" is how many may run the group at once: all of them.
    assert_eq!((web.threads(), blocking.threads()), (2, 1));
    let on_web = around_four_groups(&rt, &[web.clone(), web.clone(), web.clone(), web], 8);
    assert!(
        on_web.iter().all(|t| t.starts_with("whirl-worker-")),
        "{on_web:?}"
    );
    let on_blocking = around_four_groups(
        &rt,
        &[
            blocking.clone(),
            blocking.clone(),
            blocking.clone(),
            blocking,
        ],
        8,
    );
    assert!(
        on_blocking.iter().all(|t| t.starts_with("whirl-blocking-")),
        "{on_blocking:?}"
    );
    rt.shutdown_graceful();
}

#[test]
fn a_request_crosses_four_groups_without_changing_threads() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let groups: Vec<Group> = (0..4)
        .map(|i| rt.group(format!("stage{i}")).build().unwrap())
        .collect();
    let hops = 4_000;
    let threads = around_four_groups(&rt, &groups, hops);
    // Each hop makes the next group's process ready on this worker, which runs it next (the
    // LIFO slot); only every 17th goes through its group's queue, where the other worker may
    // take it.
    let stayed_shared = stayed(&threads);
    assert!(
        stayed_shared > 0.8,
        "only {:.0}% of hops stayed on their thread",
        stayed_shared * 100.0
    );
    // The same pipeline across groups that own their threads changes thread at every hop.
    let dedicated: Vec<Group> = (0..4)
        .map(|i| rt.group(format!("own{i}")).threads(1).build().unwrap())
        .collect();
    let threads = around_four_groups(&rt, &dedicated, 400);
    assert_eq!(stayed(&threads), 0.0);
    rt.shutdown_graceful();
}

#[derive(Message)]
struct Spin;

/// Always busy: each message spins `micros` and posts the next; counts what it handled.
#[process]
struct Spinner {
    micros: u64,
    handled: SharedClient<Arc<AtomicU64>>,
    running: SharedClient<Arc<AtomicUsize>>,
    most: SharedClient<Arc<AtomicUsize>>,
}

#[process]
impl Spinner {
    #[handle]
    fn spin(&mut self, _: Spin, ctx: &mut Ctx<Self>) {
        let now = self.running.fetch_add(1, SeqCst) + 1;
        self.most.fetch_max(now, SeqCst);
        let start = Instant::now();
        while start.elapsed() < Duration::from_micros(self.micros) {
            std::hint::spin_loop();
        }
        self.running.fetch_sub(1, SeqCst);
        self.handled.fetch_add(1, SeqCst);
        let _ = ctx.myself().post(Spin);
    }
}

struct Spinners {
    handled: Arc<AtomicU64>,
    most: Arc<AtomicUsize>,
    addrs: Vec<Addr<Spinner>>,
}

fn spinners(group: &Group, n: usize, micros: u64) -> Spinners {
    let handled = Arc::new(AtomicU64::new(0));
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let addrs = (0..n)
        .map(|_| {
            group.spawn(Spinner {
                micros,
                handled: shared(Arc::clone(&handled)),
                running: shared(Arc::clone(&running)),
                most: shared(Arc::clone(&most)),
            })
        })
        .collect();
    Spinners {
        handled,
        most,
        addrs,
    }
}

impl Spinners {
    fn start(&self) {
        for addr in &self.addrs {
            addr.post(Spin).unwrap();
        }
    }

    fn stop(&self) {
        for addr in &self.addrs {
            addr.exit(ExitReason::Shutdown);
        }
    }
}

#[test]
fn busy_groups_divide_the_workers_by_their_shares() {
    // One worker, two groups that always have work: three to one.
    let rt = Runtime::builder().threads(1).build().unwrap();
    let big = rt.group("big").share(300).budget(1).build().unwrap();
    let small = rt.group("small").share(100).budget(1).build().unwrap();
    let b = spinners(&big, 2, 200);
    let s = spinners(&small, 2, 200);
    b.start();
    s.start();
    // Until each has had a few hundred turns.
    assert!(eventually(|| s.handled.load(SeqCst) >= 300));
    b.stop();
    s.stop();
    let (big_n, small_n) = (b.handled.load(SeqCst), s.handled.load(SeqCst));
    let ratio = big_n as f64 / small_n as f64;
    assert!(
        (2.0..4.5).contains(&ratio),
        "shares 300 and 100 got {big_n} and {small_n} turns ({ratio:.2})"
    );
    rt.shutdown_graceful();
}

#[test]
fn a_concurrency_limit_bounds_the_workers_running_a_group() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let limited = rt
        .group("limited")
        .concurrency(1)
        .budget(1)
        .build()
        .unwrap();
    assert_eq!(limited.threads(), 1);
    let l = spinners(&limited, 4, 300);
    l.start();
    assert!(eventually(|| l.handled.load(SeqCst) >= 400));
    l.stop();
    assert_eq!(
        l.most.load(SeqCst),
        1,
        "two turns of a limited group ran at once"
    );
    rt.shutdown_graceful();
}

#[derive(Message)]
struct Kick;

/// Starts two spinners from a handler, so that both are queued on the worker running it.
#[process]
struct Kicker {
    first: Addr<Spinner>,
    second: Addr<Spinner>,
}

#[process]
impl Kicker {
    #[handle]
    fn kick(&mut self, _: Kick) {
        let _ = self.first.post(Spin);
        let _ = self.second.post(Spin);
    }
}

#[test]
fn work_queued_on_one_worker_in_two_groups_wakes_another() {
    // Two always-busy processes made ready by one handler: one refused the LIFO slot (its
    // group has none) waits in the worker's queue of its group, the other yields into the
    // worker's queue of its own. The other worker, asleep, is woken to take one of them.
    let rt = Runtime::builder().threads(2).build().unwrap();
    let a = rt.group("a").budget(1).build().unwrap();
    let b = rt.group("b").budget(1).lifo_slot(false).build().unwrap();
    let handled = Arc::new(AtomicU64::new(0));
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let spinner = |group: &Group| {
        group.spawn(Spinner {
            micros: 200,
            handled: shared(Arc::clone(&handled)),
            running: shared(Arc::clone(&running)),
            most: shared(Arc::clone(&most)),
        })
    };
    let (in_b, in_a) = (spinner(&b), spinner(&a));
    // Both workers asleep before the kick.
    std::thread::sleep(Duration::from_millis(50));
    let kicker = a.spawn(Kicker {
        first: in_b.clone(),
        second: in_a.clone(),
    });
    kicker.post(Kick).unwrap();
    assert!(
        eventually(|| most.load(SeqCst) >= 2),
        "the two spinners never ran at once ({} turns)",
        handled.load(SeqCst)
    );
    for addr in [in_a, in_b] {
        addr.exit(ExitReason::Shutdown);
    }
    rt.shutdown_graceful();
}
