//! Chaos: the runtime's promises under the conditions that break runtimes.
//!
//! Three scenarios, each checked, each printing what it measured:
//!
//! * **panic storm**: every message makes its process panic; every panic is contained, every
//!   process terminates once, nothing stays alive, the accounting identity holds;
//! * **shutdown under load with stuck workers**: both workers blocked in handlers, a backlog
//!   queued for a hundred processes; `shutdown_timeout` returns within its documented bound,
//!   reports the two stuck processes, runs every other `terminated` hook and dead-letters
//!   every queued message; when the stuck handlers return, their processes terminate too and
//!   nothing is lost;
//! * **overload memory**: a one-worker group offered ten times its capacity behind a
//!   `QueueLength` predicate; resident memory stays flat.
//!
//! ```text
//! cargo run --release -p bench --bin chaos -- --short   # what CI runs (seconds)
//! cargo run --release -p bench --bin chaos              # the soak sizes (a minute or two)
//! ```
//!
//! Exits non-zero, saying what broke, if any check fails.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use whirl::admission::QueueLength;
use whirl::prelude::*;
use whirl::SharedClient;

struct Sizes {
    panics: u64,
    stuck_processes: u64,
    stuck_backlog_per_process: u64,
    overload_for: Duration,
}

const SHORT: Sizes = Sizes {
    panics: 20_000,
    stuck_processes: 100,
    stuck_backlog_per_process: 1_000,
    overload_for: Duration::from_secs(2),
};

const LONG: Sizes = Sizes {
    panics: 10_000_000,
    stuck_processes: 100,
    stuck_backlog_per_process: 10_000,
    overload_for: Duration::from_secs(30),
};

/// A failed check: what was expected and what happened.
struct Broken(String);

/// A scenario: its name and how to run it.
type Scenario<'a> = (&'static str, &'a dyn Fn() -> Result<(), Broken>);

fn check(ok: bool, what: impl FnOnce() -> String) -> Result<(), Broken> {
    if ok {
        Ok(())
    } else {
        Err(Broken(what()))
    }
}

// ---- panic storm ----------------------------------------------------------------------------

#[derive(Message)]
struct Explode;

/// Panics on its one message.
#[process]
struct Bomb {
    hooks: SharedClient<Arc<AtomicU64>>,
}

#[process]
impl Bomb {
    #[handle]
    fn explode(&mut self, _: Explode) {
        panic!("chaos: expected panic");
    }

    #[terminated]
    fn terminated(&mut self) {
        self.hooks.fetch_add(1, SeqCst);
    }
}

fn panic_storm(n: u64) -> Result<(), Broken> {
    let hooks = Arc::new(AtomicU64::new(0));
    let rt = Runtime::builder()
        .threads(2)
        .build()
        .expect("the runtime starts");
    let started = Instant::now();
    for _ in 0..n {
        let bomb = rt.spawn(Bomb {
            hooks: SharedClient::new(Arc::clone(&hooks), "chaos harness: counts hooks"),
        });
        let _ = bomb.post(Explode);
    }
    rt.block_until_idle();
    let elapsed = started.elapsed();
    let counts = rt.counts();
    let live = rt.live_processes();
    rt.shutdown_graceful();
    println!(
        "panic storm: {n} panics in {elapsed:.2?} ({:.0}/s); live after: {live}; hooks: {}",
        n as f64 / elapsed.as_secs_f64(),
        hooks.load(SeqCst)
    );
    check(hooks.load(SeqCst) == n, || {
        format!("{} terminated hooks for {n} panics", hooks.load(SeqCst))
    })?;
    check(live == 0, || format!("{live} processes still alive"))?;
    check(
        counts.posted == counts.handled + counts.rejected + counts.dead_lettered,
        || format!("accounting does not balance: {counts:?}"),
    )
}

// ---- shutdown with stuck workers ------------------------------------------------------------

/// A latch the harness opens: holds a worker until then.
#[derive(Default)]
struct Latch {
    open: Mutex<bool>,
    opened: Condvar,
}

impl Latch {
    fn wait(&self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        while !*open {
            open = self.opened.wait(open).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn open(&self) {
        *self.open.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.opened.notify_all();
    }
}

#[derive(Message)]
struct Hold(SharedClient<Arc<Latch>>);

#[derive(Message)]
struct Work;

/// Counts its messages and hooks.
#[process]
struct Worker {
    handled: SharedClient<Arc<AtomicU64>>,
    hooks: SharedClient<Arc<AtomicU64>>,
}

#[process]
impl Worker {
    #[handle]
    fn hold(&mut self, Hold(latch): Hold) {
        self.handled.fetch_add(1, SeqCst);
        latch.wait();
    }

    #[handle]
    fn work(&mut self, _: Work) {
        self.handled.fetch_add(1, SeqCst);
    }

    #[terminated]
    fn terminated(&mut self) {
        self.hooks.fetch_add(1, SeqCst);
    }
}

fn stuck_shutdown(processes: u64, backlog: u64) -> Result<(), Broken> {
    const TIMEOUT: Duration = Duration::from_secs(1);
    let dead = Arc::new(AtomicU64::new(0));
    let dead_sink = Arc::clone(&dead);
    let rt = Runtime::builder()
        .threads(2)
        .dead_letters(move |_| {
            dead_sink.fetch_add(1, SeqCst);
        })
        .build()
        .expect("the runtime starts");
    let handled = Arc::new(AtomicU64::new(0));
    let hooks = Arc::new(AtomicU64::new(0));
    let spawn = || {
        rt.spawn(Worker {
            handled: SharedClient::new(Arc::clone(&handled), "chaos harness: counts messages"),
            hooks: SharedClient::new(Arc::clone(&hooks), "chaos harness: counts hooks"),
        })
    };
    let latch = Arc::new(Latch::default());
    let holders = [spawn(), spawn()];
    for holder in &holders {
        let _ = holder.post(Hold(SharedClient::new(
            Arc::clone(&latch),
            "chaos harness: holds a worker until opened",
        )));
    }
    while handled.load(SeqCst) < 2 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let workers: Vec<_> = (0..processes).map(|_| spawn()).collect();
    for worker in &workers {
        for _ in 0..backlog {
            let _ = worker.post(Work);
        }
    }
    let queued = processes * backlog;
    let report = rt.shutdown_timeout(TIMEOUT);
    println!("stuck shutdown: {report}");
    let bound = TIMEOUT + Duration::from_millis(100);
    println!(
        "  returned after {:.2?} (timeout {TIMEOUT:?}; documented bound {bound:?} plus hooks and \
         dead-letter sink); {} hooks, {} dead letters",
        report.elapsed,
        hooks.load(SeqCst),
        dead.load(SeqCst)
    );
    check(report.abandoned.len() == 2, || {
        format!(
            "{} processes abandoned, expected the 2 holders",
            report.abandoned.len()
        )
    })?;
    check(hooks.load(SeqCst) == processes, || {
        format!(
            "{} hooks ran before return, expected {processes}",
            hooks.load(SeqCst)
        )
    })?;
    check(dead.load(SeqCst) == queued, || {
        format!("{} dead letters, expected {queued}", dead.load(SeqCst))
    })?;
    // The stuck handlers return: their processes terminate at once.
    latch.open();
    let deadline = Instant::now() + Duration::from_secs(10);
    while hooks.load(SeqCst) < processes + 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    check(hooks.load(SeqCst) == processes + 2, || {
        "the stuck processes did not terminate when their handlers returned".to_owned()
    })?;
    let lost = 2 + queued - handled.load(SeqCst) - dead.load(SeqCst);
    println!(
        "  after the stuck handlers returned: handled {}, dead-lettered {}, lost {lost}",
        handled.load(SeqCst),
        dead.load(SeqCst)
    );
    check(lost == 0, || format!("{lost} messages lost"))
}

// ---- overload memory ------------------------------------------------------------------------

#[derive(Message)]
struct Request;

/// 100 µs of work per request.
#[process]
struct Service;

#[process]
impl Service {
    #[handle]
    fn request(&mut self, _: Request) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_micros(100) {
            std::hint::spin_loop();
        }
    }
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .unwrap_or(0)
}

fn overload_memory(run: Duration) -> Result<(), Broken> {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let group = rt
        .group("service")
        .threads(1)
        .predicate(QueueLength::max(1_000))
        .build()
        .expect("build group");
    let service = rt.spawner().group(&group).spawn(Service);
    let stop = Arc::new(AtomicBool::new(false));
    let offered = Arc::new(AtomicU64::new(0));
    let rejected = Arc::new(AtomicU64::new(0));
    let pacer = {
        let (service, stop) = (service.clone(), Arc::clone(&stop));
        let (offered, rejected) = (Arc::clone(&offered), Arc::clone(&rejected));
        std::thread::spawn(move || {
            // About 100,000 requests per second, ten times the service's capacity.
            let start = Instant::now();
            while !stop.load(SeqCst) {
                let due = start.elapsed().as_micros() as u64 / 10;
                while offered.load(SeqCst) < due {
                    offered.fetch_add(1, SeqCst);
                    if service.post(Request).is_err() {
                        rejected.fetch_add(1, SeqCst);
                    }
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        })
    };
    let warm_up = run / 4;
    std::thread::sleep(warm_up);
    let after_warm_up = rss_kib();
    let mut peak = after_warm_up;
    let end = Instant::now() + run - warm_up;
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(100));
        peak = peak.max(rss_kib());
    }
    stop.store(true, SeqCst);
    let _ = pacer.join();
    let counts = group.counts();
    rt.shutdown_timeout(Duration::ZERO);
    println!(
        "overload memory: offered {}, rejected {}, handled {}; VmRSS after warm-up {} KiB, \
         peak {} KiB",
        offered.load(SeqCst),
        rejected.load(SeqCst),
        counts.handled,
        after_warm_up,
        peak
    );
    // Flat: the queue is bounded at 1,000 requests; allow 16 MiB for allocator noise.
    check(peak <= after_warm_up + 16 * 1024, || {
        format!("resident memory grew from {after_warm_up} KiB to {peak} KiB under overload")
    })?;
    check(rejected.load(SeqCst) > 0, || "nothing was shed".to_owned())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sizes = match args.as_slice() {
        [] => &LONG,
        [flag] if flag == "--short" => &SHORT,
        _ => {
            eprintln!("usage: chaos [--short]");
            return ExitCode::from(2);
        }
    };
    // Panics are the point of the first scenario: keep their messages off the terminal.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let expected = info
            .payload()
            .downcast_ref::<&str>()
            .is_some_and(|s| s.starts_with("chaos: expected"));
        if !expected {
            default_hook(info);
        }
    }));
    let scenarios: [Scenario<'_>; 3] = [
        ("panic storm", &|| panic_storm(sizes.panics)),
        ("stuck shutdown", &|| {
            stuck_shutdown(sizes.stuck_processes, sizes.stuck_backlog_per_process)
        }),
        ("overload memory", &|| overload_memory(sizes.overload_for)),
    ];
    let mut failed = 0;
    for (name, scenario) in scenarios {
        if let Err(Broken(what)) = scenario() {
            eprintln!("chaos: {name}: FAILED: {what}");
            failed += 1;
        }
    }
    println!(
        "chaos: {} passed, {failed} failed",
        scenarios.len() - failed
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
