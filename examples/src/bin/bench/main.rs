//! whirl against a baseline of plain tokio tasks with `tokio::sync::mpsc`, on the classic actor
//! workloads, in one invocation:
//!
//! ```text
//! cargo run --release -p examples --bin bench            # all rows
//! cargo run --release -p examples --bin bench -- quick   # 1/10 of the work, for a smoke run
//! ```
//!
//! Every workload verifies its counts. Rates are best-of-`RUNS`, run alternately so both sides
//! see the same machine noise; the ratio column is whirl / tokio. The spawn rows run in child
//! processes so each side's peak RSS is its own.

mod memory;
mod tokio_side;
mod whirl_side;

use std::time::Duration;

/// The sizes of the workloads.
#[derive(Clone, Copy, Debug)]
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
    let sizes = if args.iter().any(|a| a == "quick") {
        Sizes::full().scaled(10)
    } else {
        Sizes::full()
    };
    let threads = threads();
    if let Some(pos) = args.iter().position(|a| a == "--profile") {
        profile_one(&args[pos + 1..], sizes, threads);
        return;
    }
    println!("whirl vs tokio (tokio::sync::mpsc unbounded), {threads} worker threads each, best of {RUNS}");
    println!("sizes: {sizes:?}\n");

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
            rows[0].2,
            best_of(|| no_lifo.ping_pong(sizes.ping_pong_round_trips)),
        ),
        (
            "thread ring",
            rows[3].2,
            best_of(|| no_lifo.ring(sizes.ring_processes, sizes.ring_hops)),
        ),
    ];
    drop(no_lifo);
    let whirl_spawn = memory::spawn_in_child("whirl", sizes.spawn_processes, threads);
    let tokio_spawn = memory::spawn_in_child("tokio", sizes.spawn_processes, threads);

    println!(
        "{:<12} {:>8} {:>14} {:>14} {:>8}",
        "workload", "unit", "whirl", "tokio", "ratio"
    );
    for (name, unit, w, t) in &rows {
        println!(
            "{name:<12} {unit:>8} {:>14} {:>14} {:>7.2}x",
            human(*w),
            human(*t),
            w / t
        );
    }
    match (whirl_spawn, tokio_spawn) {
        (Ok(w), Ok(t)) => {
            println!(
                "{:<12} {:>8} {:>14} {:>14} {:>7.2}x",
                "spawn",
                "spawns/s",
                human(w.rate),
                human(t.rate),
                w.rate / t.rate
            );
            println!(
                "{:<12} {:>8} {:>14} {:>14} {:>7.2}x",
                "memory",
                "B/proc",
                w.bytes_per_process,
                t.bytes_per_process,
                w.bytes_per_process as f64 / t.bytes_per_process as f64
            );
            println!(
                "{:<12} {:>8} {:>14} {:>14}",
                "peak RSS", "MiB", w.peak_rss_mib, t.peak_rss_mib
            );
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
    println!(
        "\n{:<12} {:>14} {:>14} {:>8}",
        "LIFO slot", "on", "off", "on/off"
    );
    for (name, on, off) in lifo_rows {
        println!(
            "{name:<12} {:>14} {:>14} {:>7.2}x",
            human(on),
            human(off),
            on / off
        );
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
