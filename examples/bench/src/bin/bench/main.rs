//! whirl against a baseline of plain tokio tasks with `tokio::sync::mpsc`, on the classic actor
//! workloads, in one invocation:
//!
//! ```text
//! cargo run --release -p bench --bin bench            # all rows
//! cargo run --release -p bench --bin bench -- quick   # 1/10 of the work, for a smoke run
//! cargo run --release -p bench --bin bench -- quick --json
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
mod report;
mod tokio_side;
mod whirl_side;
mod workloads;

use memory::SpawnReport;
use report::Report;
use workloads::{Measured, Sizes, Workloads};

/// Prints a human line: to stdout normally, to stderr under `--json` (stdout is the document).
macro_rules! say {
    ($json:expr) => {
        if $json { eprintln!() } else { println!() }
    };
    ($json:expr, $($arg:tt)*) => {
        if $json { eprintln!($($arg)*) } else { println!($($arg)*) }
    };
}

const RUNS: usize = 3;

/// One row of the table: its name, its unit, and the whirl and tokio rates (or, for the LIFO
/// rows, the whirl rates with the slot on and off).
type Row = (&'static str, &'static str, f64, f64);

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
    let suite = if quick { "bench quick" } else { "bench full" };
    let mut report = Report::new(suite, threads, RUNS, sizes);

    let rows = measure_rows(sizes, threads);
    let lifo_rows = measure_lifo(&rows, sizes, threads);
    let whirl_spawn = memory::spawn_in_child("whirl", sizes.spawn_processes, threads);
    let tokio_spawn = memory::spawn_in_child("tokio", sizes.spawn_processes, threads);

    print_rows(json, &rows, &mut report);
    match (whirl_spawn, tokio_spawn) {
        (Ok(w), Ok(t)) => print_spawn(json, &w, &t, &mut report),
        (w, t) => {
            eprintln!(
                "spawn rows failed: whirl {:?}, tokio {:?}",
                w.err(),
                t.err()
            );
            std::process::exit(1);
        }
    }
    print_lifo(json, &lifo_rows, &mut report);
    if json {
        report.print();
    }
}

/// The message-passing rows, whirl against tokio, run alternately.
fn measure_rows(sizes: Sizes, threads: usize) -> Vec<Row> {
    let whirl = whirl_side::Bench::new(threads, true);
    let tokio = tokio_side::Bench::new(threads);
    vec![
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
    ]
}

/// The LIFO slot (a woken process runs next on the waking worker) matters for request/response
/// chains; measures the rows it affects with the slot off, beside `rows`' figures with it on.
fn measure_lifo(rows: &[Row], sizes: Sizes, threads: usize) -> [Row; 2] {
    let no_lifo = whirl_side::Bench::new(threads, false);
    [
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
    ]
}

/// The table's head and its message-passing rows.
fn print_rows(json: bool, rows: &[Row], report: &mut Report) {
    say!(
        json,
        "{:<12} {:>8} {:>14} {:>14} {:>8}",
        "workload",
        "unit",
        "whirl",
        "tokio",
        "ratio"
    );
    for &(name, unit, w, t) in rows {
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
}

/// The spawn, memory and peak RSS rows.
fn print_spawn(json: bool, w: &SpawnReport, t: &SpawnReport, report: &mut Report) {
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

/// The LIFO slot's table: each affected row with the slot on and off.
fn print_lifo(json: bool, lifo_rows: &[Row], report: &mut Report) {
    say!(
        json,
        "\n{:<12} {:>14} {:>14} {:>8}",
        "LIFO slot",
        "on",
        "off",
        "on/off"
    );
    for &(name, unit, on, off) in lifo_rows {
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
