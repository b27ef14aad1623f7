//! whirl against a baseline of plain tokio tasks with `tokio::sync::mpsc`, on the classic actor
//! workloads, in one invocation:
//!
//! ```text
//! cargo run --release -p examples --bin bench            # all rows
//! cargo run --release -p examples --bin bench -- quick   # 1/10 of the work, for a smoke run
//! cargo run --release -p examples --bin bench -- quick --json
//! ```
//!
//! Every workload verifies its counts. Rates are best-of-`RUNS`, run alternately so both sides
//! see the same machine noise; the ratio column is whirl / tokio. The spawn rows run in child
//! processes so each side's peak RSS is its own.
//!
//! `--json` (with or without `quick`) prints one JSON document on stdout listing every figure,
//! for the benchmark recorder (`whirl-bench record`); the human table then goes to stderr, so
//! stdout holds nothing but the document:
//!
//! ```json
//! { "suite": "bench quick", "threads": 2, "runs": 3, "sizes": { "ping_pong_round_trips": 100000 },
//!   "figures": [ { "name": "ping-pong whirl", "value": 1.2e6, "unit": "msgs/s",
//!                  "higher_is_better": true } ] }
//! ```
//!
//! Figure names are `"<row> whirl"`, `"<row> tokio"` and `"<row> whirl/tokio"` (unit `x`), plus
//! the LIFO comparison (`"<row> whirl LIFO off"`, `"<row> LIFO on/off"`). Rates are higher-better;
//! bytes per process, peak RSS and the memory ratio are lower-better. A figure that is not a
//! finite number (a zero denominator) is left out with a warning on stderr.

mod memory;
mod tokio_side;
mod whirl_side;

use std::time::Duration;

use serde::Serialize;

/// Prints a human line: to stdout normally, to stderr under `--json` (stdout is the document).
macro_rules! say {
    ($json:expr) => {
        if $json { eprintln!() } else { println!() }
    };
    ($json:expr, $($arg:tt)*) => {
        if $json { eprintln!($($arg)*) } else { println!($($arg)*) }
    };
}

/// The sizes of the workloads.
#[derive(Clone, Copy, Debug, Serialize)]
pub(crate) struct Sizes {
    pub(crate) ping_pong_round_trips: u64,
    pub(crate) counting_posts: u64,
    pub(crate) fork_join_processes: u64,
    pub(crate) fork_join_per_process: u64,
    pub(crate) ring_processes: u64,
    pub(crate) ring_hops: u64,
    pub(crate) spawn_processes: u64,
}

impl Sizes {
    fn full() -> Self {
        Sizes {
            ping_pong_round_trips: 1_000_000,
            counting_posts: 10_000_000,
            fork_join_processes: 60,
            fork_join_per_process: 200_000,
            ring_processes: 1_000,
            ring_hops: 10_000_000,
            spawn_processes: 1_000_000,
        }
    }

    fn scaled(self, divisor: u64) -> Self {
        Sizes {
            ping_pong_round_trips: self.ping_pong_round_trips / divisor,
            counting_posts: self.counting_posts / divisor,
            fork_join_per_process: self.fork_join_per_process / divisor,
            ring_hops: self.ring_hops / divisor,
            spawn_processes: self.spawn_processes / divisor,
            ..self
        }
    }
}

/// What a workload run reports: how long it took and how many units of work it did.
pub(crate) struct Measured {
    pub(crate) elapsed: Duration,
    pub(crate) units: u64,
}

impl Measured {
    fn rate(&self) -> f64 {
        self.units as f64 / self.elapsed.as_secs_f64()
    }
}

const RUNS: usize = 3;

/// One figure of the `--json` document.
#[derive(Serialize)]
struct Figure {
    name: String,
    value: f64,
    unit: &'static str,
    higher_is_better: bool,
}

/// The `--json` document.
#[derive(Serialize)]
struct Report {
    suite: &'static str,
    threads: usize,
    runs: usize,
    sizes: Sizes,
    figures: Vec<Figure>,
}

impl Report {
    fn add(&mut self, name: impl Into<String>, value: f64, unit: &'static str, higher: bool) {
        let name = name.into();
        if value.is_finite() {
            self.figures.push(Figure {
                name,
                value,
                unit,
                higher_is_better: higher,
            });
        } else {
            eprintln!("warning: figure {name:?} is {value}, left out of the JSON document");
        }
    }
}

fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
}

fn best_of(mut run: impl FnMut() -> Measured) -> f64 {
    (0..RUNS).map(|_| run().rate()).fold(0.0, f64::max)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(pos) = args.iter().position(|a| a == "--spawn-child") {
        memory::run_spawn_child(&args[pos + 1..]);
        return;
    }
    let quick = args.iter().any(|a| a == "quick");
    let json = args.iter().any(|a| a == "--json");
    let sizes = if quick {
        Sizes::full().scaled(10)
    } else {
        Sizes::full()
    };
    let threads = threads();
    if let Some(pos) = args.iter().position(|a| a == "--profile") {
        profile_one(&args[pos + 1..], sizes, threads);
        return;
    }
    say!(json, "whirl vs tokio (tokio::sync::mpsc unbounded), {threads} worker threads each, best of {RUNS}");
    say!(json, "sizes: {sizes:?}\n");
    let mut report = Report {
        suite: if quick { "bench quick" } else { "bench full" },
        threads,
        runs: RUNS,
        sizes,
        figures: Vec::new(),
    };

    let whirl = whirl_side::Bench::new(threads, true);
    let tokio = tokio_side::Bench::new(threads);
    let rows: Vec<(&str, &str, f64, f64)> = vec![
        (
            "ping-pong",
            "msgs/s",
            best_of(|| whirl.ping_pong(sizes.ping_pong_round_trips)),
            best_of(|| tokio.ping_pong(sizes.ping_pong_round_trips)),
        ),
        (
            "counting",
            "msgs/s",
            best_of(|| whirl.counting(sizes.counting_posts)),
            best_of(|| tokio.counting(sizes.counting_posts)),
        ),
        (
            "fork-join",
            "msgs/s",
            best_of(|| whirl.fork_join(sizes.fork_join_processes, sizes.fork_join_per_process)),
            best_of(|| tokio.fork_join(sizes.fork_join_processes, sizes.fork_join_per_process)),
        ),
        (
            "thread ring",
            "hops/s",
            best_of(|| whirl.ring(sizes.ring_processes, sizes.ring_hops)),
            best_of(|| tokio.ring(sizes.ring_processes, sizes.ring_hops)),
        ),
    ];
    drop(whirl);
    drop(tokio);
    // The LIFO slot (a woken process runs next on the waking worker) matters for
    // request/response chains; measure both settings on the rows it affects.
    let no_lifo = whirl_side::Bench::new(threads, false);
    let lifo_rows = [
        (
            "ping-pong",
            rows[0].1,
            rows[0].2,
            best_of(|| no_lifo.ping_pong(sizes.ping_pong_round_trips)),
        ),
        (
            "thread ring",
            rows[3].1,
            rows[3].2,
            best_of(|| no_lifo.ring(sizes.ring_processes, sizes.ring_hops)),
        ),
    ];
    drop(no_lifo);
    let whirl_spawn = memory::spawn_in_child("whirl", sizes.spawn_processes, threads);
    let tokio_spawn = memory::spawn_in_child("tokio", sizes.spawn_processes, threads);

    say!(
        json,
        "{:<12} {:>8} {:>14} {:>14} {:>8}",
        "workload",
        "unit",
        "whirl",
        "tokio",
        "ratio"
    );
    for &(name, unit, w, t) in &rows {
        say!(
            json,
            "{name:<12} {unit:>8} {:>14} {:>14} {:>7.2}x",
            human(w),
            human(t),
            w / t
        );
        report.add(format!("{name} whirl"), w, unit, true);
        report.add(format!("{name} tokio"), t, unit, true);
        report.add(format!("{name} whirl/tokio"), w / t, "x", true);
    }
    match (whirl_spawn, tokio_spawn) {
        (Ok(w), Ok(t)) => {
            say!(
                json,
                "{:<12} {:>8} {:>14} {:>14} {:>7.2}x",
                "spawn",
                "spawns/s",
                human(w.rate),
                human(t.rate),
                w.rate / t.rate
            );
            say!(
                json,
                "{:<12} {:>8} {:>14} {:>14} {:>7.2}x",
                "memory",
                "B/proc",
                w.bytes_per_process,
                t.bytes_per_process,
                w.bytes_per_process as f64 / t.bytes_per_process as f64
            );
            say!(
                json,
                "{:<12} {:>8} {:>14} {:>14}",
                "peak RSS",
                "MiB",
                w.peak_rss_mib,
                t.peak_rss_mib
            );
            report.add("spawn whirl", w.rate, "spawns/s", true);
            report.add("spawn tokio", t.rate, "spawns/s", true);
            report.add("spawn whirl/tokio", w.rate / t.rate, "x", true);
            // Memory: fewer bytes per process is better, so a lower whirl/tokio ratio is too.
            let (wb, tb) = (w.bytes_per_process as f64, t.bytes_per_process as f64);
            report.add("memory whirl", wb, "B/proc", false);
            report.add("memory tokio", tb, "B/proc", false);
            report.add("memory whirl/tokio", wb / tb, "x", false);
            report.add("peak RSS whirl", w.peak_rss_mib as f64, "MiB", false);
            report.add("peak RSS tokio", t.peak_rss_mib as f64, "MiB", false);
        }
        (w, t) => {
            eprintln!(
                "spawn rows failed: whirl {:?}, tokio {:?}",
                w.err(),
                t.err()
            );
            std::process::exit(1);
        }
    }
    say!(
        json,
        "\n{:<12} {:>14} {:>14} {:>8}",
        "LIFO slot",
        "on",
        "off",
        "on/off"
    );
    for (name, unit, on, off) in lifo_rows {
        say!(
            json,
            "{name:<12} {:>14} {:>14} {:>7.2}x",
            human(on),
            human(off),
            on / off
        );
        // "on" is the "<row> whirl" figure above; only "off" and the ratio are new.
        report.add(format!("{name} whirl LIFO off"), off, unit, true);
        report.add(format!("{name} LIFO on/off"), on / off, "x", true);
    }
    if json {
        match serde_json::to_string_pretty(&report) {
            Ok(doc) => println!("{doc}"),
            Err(e) => {
                eprintln!("cannot serialize the report: {e}");
                std::process::exit(1);
            }
        }
    }
}

/// The workloads both sides implement.
pub(crate) trait Workloads {
    fn ping_pong(&self, round_trips: u64) -> Measured;
    fn counting(&self, posts: u64) -> Measured;
    fn fork_join(&self, processes: u64, per_process: u64) -> Measured;
    fn ring(&self, size: u64, hops: u64) -> Measured;
}

/// `--profile ROW SIDE`: runs one workload once on one side, for `perf` and friends.
fn profile_one(args: &[String], sizes: Sizes, threads: usize) {
    let (Some(row), Some(side)) = (args.first(), args.get(1)) else {
        eprintln!("usage: bench [quick] --profile ping-pong|counting|fork-join|ring whirl|tokio");
        std::process::exit(2);
    };
    let bench: Box<dyn Workloads> = match side.as_str() {
        "whirl" => Box::new(whirl_side::Bench::new(threads, true)),
        "tokio" => Box::new(tokio_side::Bench::new(threads)),
        _ => return eprintln!("unknown side {side}"),
    };
    let measured = match row.as_str() {
        "ping-pong" => bench.ping_pong(sizes.ping_pong_round_trips),
        "counting" => bench.counting(sizes.counting_posts),
        "fork-join" => bench.fork_join(sizes.fork_join_processes, sizes.fork_join_per_process),
        "ring" => bench.ring(sizes.ring_processes, sizes.ring_hops),
        _ => return eprintln!("unknown row {row}"),
    };
    println!("{row} on {side}: {}/s", human(measured.rate()));
}

fn human(rate: f64) -> String {
    if rate >= 1e6 {
        format!("{:.2} M", rate / 1e6)
    } else if rate >= 1e3 {
        format!("{:.1} k", rate / 1e3)
    } else {
        format!("{rate:.0}")
    }
}
