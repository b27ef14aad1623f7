//! What crossing a group costs: requests through four processes and back, closed loop, with
//! the four processes in one group, in four groups on the runtime's shared workers, and in four
//! groups of one dedicated thread each (a group owning its threads, as every group did before
//! shared workers); beside four tokio tasks on unbounded channels. Same run, same machine,
//! interleaved rounds, medians.
//!
//! A request is a message that stage 1 sends to stage 2, 2 to 3, 3 to 4 and 4 back to 1 (four
//! hops). Stage 1 counts it done and sends the next: `--in-flight` requests circulate at once.
//! Every runtime has `--threads` threads (2 by default: the shared workers, or tokio's
//! workers); the dedicated variant has one thread per group (four).
//!
//! For each variant it prints requests per second and, from the process's CPU time
//! (`/proc/self/stat`) and context switches (`/proc/self/task/*/status`), CPU time and
//! switches per request; then the ratios the issue's goals are stated in: 4 groups on shared
//! workers against the same 4 processes in one group (throughput, CPU per request).
//!
//! ```text
//! cargo run --release -p bench --bin cross_group
//! cargo run --release -p bench --bin cross_group -- --in-flight 64 --seconds 2 --rounds 5
//! ```

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use whirl::prelude::*;
use whirl::SharedClient;

#[derive(clap::Parser, Debug, Clone)]
#[command(
    name = "cross_group",
    about = "Requests through four processes in one group, four shared groups, four dedicated groups, and four tokio tasks."
)]
struct Cli {
    /// Requests in flight (one run per value).
    #[arg(long, value_delimiter = ',', default_value = "1,64")]
    in_flight: Vec<u64>,
    /// Shared workers of each whirl runtime, worker threads of the tokio runtime.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Measured seconds per round (after a 200 ms warm-up).
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
    /// Rounds per variant, interleaved; the median is reported.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

/// Why the harness's counters may be shared with the processes measured.
const HARNESS: &str = "benchmark harness: a completion counter the bench thread reads";

#[derive(Message)]
struct Next(Addr<Stage>);

#[derive(Message)]
struct Start(u64);

#[derive(Message)]
struct Hop(u64);

#[process]
struct Stage {
    next: Option<Addr<Stage>>,
    /// Stage 1: counts requests back from stage 4 and sends the next.
    origin: bool,
    done: SharedClient<Arc<AtomicU64>>,
    stop: SharedClient<Arc<AtomicBool>>,
}

#[process]
impl Stage {
    #[handle]
    fn next(&mut self, Next(next): Next) {
        self.next = Some(next);
    }

    #[handle]
    fn start(&mut self, Start(n): Start) {
        for i in 0..n {
            self.forward(i);
        }
    }

    #[handle]
    fn hop(&mut self, Hop(i): Hop) {
        if self.origin {
            self.done.fetch_add(1, Ordering::Relaxed);
            if self.stop.load(Ordering::Relaxed) {
                return;
            }
        }
        self.forward(i);
    }
}

impl Stage {
    fn forward(&self, i: u64) {
        if let Some(next) = &self.next {
            if next.post(Hop(i)).is_err() {
                eprintln!("cross_group: a stage refused a request");
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    OneGroup,
    Shared,
    Dedicated,
    Tokio,
}

impl Variant {
    const ALL: [Variant; 4] = [
        Variant::OneGroup,
        Variant::Shared,
        Variant::Dedicated,
        Variant::Tokio,
    ];

    fn name(self) -> &'static str {
        match self {
            Variant::OneGroup => "4 processes, 1 group",
            Variant::Shared => "4 groups, shared workers",
            Variant::Dedicated => "4 groups, 1 own thread each",
            Variant::Tokio => "4 tokio tasks",
        }
    }
}

/// One round's figures.
#[derive(Clone, Copy, Debug, Default)]
struct Round {
    per_second: f64,
    cpu_micros_per_request: f64,
    switches_per_request: f64,
}

/// The process's CPU time (user + system) and context switches so far.
fn usage() -> (Duration, u64) {
    let cpu = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|stat| {
            // Fields after the command name (which is in parentheses and may hold spaces).
            let rest = &stat[stat.rfind(')')? + 2..];
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let utime: u64 = fields.get(11)?.parse().ok()?;
            let stime: u64 = fields.get(12)?.parse().ok()?;
            // Linux reports clock ticks of 1/100 s (USER_HZ) here.
            Some(Duration::from_millis((utime + stime) * 10))
        })
        .unwrap_or_default();
    let mut switches = 0;
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            let Ok(status) = std::fs::read_to_string(task.path().join("status")) else {
                continue;
            };
            for line in status.lines() {
                if let Some(n) = line
                    .strip_prefix("voluntary_ctxt_switches:")
                    .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
                {
                    switches += n.trim().parse::<u64>().unwrap_or(0);
                }
            }
        }
    }
    (cpu, switches)
}

/// Measures `done` growing for `seconds` after a warm-up.
fn measure(done: &AtomicU64, seconds: f64) -> Round {
    std::thread::sleep(Duration::from_millis(200));
    let (cpu0, sw0) = usage();
    let d0 = done.load(Ordering::Relaxed);
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    let d1 = done.load(Ordering::Relaxed);
    let elapsed = t0.elapsed();
    let (cpu1, sw1) = usage();
    let requests = (d1 - d0).max(1) as f64;
    Round {
        per_second: requests / elapsed.as_secs_f64(),
        cpu_micros_per_request: (cpu1 - cpu0).as_secs_f64() * 1e6 / requests,
        switches_per_request: sw1.saturating_sub(sw0) as f64 / requests,
    }
}

fn run_whirl(variant: Variant, cli: &Cli, in_flight: u64) -> Round {
    let rt = Runtime::builder()
        .threads(cli.threads)
        .build()
        .expect("the runtime starts");
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let groups: Vec<Option<Group>> = (0..4)
        .map(|i| {
            let builder = rt.group(format!("stage{}", i + 1));
            match variant {
                Variant::OneGroup => None,
                Variant::Shared => Some(builder.build().expect("group")),
                _ => Some(builder.threads(1).build().expect("group")),
            }
        })
        .collect();
    let stages: Vec<Addr<Stage>> = groups
        .iter()
        .enumerate()
        .map(|(i, group)| {
            let stage = Stage {
                next: None,
                origin: i == 0,
                done: SharedClient::new(Arc::clone(&done), HARNESS),
                stop: SharedClient::new(Arc::clone(&stop), HARNESS),
            };
            match group {
                Some(group) => rt.spawner().group(group).spawn(stage),
                None => rt.spawn(stage),
            }
        })
        .collect();
    for (i, stage) in stages.iter().enumerate() {
        let _ = stage.post(Next(stages[(i + 1) % 4].clone()));
    }
    rt.block_until_idle();
    let _ = stages[0].post(Start(in_flight));
    let round = measure(&done, cli.seconds);
    stop.store(true, Ordering::Relaxed);
    rt.block_until_idle();
    rt.shutdown_graceful();
    round
}

fn run_tokio(cli: &Cli, in_flight: u64) -> Round {
    use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cli.threads)
        .build()
        .expect("tokio starts");
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (senders, receivers): (Vec<UnboundedSender<u64>>, Vec<UnboundedReceiver<u64>>) =
        (0..4).map(|_| unbounded_channel()).unzip();
    let mut tasks = Vec::new();
    for (i, mut rx) in receivers.into_iter().enumerate() {
        let next = senders[(i + 1) % 4].clone();
        let (done, stop) = (Arc::clone(&done), Arc::clone(&stop));
        tasks.push(tokio.spawn(async move {
            while let Some(request) = rx.recv().await {
                if i == 0 {
                    done.fetch_add(1, Ordering::Relaxed);
                    if stop.load(Ordering::Relaxed) {
                        continue;
                    }
                }
                let _ = next.send(request);
            }
        }));
    }
    for request in 0..in_flight {
        let _ = senders[1].send(request);
    }
    let round = measure(&done, cli.seconds);
    stop.store(true, Ordering::Relaxed);
    drop(senders);
    tokio.shutdown_timeout(Duration::from_secs(1));
    round
}

fn median(rounds: &[Round], key: impl Fn(&Round) -> f64) -> f64 {
    let mut values: Vec<f64> = rounds.iter().map(key).collect();
    values.sort_by(|a, b| a.total_cmp(b));
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

fn main() {
    let cli = Cli::parse();
    println!(
        "cross_group: 4 hops per request, closed loop; {} threads per runtime; {} rounds of {} s, medians",
        cli.threads, cli.rounds, cli.seconds
    );
    for &in_flight in &cli.in_flight {
        let mut rounds: Vec<Vec<Round>> = vec![Vec::new(); Variant::ALL.len()];
        for _ in 0..cli.rounds {
            for (v, variant) in Variant::ALL.iter().enumerate() {
                let round = match variant {
                    Variant::Tokio => run_tokio(&cli, in_flight),
                    _ => run_whirl(*variant, &cli, in_flight),
                };
                rounds[v].push(round);
            }
        }
        println!("in flight {in_flight}:");
        let medians: Vec<(f64, f64)> = rounds
            .iter()
            .zip(Variant::ALL)
            .map(|(r, variant)| {
                let rate = median(r, |x| x.per_second);
                let cpu = median(r, |x| x.cpu_micros_per_request);
                let switches = median(r, |x| x.switches_per_request);
                println!(
                    "  {:<30} {:>12.0} requests/s  {:>8.3} us CPU/request  {:>7.3} switches/request",
                    variant.name(),
                    rate,
                    cpu,
                    switches
                );
                (rate, cpu)
            })
            .collect();
        let (one, shared, dedicated) = (medians[0], medians[1], medians[2]);
        println!(
            "  shared/one-group: throughput {:.2}x, CPU per request {:.2}x; dedicated/one-group: throughput {:.2}x, CPU per request {:.2}x; shared/tokio throughput {:.2}x",
            shared.0 / one.0,
            shared.1 / one.1,
            dedicated.0 / one.0,
            dedicated.1 / one.1,
            shared.0 / medians[3].0
        );
    }
}
