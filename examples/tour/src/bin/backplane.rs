//! AppBackplane scheduling: a CPU budget per group per integration period, and priority
//! inheritance through messages posted on behalf of principals.
//!
//! **1. CPU budget.** Two groups, `a` and `b`, each with one worker per core, each running
//! processes that burn 200 µs of CPU per message and always have more. The run is done three
//! times for `--seconds` each (default 2):
//!
//! * baseline: no budget; the two groups share the machine;
//! * `b` budgeted to 25 % of the cores (20 ms integration period): `b` waits once it has spent
//!   its share of each period, and `a` gets the rest;
//! * `a` idle, `b` budgeted again: virtual ticks re-arm `b`'s budget as soon as it is spent,
//!   since nobody else wants the CPU; with virtual ticks off, the budget is a hard cap.
//!
//! Each group's share is its handling time (messages × 200 µs) over the run's wall time ×
//! cores, computed from the run. The budget charges the wall-clock time of turns, so on a
//! machine busy with other programs (preemption inside a turn is charged too) the group's
//! measured share is below its budget; the `charged` figure is what the budget counted.
//!
//! **2. Priority inheritance.** One worker serves 200 low-priority processes (principal
//! priority 1) that pass 100 work tokens around a ring (100 µs each), so about 100 processes are always
//! queued at level 1. Every 2 ms, a high-priority principal (priority 7) posts a request *on
//! behalf of* itself to a random low process. With inheritance, that process moves up to level
//! 7 and runs next; without it (`PrincipalPriority::inheritance(false)`), the request waits
//! behind the ring's backlog. The figures are the requests' latencies from post to handling.
//!
//! ```text
//! cargo run --release -p tour --bin backplane [-- --seconds 2]
//! ```

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use whirl::prelude::*;
use whirl::scheduler::{CpuBudget, PrincipalPriority};
use whirl::SharedClient;

const BURN: Duration = Duration::from_micros(200);
const TOKEN_WORK: Duration = Duration::from_micros(100);
const RING: usize = 200;
const TOKENS: usize = 100;
const VIP_EVERY: Duration = Duration::from_millis(2);
const SHARED: &str = "example instrument: a stop flag and the latencies recorded, read by main";

fn burn(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

// ---- 1. CPU budget ------------------------------------------------------------------------

#[derive(Message)]
struct Burn;

#[process]
struct Burner {
    stop: SharedClient<Arc<AtomicBool>>,
}

#[process]
impl Burner {
    #[handle]
    fn burn(&mut self, _: Burn, ctx: &mut Ctx<Self>) {
        burn(BURN);
        if !self.stop.load(SeqCst) {
            let _ = ctx.myself().post(Burn);
        }
    }
}

struct Share {
    handled: u64,
    share: f64,
}

/// Runs burners in `a` (unless `a_idle`) and `b` for `run`; returns each group's figures and
/// `b`'s budget stats.
fn cpu_run(
    cores: usize,
    run: Duration,
    b_budget: Option<CpuBudget>,
    a_idle: bool,
) -> (Share, Share, Option<whirl::control::CpuBudgetStats>) {
    let rt = Runtime::new();
    let a = rt
        .group("a")
        .threads(cores)
        .budget(1)
        .build()
        .expect("group a");
    let mut b = rt.group("b").threads(cores).budget(1);
    if let Some(budget) = b_budget {
        b = b.cpu_budget(budget);
    }
    let b = b.build().expect("group b");
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    for group in [&a, &b] {
        if a_idle && group.name() == "a" {
            continue;
        }
        for _ in 0..cores {
            let p = group.spawn(Burner {
                stop: SharedClient::new(Arc::clone(&stop), SHARED),
            });
            p.post(Burn).expect("post");
        }
    }
    std::thread::sleep(run);
    let (ha, hb) = (a.counts().handled, b.counts().handled);
    let wall = start.elapsed();
    stop.store(true, SeqCst);
    let stats = b.stats().cpu_budget;
    rt.shutdown_timeout(Duration::from_secs(5));
    let share = |handled: u64| Share {
        handled,
        share: (BURN * handled as u32).as_secs_f64() / (wall.as_secs_f64() * cores as f64),
    };
    (share(ha), share(hb), stats)
}

fn cpu_budget_figures(run: Duration) {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let budget = CpuBudget::new(0.25, Duration::from_millis(20)).expect("budget");
    println!(
        "1. CPU budget: groups a and b, {cores} workers each, 200 µs per message, {run:?} per run"
    );
    println!(
        "   b's budget: 25% of {cores} cores per 20 ms period ({:?} of handling time)",
        budget.allowance()
    );
    let (a0, b0, _) = cpu_run(cores, run, None, false);
    let (a1, b1, s1) = cpu_run(cores, run, Some(budget), false);
    let (_, b2, s2) = cpu_run(cores, run, Some(budget), true);
    let (_, b3, s3) = cpu_run(cores, run, Some(budget.virtual_ticks(false)), true);
    println!(
        "   {:<34} {:>10} {:>8} {:>10} {:>8}",
        "run", "a handled", "a share", "b handled", "b share"
    );
    let row = |name: &str, a: Option<&Share>, b: &Share| {
        let (ah, ashare) = a.map_or(("-".into(), "-".into()), |a| {
            (a.handled.to_string(), format!("{:.1}%", a.share * 100.0))
        });
        println!(
            "   {name:<34} {ah:>10} {ashare:>8} {:>10} {:>7.1}%",
            b.handled,
            b.share * 100.0
        );
    };
    row("baseline (no budget)", Some(&a0), &b0);
    row("b budgeted 25%", Some(&a1), &b1);
    row("a idle, b budgeted (virtual ticks)", None, &b2);
    row("a idle, b budgeted (hard cap)", None, &b3);
    let ratio = |x: u64, y: u64| x as f64 / y.max(1) as f64;
    println!(
        "   b handled {:.2}x its baseline under the budget; a handled {:.2}x its baseline",
        ratio(b1.handled, b0.handled),
        ratio(a1.handled, a0.handled)
    );
    for (name, s) in [("b budgeted", s1), ("virtual ticks", s2), ("hard cap", s3)] {
        if let Some(s) = s {
            // What the budget charged (turns' wall-clock time, preemption included) over the
            // run's core time: 25% when the cap holds.
            let charged = s.spent.as_secs_f64() / (run.as_secs_f64() * cores as f64);
            println!(
                "   {name:<14} charged {:>8.1?} ({:>5.1}% of the cores), waited {:>4} times ({:>8.1?}), {:>3} periods, {:>4} virtual ticks",
                s.spent,
                charged * 100.0,
                s.throttled,
                s.throttled_time,
                s.periods,
                s.virtual_ticks
            );
        }
    }
}

// ---- 2. Priority inheritance --------------------------------------------------------------

#[derive(Message)]
enum Work {
    Token,
    Vip { sent: Instant },
}

#[derive(Message)]
struct Next(Addr<Low>);

#[process]
struct Low {
    next: Option<Addr<Low>>,
    stop: SharedClient<Arc<AtomicBool>>,
    latencies: SharedClient<Arc<Mutex<Vec<u64>>>>,
}

#[process]
impl Low {
    #[handle]
    fn next(&mut self, Next(next): Next) {
        self.next = Some(next);
    }

    #[handle]
    fn work(&mut self, work: Work) {
        burn(TOKEN_WORK);
        match work {
            Work::Token => {
                if let Some(next) = self.next.as_ref().filter(|_| !self.stop.load(SeqCst)) {
                    let _ = next.post(Work::Token);
                }
            }
            Work::Vip { sent } => {
                let micros = sent.elapsed().as_micros() as u64;
                self.latencies.lock().expect("latencies").push(micros);
            }
        }
    }
}

fn inheritance_run(inheritance: bool, run: Duration) -> Histogram<u64> {
    let rt = Runtime::new();
    let group = rt
        .group("svc")
        .threads(1)
        .scheduler(PrincipalPriority::new().inheritance(inheritance))
        .build()
        .expect("group");
    let stop = Arc::new(AtomicBool::new(false));
    let latencies = Arc::new(Mutex::new(Vec::new()));
    let ring: Vec<Addr<Low>> = (0..RING)
        .map(|i| {
            group
                .spawner()
                .principal(
                    Principal::builder(i as u64)
                        .priority(1)
                        .build()
                        .expect("a valid principal"),
                )
                .spawn(Low {
                    next: None,
                    stop: SharedClient::new(Arc::clone(&stop), SHARED),
                    latencies: SharedClient::new(Arc::clone(&latencies), SHARED),
                })
        })
        .collect();
    for (i, p) in ring.iter().enumerate() {
        p.post(Next(ring[(i + 1) % RING].clone())).expect("post");
    }
    for i in 0..TOKENS {
        ring[i * RING / TOKENS].post(Work::Token).expect("post");
    }
    let vip = Principal::builder(1_000)
        .priority(7)
        .build()
        .expect("a valid principal");
    let start = Instant::now();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    while start.elapsed() < run {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let to = &ring[(x % RING as u64) as usize];
        let _ = to
            .request(Work::Vip {
                sent: Instant::now(),
            })
            .on_behalf(&vip)
            .post();
        std::thread::sleep(VIP_EVERY);
    }
    stop.store(true, SeqCst);
    rt.block_until_idle();
    rt.shutdown_graceful();
    let mut h = Histogram::<u64>::new(3).expect("histogram");
    for &v in latencies.lock().expect("latencies").iter() {
        let _ = h.record(v.max(1));
    }
    h
}

fn inheritance_figures(run: Duration) {
    println!();
    println!(
        "2. Priority inheritance: 1 worker, {RING} low processes passing {TOKENS} tokens (100 µs each), \
         a priority-7 request to a random one every {VIP_EVERY:?}, {run:?} per run"
    );
    let with = inheritance_run(true, run);
    let without = inheritance_run(false, run);
    let ms = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    println!(
        "   {:<22} {:>8} {:>10} {:>10}",
        "high-priority requests", "count", "p50 ms", "p99 ms"
    );
    for (name, h) in [
        ("with inheritance", &with),
        ("without inheritance", &without),
    ] {
        println!(
            "   {name:<22} {:>8} {:>10.2} {:>10.2}",
            h.len(),
            ms(h, 0.5),
            ms(h, 0.99)
        );
    }
    println!(
        "   inheritance cuts p50 {:.1}x and p99 {:.1}x",
        ms(&without, 0.5) / ms(&with, 0.5).max(0.001),
        ms(&without, 0.99) / ms(&with, 0.99).max(0.001)
    );
}

fn main() {
    let mut seconds = 2.0;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (
            arg.as_str(),
            args.next().and_then(|v| v.parse::<f64>().ok()),
        ) {
            ("--seconds", Some(s)) if s > 0.0 => seconds = s,
            _ => {
                eprintln!("usage: backplane [--seconds N]");
                std::process::exit(2);
            }
        }
    }
    let run = Duration::from_secs_f64(seconds);
    cpu_budget_figures(run);
    inheritance_figures(run);
}
