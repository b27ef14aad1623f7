//! A workload that moves, watched in the live web console (feature `console`).
//!
//! ```text
//! cargo run --release -p console --bin console_demo -- --port 9090
//! ```
//!
//! then open <http://127.0.0.1:9090/> (Prometheus text at `/metrics`). The load runs in a
//! 20-second cycle: calm, a burst ten times the frontend's capacity (its controller grows the
//! pool, then its predicate sheds the lower priorities), a pause, a medium load. Along the way
//! a supervised worker crashes and is restarted every few seconds, a batch process is killed
//! with work queued (dead letters), and now and then a request holds its worker for 80 ms (a
//! slow turn). A ledger process (registered as `ledger`) is sent 1,000 entries a second for
//! 100 seconds and handles about 450: its queue grows to the top of the console's process
//! table (the frontend's bursts may pass it for a moment early on), then drains during the
//! next 100 seconds, when nothing is sent.
//!
//! Options: `--port N` (default 9090), `--bind ADDR` (default 127.0.0.1; any other address
//! needs `--token T`), `--seconds N` (stop after N seconds and print the accounting; default:
//! run until killed), `--bench-db PATH` (show the benchmark history recorded by
//! `cargo run --release -p whirl-bench -- record`).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use whirl::admission::PriorityThresholds;
use whirl::console::{Console, Panel};
use whirl::control::AdaptiveConcurrency;
use whirl::prelude::*;
use whirl::supervision::ChildSpec;

/// The command line.
#[derive(Parser, Debug)]
#[command(
    name = "console_demo",
    about = "A moving workload, in whirl's web console."
)]
struct Cli {
    /// TCP port of the console.
    #[arg(long, default_value_t = 9090)]
    port: u16,
    /// Address of the console.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Token required on every request (needed for any address but loopback).
    #[arg(long)]
    token: Option<String>,
    /// Stop after this many seconds (default: run until killed).
    #[arg(long)]
    seconds: Option<u64>,
    /// A benchmark history database (whirl-bench) to show.
    #[arg(long)]
    bench_db: Option<PathBuf>,
}

/// CPU work per frontend request.
const FRONTEND_WORK: Duration = Duration::from_micros(40);
/// CPU work per backend query.
const BACKEND_WORK: Duration = Duration::from_micros(20);
/// One request in this many holds its worker for `SLOW`.
const SLOW_EVERY: u64 = 40_000;
const SLOW: Duration = Duration::from_millis(80);

fn spin(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

#[derive(Message)]
struct Request(u64);

#[derive(Message)]
struct Query;

#[derive(Message)]
struct Crash;

#[derive(Message)]
struct Job;

#[derive(Message)]
struct Entry;

/// A frontend process, one per principal: does some work, asks the backend.
#[process]
struct Api {
    store: Addr<Store>,
}

#[process]
impl Api {
    #[handle]
    fn request(&mut self, Request(n): Request) {
        if n % SLOW_EVERY == SLOW_EVERY - 1 {
            std::thread::sleep(SLOW);
        }
        spin(FRONTEND_WORK);
        // The backend may shed it under overload; the frontend's answer does not need it.
        let _ = self.store.post(Query);
    }
}

/// The backend.
#[process]
#[derive(Clone)]
struct Store;

#[process]
impl Store {
    #[handle]
    fn query(&mut self, _: Query) {
        spin(BACKEND_WORK);
    }
}

/// A supervised worker that fails when told to.
#[process]
#[derive(Clone)]
struct Flaky;

#[process]
impl Flaky {
    #[handle]
    fn crash(&mut self, _: Crash) -> Result<(), Failure> {
        Err(Failure::new("told to crash (console_demo)"))
    }
}

/// A batch process killed with work queued: its jobs become dead letters.
#[process]
struct Batch;

#[process]
impl Batch {
    #[handle]
    fn job(&mut self, _: Job) {
        spin(Duration::from_millis(1));
    }
}

/// A process slower than what it is sent (each entry waits on "the disk" for 2 ms): its queue
/// grows while entries come at 1,000 a second.
#[process]
struct Ledger {
    entries: u64,
}

#[process]
impl Ledger {
    #[handle]
    fn entry(&mut self, _: Entry) {
        std::thread::sleep(LEDGER_WRITE);
        self.entries += 1;
    }
}

/// The time the ledger takes per entry.
const LEDGER_WRITE: Duration = Duration::from_millis(2);

/// Entries per 10 ms tick sent to the ledger at `t` seconds into its 200-second cycle: 1,000
/// a second for the first 100 seconds, none in the next 100 (its queue drains).
fn ledger_rate(t: Duration) -> u64 {
    if t.as_secs() % 200 < 100 {
        10
    } else {
        0
    }
}

/// The benchmark history, served by whirl-bench from its SQLite file.
#[derive(Isolated)]
struct BenchPanel {
    db: PathBuf,
}

impl Panel for BenchPanel {
    fn name(&self) -> &str {
        "bench"
    }

    fn get(&self, rest: &str, query: &str) -> Option<(u16, String)> {
        whirl_bench::Api::new(&self.db).handle(&format!("/api/bench/{rest}"), query)
    }
}

/// Requests per second offered at `t` seconds into the 20-second cycle.
fn offered_rate(t: Duration) -> u64 {
    match t.as_secs() % 20 {
        0..=7 => 2_000,
        8..=11 => 60_000,
        12..=13 => 0,
        _ => 8_000,
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("console_demo: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli) -> Result<(), Box<dyn std::error::Error>> {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let frontend = rt
        .group("frontend")
        .threads(1..=2)
        .controller(AdaptiveConcurrency::new())
        .predicate(
            PriorityThresholds::new(100)
                .at_least(1, 400)
                .at_least(2, 2_000),
        )
        .slow_turn_threshold(Some(Duration::from_millis(50)))
        .build()?;
    let backend = rt
        .group("backend")
        .threads(1)
        .predicate(PriorityThresholds::new(5_000))
        .build()?;
    let store = rt.spawner().group(&backend).spawn(Store);
    // The ledger has a group of its own, so its sleeping worker holds up nobody else; short
    // turns (8 entries, 16 ms) keep them under the slow-turn threshold.
    let books = rt.group("books").threads(1).budget(8).build()?;
    let ledger = rt.spawner().group(&books).spawn(Ledger { entries: 0 });
    rt.register("ledger", &ledger)?;
    let principals = [("gold", 2u8), ("silver", 1), ("bronze", 0)];
    let apis: Vec<Addr<Api>> = principals
        .iter()
        .enumerate()
        .map(|(i, &(_, priority))| {
            let principal = Principal::builder(i as u64 + 1)
                .priority(priority)
                .class(u16::from(priority))
                .build()
                .expect("a valid principal");
            rt.spawner()
                .group(&frontend)
                .principal(principal)
                .spawn(Api {
                    store: store.clone(),
                })
        })
        .collect();

    let tree = SupervisorSpec::new("app")
        .intensity(100, Duration::from_secs(10))
        .child(ChildSpec::worker("flaky", Flaky).named("flaky"))
        .child(ChildSpec::supervisor(
            "storage",
            SupervisorSpec::new("storage")
                .child(ChildSpec::worker("replica-a", Store))
                .child(ChildSpec::worker("replica-b", Store)),
        ));
    let app = rt.spawn(Supervisor::new(tree));

    let mut console = Console::builder(&rt)
        .bind(SocketAddr::new(cli.bind, cli.port))
        .supervisor("app", &app);
    if let Some(token) = &cli.token {
        console = console.token(token.clone());
    }
    if let Some(db) = &cli.bench_db {
        console = console.panel(BenchPanel { db: db.clone() });
    }
    let console = console.start()?;
    println!("console: http://{}/", console.local_addr());
    println!("metrics: http://{}/metrics", console.local_addr());

    let start = Instant::now();
    let deadline = cli.seconds.map(|s| start + Duration::from_secs(s));
    let (mut offered, mut refused) = (0u64, 0u64);
    let mut n = 0u64;
    let mut last_crash = start;
    let mut last_batch = start;
    let tick = Duration::from_millis(10);
    let mut next = start;
    while deadline.is_none_or(|d| Instant::now() < d) {
        let per_tick = offered_rate(start.elapsed()) / 100;
        for _ in 0..per_tick {
            n += 1;
            // Bronze sends most of the traffic, gold the least.
            let api = match n % 10 {
                0 => &apis[0],
                1..=3 => &apis[1],
                _ => &apis[2],
            };
            offered += 1;
            if api.post(Request(n)).is_err() {
                refused += 1;
            }
        }
        for _ in 0..ledger_rate(start.elapsed()) {
            let _ = ledger.post(Entry);
        }
        if last_crash.elapsed() >= Duration::from_secs(4) {
            last_crash = Instant::now();
            if let Some(flaky) = rt.whereis::<Flaky>("flaky") {
                let _ = flaky.post(Crash);
            }
        }
        if last_batch.elapsed() >= Duration::from_secs(7) {
            last_batch = Instant::now();
            let batch = rt.spawner().group(&backend).spawn(Batch);
            for _ in 0..200 {
                let _ = batch.post(Job);
            }
            batch.exit(ExitReason::Shutdown);
        }
        next += tick;
        match next.checked_duration_since(Instant::now()) {
            Some(wait) => std::thread::sleep(wait),
            None => next = Instant::now(),
        }
    }
    drop(console);
    let report = rt.shutdown_timeout(Duration::from_secs(5));
    println!("offered {offered} requests, {refused} refused at the frontend");
    println!("{report}");
    Ok(())
}
