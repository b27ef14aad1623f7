//! Cohort scheduling against FIFO on a four-stage request pipeline, in the same run.
//!
//! Four process types, many processes of each (`parse → route → render → log → parse ...`),
//! all in one group. Each stage has its own code (a different unrolled hot loop, its own
//! constants) and its own data: a read-only table per stage, read at pseudo-random places in a
//! chain of dependent loads, so a stage's speed depends on its table being in the core's
//! caches. A fixed population of requests circulates through the stages for a fixed number of
//! laps, each starting at a random stage, so ready processes of all four stages are queued at
//! once. One message per turn (`budget(1)`): a turn is one stage's handler for one request.
//!
//! The same workload runs under [`Fifo`] (one ready queue) and [`Cohort`] (a queue per stage,
//! a batch of one stage at a time), in interleaved rounds; the medians are compared. Both go
//! through the same `Scheduler` path (one mutex per push and per pop); the built-in
//! work-stealing scheduler (no `Scheduler`) is printed as a reference, outside the ratio.
//! Before the ratio, each scheduler's round runs once more under
//! `perf stat -e cache-misses,L1-icache-load-misses` where `perf` and those counters exist.
//!
//! ```text
//! cargo run --release -p bench --bin cohort_bench
//! cargo run --release -p bench --bin cohort_bench -- --table-kib 32 --batch 256 --rounds 9
//! ```
//!
//! The defaults are tuned for a core with a 48 KiB L1d and a 2 MiB L2: four 1 MiB tables
//! (4 MiB in all) do not fit one core's L2, one does. A batch must be long enough for a stage
//! to read its table many times over after warming it: 64 reads per message × 1,024 turns is
//! 64 K reads against the 16 K cache lines of a 1 MiB table. With batches of 64 the tables
//! barely warm and the two schedulers are about even; with 32 KiB tables (L1-sized) the win
//! is smaller (about 10 %), since an L1 miss that hits L2 costs little.
//!
//! The last line is `cohort/fifo throughput ratio: X.XX`: median hops per second under
//! `Cohort` over the same under `Fifo`, counted per CPU-second of the bench's threads when
//! there is one worker and Linux tells the threads' CPU time (so other programs sharing the
//! machine's cores do not skew it), per wall-clock second otherwise. Both ratios are printed.

use std::collections::HashMap;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use whirl::prelude::*;
use whirl::scheduler::{Cohort, Fifo};
use whirl::SharedClient;

#[derive(clap::Parser, Debug, Clone)]
#[command(
    name = "cohort_bench",
    about = "Cohort scheduling against FIFO on a four-stage pipeline."
)]
struct Cli {
    /// Size of each stage's table, in KiB (a power of two; four stages touch four times this).
    #[arg(long, default_value_t = 1024)]
    table_kib: usize,
    /// Dependent table reads per message (each stage's hot loop is unrolled 32 reads; this
    /// runs it `lookups / 32` times, at least once).
    #[arg(long, default_value_t = 64)]
    lookups: u32,
    /// Processes per stage.
    #[arg(long, default_value_t = 256)]
    processes: usize,
    /// Requests circulating at once.
    #[arg(long, default_value_t = 8192)]
    requests: usize,
    /// Laps of the four stages each request makes.
    #[arg(long, default_value_t = 20)]
    laps: u32,
    /// Cohort batch: turns of one stage before the next.
    #[arg(long, default_value_t = 1024)]
    batch: u32,
    /// Worker threads of the group.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Rounds per scheduler (interleaved; the median is reported).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Run one round of this scheduler only and print its figures (used under `perf stat`).
    #[arg(long, value_parser = ["fifo", "cohort", "stealing"])]
    only: Option<String>,
    /// Skip the `perf stat` runs.
    #[arg(long)]
    no_perf: bool,
}

/// A request on its way: which one, how many laps are left, and what the stages computed.
#[derive(Message)]
struct Req {
    id: u64,
    laps: u32,
    acc: u64,
}

/// What every stage needs: the next stage's processes, its table, the counters.
#[derive(Isolated)]
struct Wiring<Next: Process> {
    next: Vec<Addr<Next>>,
    table: Arc<[u64]>,
    /// Hot-loop rounds per message (from `--lookups`).
    rounds: u32,
    done: SharedClient<Arc<Counters>>,
}

#[derive(Default)]
struct Counters {
    /// Requests that finished their laps.
    finished: AtomicU64,
    /// Sum of the finished requests' accumulators (the same under every scheduler).
    checksum: AtomicU64,
}

/// The routing of request `id` after stage `stage` on lap `laps`: independent of scheduling.
fn route(id: u64, laps: u32, stage: u64, n: usize) -> usize {
    let h = (id ^ (u64::from(laps) << 40) ^ (stage << 56)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((h >> 32) as usize) % n
}

/// One unrolled read: index from the running value, then fold the entry in. Each stage
/// instantiates it with its own constant `$s`, so the four hot loops are different code.
macro_rules! reads {
    ($x:ident, $t:ident, $mask:ident, $s:expr; $($k:literal)*) => {
        $(
            let i = (($x ^ ($k * $s)).wrapping_mul(0xBF58_476D_1CE4_E5B9) >> 21) as usize & $mask;
            $x = $x.rotate_left($k % 61 + 1) ^ $t[i].wrapping_add($s.wrapping_mul($k));
        )*
    };
}

/// A stage's hot loop: `rounds` times 32 dependent reads of `table`, with the stage's
/// constant `S`.
#[inline(never)]
fn work<const S: u64>(mut x: u64, table: &[u64], rounds: u32) -> u64 {
    let mask = table.len() - 1;
    for _ in 0..rounds {
        reads!(x, table, mask, S;
            1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16
            17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32);
    }
    x
}

#[process]
struct Parse {
    w: Wiring<Route>,
}

#[process]
impl Parse {
    #[handle]
    fn req(&mut self, mut req: Req) {
        req.acc = work::<0x51ED_2701_F3A5_0001>(req.acc ^ req.id, &self.w.table, self.w.rounds);
        let to = route(req.id, req.laps, 1, self.w.next.len());
        let _ = self.w.next[to].post(req);
    }
}

#[process]
struct Route {
    w: Wiring<Render>,
}

#[process]
impl Route {
    #[handle]
    fn req(&mut self, mut req: Req) {
        req.acc = work::<0x2545_F491_4F6C_DD1D>(req.acc, &self.w.table, self.w.rounds);
        let to = route(req.id, req.laps, 2, self.w.next.len());
        let _ = self.w.next[to].post(req);
    }
}

#[process]
struct Render {
    w: Wiring<Log>,
}

#[process]
impl Render {
    #[handle]
    fn req(&mut self, mut req: Req) {
        req.acc = work::<0x1405_7B7E_F767_814F>(req.acc, &self.w.table, self.w.rounds);
        let to = route(req.id, req.laps, 3, self.w.next.len());
        let _ = self.w.next[to].post(req);
    }
}

/// The parse processes, for the last stage to send requests round again (the stages form a
/// ring, so `Log` learns them after they are spawned, before any request flows).
#[derive(Message)]
struct Ring(Vec<Addr<Parse>>);

/// The last stage: ends the request's lap and sends it round again, or counts it finished.
#[process]
struct Log {
    w: Wiring<Parse>,
}

#[process]
impl Log {
    #[handle]
    fn ring(&mut self, Ring(parse): Ring) {
        self.w.next = parse;
    }

    #[handle]
    fn req(&mut self, mut req: Req) {
        req.acc = work::<0x9FB2_1C65_1E98_DF25>(req.acc, &self.w.table, self.w.rounds);
        if req.laps <= 1 {
            self.w.done.checksum.fetch_add(req.acc, Ordering::Relaxed);
            self.w.done.finished.fetch_add(1, Ordering::Release);
            return;
        }
        req.laps -= 1;
        let to = route(req.id, req.laps, 0, self.w.next.len());
        let _ = self.w.next[to].post(req);
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Sched {
    Fifo = 0,
    Cohort = 1,
    Stealing = 2,
}

impl Sched {
    fn name(self) -> &'static str {
        match self {
            Sched::Fifo => "fifo",
            Sched::Cohort => "cohort",
            Sched::Stealing => "stealing",
        }
    }
}

/// What one round measured.
struct Round {
    hops_per_sec: f64,
    /// Hops per second of CPU time used by the process's threads, where Linux tells it.
    hops_per_cpu_sec: Option<f64>,
    checksum: u64,
}

/// Nanoseconds on a CPU of each thread of this process (`/proc/self/task/*/schedstat`), if
/// the kernel tells.
fn thread_cpu_ns() -> Option<HashMap<u64, u64>> {
    let mut out = HashMap::new();
    for entry in std::fs::read_dir("/proc/self/task").ok()? {
        let entry = entry.ok()?;
        let Ok(tid) = entry.file_name().to_string_lossy().parse::<u64>() else {
            continue;
        };
        // A thread may end between the listing and the read: skip it.
        if let Ok(stat) = std::fs::read_to_string(entry.path().join("schedstat")) {
            let ns = stat.split_whitespace().next()?.parse().ok()?;
            out.insert(tid, ns);
        }
    }
    Some(out)
}

/// CPU time used by this process's threads between two `thread_cpu_ns` readings.
fn cpu_between(before: &HashMap<u64, u64>, after: &HashMap<u64, u64>) -> Duration {
    let ns: u64 = after
        .iter()
        .map(|(tid, &ns)| ns.saturating_sub(before.get(tid).copied().unwrap_or(0)))
        .sum();
    Duration::from_nanos(ns)
}

/// A table of `kib` KiB of pseudo-random words (rounded down to a power of two entries).
fn table(kib: usize, seed: u64) -> Arc<[u64]> {
    let words = (kib.max(1) * 1024 / 8).next_power_of_two();
    let words = if words * 8 > kib.max(1) * 1024 {
        words / 2
    } else {
        words
    };
    let mut x = seed | 1;
    (0..words)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect()
}

/// Runs the pipeline once under `sched`.
fn round(cli: &Cli, sched: Sched, tables: &[Arc<[u64]>; 4]) -> Round {
    let rt = Runtime::new();
    let builder = rt.group("pipeline").threads(cli.threads).budget(1);
    let builder = match sched {
        Sched::Fifo => builder.scheduler(Fifo::new()),
        Sched::Cohort => builder.scheduler(Cohort::new().batch(cli.batch)),
        Sched::Stealing => builder,
    };
    let group = builder.build().expect("a new group");
    let counters = Arc::new(Counters::default());
    let n = cli.processes.max(1);
    let rounds = (cli.lookups / 32).max(1);
    fn wiring<Next: Process>(
        next: Vec<Addr<Next>>,
        table: &Arc<[u64]>,
        rounds: u32,
        counters: &Arc<Counters>,
    ) -> Wiring<Next> {
        Wiring {
            next,
            table: Arc::clone(table),
            rounds,
            done: SharedClient::new(Arc::clone(counters), "the bench's counters"),
        }
    }
    let c = &counters;
    let logs: Vec<Addr<Log>> = (0..n)
        .map(|_| {
            rt.spawner().group(&group).spawn(Log {
                w: wiring(Vec::new(), &tables[3], rounds, c),
            })
        })
        .collect();
    let renders: Vec<Addr<Render>> = (0..n)
        .map(|_| {
            rt.spawner().group(&group).spawn(Render {
                w: wiring(logs.clone(), &tables[2], rounds, c),
            })
        })
        .collect();
    let routes: Vec<Addr<Route>> = (0..n)
        .map(|_| {
            rt.spawner().group(&group).spawn(Route {
                w: wiring(renders.clone(), &tables[1], rounds, c),
            })
        })
        .collect();
    let parses: Vec<Addr<Parse>> = (0..n)
        .map(|_| {
            rt.spawner().group(&group).spawn(Parse {
                w: wiring(routes.clone(), &tables[0], rounds, c),
            })
        })
        .collect();
    for log in &logs {
        log.post(Ring(parses.clone()))
            .expect("a log process is alive");
    }
    // Each log's first message is its `Ring`: every request reaches it later.
    let requests = cli.requests.max(1) as u64;
    let laps = cli.laps.max(1);
    let cpu_before = thread_cpu_ns();
    let start = Instant::now();
    // Each request starts at a pseudo-random stage, so all four stages have work at once.
    for id in 0..requests {
        let req = Req { id, laps, acc: id };
        let to = route(id, laps, 7, n);
        let posted = match (id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 62) as u8 {
            0 => parses[to].post(req).is_ok(),
            1 => routes[to].post(req).is_ok(),
            2 => renders[to].post(req).is_ok(),
            _ => logs[to].post(req).is_ok(),
        };
        assert!(posted, "the pipeline's processes are alive");
    }
    let deadline = Instant::now() + Duration::from_secs(600);
    while counters.finished.load(Ordering::Acquire) < requests && Instant::now() < deadline {
        std::thread::sleep(Duration::from_micros(200));
    }
    let elapsed = start.elapsed();
    let cpu_after = thread_cpu_ns();
    let finished = counters.finished.load(Ordering::Acquire);
    assert_eq!(finished, requests, "every request finished its laps");
    rt.shutdown_graceful();
    // Every request visits all four stages on each lap but its first may start mid-lap;
    // hops are counted as requests x laps x 4 (the same for every scheduler).
    let hops = requests * u64::from(laps) * 4;
    let cpu = match (cpu_before, cpu_after) {
        (Some(before), Some(after)) => Some(cpu_between(&before, &after)),
        _ => None,
    };
    Round {
        hops_per_sec: hops as f64 / elapsed.as_secs_f64(),
        hops_per_cpu_sec: cpu
            .filter(|cpu| !cpu.is_zero())
            .map(|cpu| hops as f64 / cpu.as_secs_f64()),
        checksum: counters.checksum.load(Ordering::Relaxed),
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    match xs.len() {
        0 => 0.0,
        n if n % 2 == 1 => xs[n / 2],
        n => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    }
}

/// Runs one round of `sched` again under `perf stat`; prints the counters or why not.
fn perf_round(sched: Sched) -> Option<String> {
    let exe = std::env::current_exe().ok()?;
    // Pass on every argument but the ones that select what this process runs.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let output = Command::new("perf")
        .args([
            "stat",
            "-x",
            ",",
            "-e",
            "cache-misses,L1-icache-load-misses",
            "--",
        ])
        .arg(exe)
        .args(&args)
        .args(["--only", sched.name(), "--no-perf"])
        .output()
        .ok()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mut counts = Vec::new();
    for line in stderr.lines() {
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() >= 3 && (fields[2].contains("cache-misses") || fields[2].contains("icache"))
        {
            counts.push(format!("{} {}", fields[2], fields[0]));
        }
    }
    if counts.iter().all(|c| c.contains("<not supported>")) && !counts.is_empty() {
        return Some(format!(
            "{} (the CPU's hardware cache counters are not available here, as in most VMs)",
            counts.join(", ")
        ));
    }
    if !output.status.success() || counts.is_empty() {
        return Some(format!(
            "perf stat failed ({}): {}",
            output.status,
            stderr.lines().last().unwrap_or("")
        ));
    }
    Some(counts.join(", "))
}

fn main() {
    let cli = Cli::parse();
    let tables: [Arc<[u64]>; 4] =
        [1, 2, 3, 4].map(|seed| table(cli.table_kib, seed * 0x1234_5678_9ABC));
    let table_kib = tables[0].len() * 8 / 1024;

    if let Some(only) = &cli.only {
        let sched = match only.as_str() {
            "fifo" => Sched::Fifo,
            "cohort" => Sched::Cohort,
            _ => Sched::Stealing,
        };
        let r = round(&cli, sched, &tables);
        println!("{}: {:.0} hops/s", sched.name(), r.hops_per_sec);
        return;
    }

    println!(
        "cohort_bench: 4 stages x {} processes, {} KiB table per stage ({} KiB in all), \
         {} dependent reads per message, {} requests x {} laps, batch {}, {} threads, {} rounds",
        cli.processes,
        table_kib,
        table_kib * 4,
        (cli.lookups / 32).max(1) * 32,
        cli.requests,
        cli.laps,
        cli.batch,
        cli.threads,
        cli.rounds
    );
    // A warm-up round of each, not counted.
    let _ = round(&cli, Sched::Fifo, &tables);
    let _ = round(&cli, Sched::Cohort, &tables);
    // Per scheduler (fifo, cohort, stealing): wall-clock and CPU-time throughput per round.
    let mut wall: [Vec<f64>; 3] = Default::default();
    let mut cpu: [Vec<f64>; 3] = Default::default();
    let mut checksums = Vec::new();
    for n in 0..cli.rounds.max(1) {
        // Alternate which goes first, so drift in the machine's load hits both alike.
        let order = if n % 2 == 0 {
            [Sched::Fifo, Sched::Cohort, Sched::Stealing]
        } else {
            [Sched::Cohort, Sched::Fifo, Sched::Stealing]
        };
        let mut line = format!("round {}:", n + 1);
        for sched in order {
            let r = round(&cli, sched, &tables);
            checksums.push(r.checksum);
            let i = sched as usize;
            wall[i].push(r.hops_per_sec);
            line.push_str(&format!(" {} {:.0}", sched.name(), r.hops_per_sec));
            if let Some(per_cpu) = r.hops_per_cpu_sec {
                cpu[i].push(per_cpu);
                line.push_str(&format!(" ({per_cpu:.0}/cpu-s)"));
            }
        }
        println!("{line} hops/s");
    }
    let agree = checksums.windows(2).all(|w| w[0] == w[1]);
    println!(
        "checksums: {} (every scheduler did the same work)",
        if agree { "all equal" } else { "DIFFER" }
    );
    let has_cpu = cpu.iter().all(|c| c.len() == wall[0].len());
    for sched in [Sched::Fifo, Sched::Cohort, Sched::Stealing] {
        let i = sched as usize;
        let per_cpu = if has_cpu {
            format!(", {:>10.0} hops per CPU-second", median(cpu[i].clone()))
        } else {
            String::new()
        };
        let note = if sched == Sched::Stealing {
            " (built-in work stealing, no Scheduler: reference only)"
        } else {
            ""
        };
        println!(
            "{:<9} {:>10.0} hops/s{per_cpu} (medians){note}",
            format!("{}:", sched.name()),
            median(wall[i].clone()),
        );
    }
    let wall_ratio = median(wall[1].clone()) / median(wall[0].clone());
    println!("cohort/fifo wall-clock: {wall_ratio:.2}");
    // With one worker the bench's CPU time is the time the pipeline ran, so hops per
    // CPU-second is the throughput an unshared core gives, unaffected by other programs
    // taking turns on the machine's cores; with several workers, idle workers would make it a
    // measure of efficiency instead, so the wall clock is used.
    let cpu_ratio =
        (has_cpu && cli.threads == 1).then(|| median(cpu[1].clone()) / median(cpu[0].clone()));
    if let Some(cpu_ratio) = cpu_ratio {
        println!(
            "cohort/fifo per CPU-second: {cpu_ratio:.2} (one worker: the throughput of an unshared \
             core, whatever else runs on the machine; the ratio below)"
        );
    }
    let has_perf = !cli.no_perf
        && Command::new("perf")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
    if has_perf {
        for sched in [Sched::Fifo, Sched::Cohort] {
            match perf_round(sched) {
                Some(line) => println!("perf stat, one {} round: {line}", sched.name()),
                None => println!("perf stat, one {} round: could not run", sched.name()),
            }
        }
    } else if cli.no_perf {
        println!("perf stat: skipped (--no-perf)");
    } else {
        println!("perf stat: perf is not installed; no cache-miss counts");
    }
    let ratio = cpu_ratio.unwrap_or(wall_ratio);
    println!("cohort/fifo throughput ratio: {ratio:.2}");
}
