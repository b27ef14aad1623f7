//! whirl against actix, kameo, ractor, plain tokio tasks, OS threads and a sequential loop, on
//! six classic actor workloads. See README.md.
//!
//! ```text
//! cargo run --release --manifest-path bench-compare/Cargo.toml -- [--quick] [--rounds N]
//!     [--only WORKLOAD[,WORKLOAD]] [--impls IMPL[,IMPL]] [--timeout SECS]
//! ```
//!
//! Every run is a fresh child process (this executable re-run with `--one IMPL WORKLOAD`), so
//! no implementation inherits another's threads, heap or resident set. The child prints one
//! line, `result units=N secs=S [rss_bytes_per_actor=B]`, and exits.

mod common;
mod impls;

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{Sizes, Workload};

const USAGE: &str = "\
usage: bench-compare [--quick] [--rounds N] [--only WORKLOAD[,WORKLOAD]] [--impls IMPL[,IMPL]] [--timeout SECS]
       bench-compare --one IMPL WORKLOAD [--quick]     (one run, in this process)

workloads:       ping-pong, counting, fork-join, ring, spawn, chameneos
implementations: whirl, actix, kameo, ractor, tokio, threads, sequential";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match Options::parse(&args) {
        Ok(Mode::One {
            implementation,
            workload,
            quick,
        }) => run_one(&implementation, workload, quick),
        Ok(Mode::Compare(options)) => compare(&options),
        Ok(Mode::Help) => println!("{USAGE}"),
        Err(message) => {
            eprintln!("bench-compare: {message}\n\n{USAGE}");
            std::process::exit(2);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Options

struct Options {
    quick: bool,
    rounds: usize,
    workloads: Vec<Workload>,
    implementations: Vec<&'static str>,
    timeout: Duration,
}

enum Mode {
    One {
        implementation: String,
        workload: Workload,
        quick: bool,
    },
    Compare(Options),
    Help,
}

impl Options {
    fn parse(args: &[String]) -> Result<Mode, String> {
        let mut options = Options {
            quick: false,
            rounds: 3,
            workloads: Workload::ALL.to_vec(),
            implementations: impls::ALL.to_vec(),
            timeout: Duration::from_secs(60),
        };
        let mut one = None;
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let mut value = |name: &str| {
                args.next()
                    .cloned()
                    .ok_or_else(|| format!("{name} needs a value"))
            };
            match arg.as_str() {
                "--quick" => options.quick = true,
                "--rounds" => {
                    options.rounds = value("--rounds")?
                        .parse()
                        .ok()
                        .filter(|&n: &usize| n > 0)
                        .ok_or("--rounds needs a positive number")?;
                }
                "--timeout" => {
                    let secs: u64 = value("--timeout")?
                        .parse()
                        .ok()
                        .filter(|&n: &u64| n > 0)
                        .ok_or("--timeout needs a positive number of seconds")?;
                    options.timeout = Duration::from_secs(secs);
                }
                "--only" => {
                    options.workloads = value("--only")?
                        .split(',')
                        .map(|w| Workload::parse(w).ok_or(format!("unknown workload `{w}`")))
                        .collect::<Result<_, _>>()?;
                }
                "--impls" => {
                    let wanted = value("--impls")?;
                    let wanted: Vec<&str> = wanted.split(',').collect();
                    if let Some(unknown) = wanted.iter().find(|w| !impls::ALL.contains(w)) {
                        return Err(format!("unknown implementation `{unknown}`"));
                    }
                    // Keep the table's column order whatever the order asked.
                    options.implementations = impls::ALL
                        .into_iter()
                        .filter(|i| wanted.contains(i))
                        .collect();
                }
                "--one" => {
                    let implementation = value("--one")?;
                    let workload = value("--one")?;
                    let workload = Workload::parse(&workload)
                        .ok_or(format!("unknown workload `{workload}`"))?;
                    if !impls::ALL.contains(&implementation.as_str()) {
                        return Err(format!("unknown implementation `{implementation}`"));
                    }
                    one = Some((implementation, workload));
                }
                "--help" | "-h" => return Ok(Mode::Help),
                other => return Err(format!("unknown argument `{other}`")),
            }
        }
        if options.workloads.is_empty() || options.implementations.is_empty() {
            return Err("nothing to run".into());
        }
        Ok(match one {
            Some((implementation, workload)) => Mode::One {
                implementation,
                workload,
                quick: options.quick,
            },
            None => Mode::Compare(options),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The child: one run

fn run_one(implementation: &str, workload: Workload, quick: bool) {
    let sizes = Sizes::new(quick);
    let outcome = impls::run(implementation, workload, &sizes)
        .expect("the implementation's name was checked when parsing the options");
    let mut line = format!(
        "result units={} secs={:.6}",
        outcome.units,
        outcome.elapsed.as_secs_f64()
    );
    if let Some(bytes) = outcome.rss_bytes_per_actor {
        line.push_str(&format!(" rss_bytes_per_actor={bytes}"));
    }
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}").expect("cannot write the result");
    stdout.flush().expect("cannot write the result");
    // Exit without tearing down runtimes, threads and a million actors one by one.
    std::process::exit(0);
}

// ---------------------------------------------------------------------------------------------
// The parent: rounds of child runs

/// One successful run, as its child reported it.
#[derive(Clone, Copy, Debug)]
struct Sample {
    units: u64,
    secs: f64,
    rss_bytes_per_actor: Option<u64>,
}

impl Sample {
    fn rate(&self) -> f64 {
        self.units as f64 / self.secs
    }

    fn parse(stdout: &str) -> Option<Sample> {
        let line = stdout.lines().find(|l| l.starts_with("result "))?;
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
        };
        let sample = Sample {
            units: field("units")?.parse().ok()?,
            secs: field("secs")?.parse().ok()?,
            rss_bytes_per_actor: field("rss_bytes_per_actor").and_then(|b| b.parse().ok()),
        };
        (sample.secs > 0.0).then_some(sample)
    }
}

type RunResult = Result<Sample, String>;

/// Runs one child and waits for it, at most `timeout`.
fn run_child(
    implementation: &str,
    workload: Workload,
    quick: bool,
    timeout: Duration,
) -> RunResult {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let mut command = Command::new(exe);
    command.args(["--one", implementation, workload.name()]);
    if quick {
        command.arg("--quick");
    }
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start a child: {e}"))?;
    // Read both pipes on threads so that a chatty child cannot block on a full pipe.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_string(&mut text);
            }
            text
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(format!("cannot wait for the child: {e}")),
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    match status {
        None => Err(format!("timed out after {} s", timeout.as_secs())),
        Some(status) if !status.success() => Err(format!(
            "exited with {status}: {}",
            failure_summary(&stderr)
        )),
        Some(_) => Sample::parse(&stdout)
            .ok_or_else(|| format!("no result line in its output: {:?}", stdout.trim())),
    }
}

/// The informative part of a failed child's stderr: its panic message, or its last line.
fn failure_summary(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let summary = match lines.iter().position(|l| l.contains("panicked at")) {
        Some(i) => lines[i..]
            .iter()
            .take(2)
            .copied()
            .collect::<Vec<_>>()
            .join(" "),
        None => lines.last().copied().unwrap_or("no output").to_string(),
    };
    summary.chars().take(200).collect()
}

struct Results {
    /// `runs[workload][implementation]`: every round's result, in order.
    runs: Vec<Vec<Vec<RunResult>>>,
}

impl Results {
    fn samples(&self, w: usize, i: usize) -> Vec<Sample> {
        self.runs[w][i]
            .iter()
            .filter_map(|r| r.clone().ok())
            .collect()
    }

    fn median_rate(&self, w: usize, i: usize) -> Option<f64> {
        median(self.samples(w, i).iter().map(Sample::rate).collect())
    }

    fn median_rss(&self, w: usize, i: usize) -> Option<f64> {
        median(
            self.samples(w, i)
                .iter()
                .filter_map(|s| s.rss_bytes_per_actor.map(|b| b as f64))
                .collect(),
        )
    }
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    })
}

fn compare(options: &Options) {
    let sizes = Sizes::new(options.quick);
    print_header(options, &sizes);
    let (workloads, implementations) = (&options.workloads, &options.implementations);
    let mut results = Results {
        runs: vec![vec![Vec::new(); implementations.len()]; workloads.len()],
    };
    for round in 0..options.rounds {
        // Rotate the implementations' order each round, so none always runs first or last.
        let mut order: Vec<usize> = (0..implementations.len()).collect();
        order.rotate_left(round % implementations.len());
        for (w, workload) in workloads.iter().enumerate() {
            for &i in &order {
                let implementation = implementations[i];
                eprint!(
                    "round {}/{}: {:<10} {:<10} ",
                    round + 1,
                    options.rounds,
                    workload.name(),
                    implementation
                );
                let result = run_child(implementation, *workload, options.quick, options.timeout);
                match &result {
                    Ok(sample) => eprintln!(
                        "{:>12} {} ({:.3} s)",
                        human(sample.rate()),
                        workload.unit(),
                        sample.secs
                    ),
                    Err(why) => eprintln!("FAILED: {why}"),
                }
                results.runs[w][i].push(result);
            }
        }
    }
    print_throughput(options, &results);
    print_ratios(options, &results);
    print_failures(options, &results);
}

// ---------------------------------------------------------------------------------------------
// Output

fn print_header(options: &Options, sizes: &Sizes) {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let rustc = Command::new("rustc")
        .arg("-V")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "rustc: unknown".into());
    println!("bench-compare: whirl vs actix 0.13, kameo 0.22, ractor 0.16, tokio tasks, OS threads, sequential");
    println!("machine: {cores} cores ({cpu}); {rustc}; {}", utc_now());
    println!(
        "runtimes: 2 worker threads each (whirl threads(2), tokio/kameo/ractor worker_threads(2), actix 2 arbiters); threads: one OS thread per actor"
    );
    println!(
        "sizes ({}): ping-pong {} round trips, counting {} msgs, fork-join {} actors x {} msgs, ring {} actors x {} hops, spawn {} actors ({} OS threads), chameneos {} creatures x {} meetings",
        if options.quick { "--quick, 1/10" } else { "full" },
        sizes.ping_pong_round_trips,
        sizes.counting_messages,
        sizes.fork_join_actors,
        sizes.fork_join_per_actor,
        sizes.ring_actors,
        sizes.ring_hops,
        sizes.spawn_actors,
        sizes.spawn_threads,
        sizes.chameneos_creatures,
        sizes.chameneos_meetings,
    );
    println!(
        "{} round(s), a fresh process per run, implementation order rotated each round, timeout {} s per run\n",
        options.rounds,
        options.timeout.as_secs()
    );
}

const NAME_W: usize = 11;
const UNIT_W: usize = 11;
const CELL_W: usize = 15;

fn print_throughput(options: &Options, results: &Results) {
    let ranges = options.rounds > 1;
    println!(
        "throughput: median of {} round(s){}",
        options.rounds,
        if ranges { ", min-max below" } else { "" }
    );
    print!("{:<NAME_W$}{:<UNIT_W$}", "workload", "unit");
    for implementation in &options.implementations {
        print!("{implementation:>CELL_W$}");
    }
    println!();
    for (w, workload) in options.workloads.iter().enumerate() {
        print!("{:<NAME_W$}{:<UNIT_W$}", workload.name(), workload.unit());
        for i in 0..options.implementations.len() {
            let failed = results.runs[w][i].iter().any(Result::is_err);
            let cell = match results.median_rate(w, i) {
                Some(rate) if failed => format!("{}*", human(rate)),
                Some(rate) => human(rate),
                None => "FAILED".into(),
            };
            print!("{cell:>CELL_W$}");
        }
        println!();
        if ranges {
            print!("{:<NAME_W$}{:<UNIT_W$}", "", "");
            for i in 0..options.implementations.len() {
                let rates: Vec<f64> = results.samples(w, i).iter().map(Sample::rate).collect();
                let cell = match (
                    rates.iter().copied().reduce(f64::min),
                    rates.iter().copied().reduce(f64::max),
                ) {
                    (Some(min), Some(max)) => range(min, max),
                    _ => String::new(),
                };
                print!("{cell:>CELL_W$}");
            }
            println!();
        }
    }
    if let Some(w) = options.workloads.iter().position(|w| *w == Workload::Spawn) {
        print!("{:<NAME_W$}{:<UNIT_W$}", "spawn mem", "B/actor");
        for i in 0..options.implementations.len() {
            let cell = results
                .median_rss(w, i)
                .map_or("-".into(), |b| format!("{b:.0}"));
            print!("{cell:>CELL_W$}");
        }
        println!();
    }
    println!();
}

fn print_ratios(options: &Options, results: &Results) {
    let Some(whirl) = options.implementations.iter().position(|i| *i == "whirl") else {
        println!("(no whirl runs: no ratio table)");
        return;
    };
    let index = |name: &str| options.implementations.iter().position(|i| *i == name);
    const RATIO_W: usize = 24;
    println!("ratios of medians (throughput: higher is better for whirl)");
    println!(
        "{:<NAME_W$}{:>RATIO_W$}{:>14}{:>14}{:>18}{:>20}",
        "workload",
        "whirl/best actor crate",
        "whirl/tokio",
        "whirl/threads",
        "whirl/sequential",
        "whirl B/idle actor"
    );
    for (w, workload) in options.workloads.iter().enumerate() {
        let whirl_rate = results.median_rate(w, whirl);
        let ratio_to = |other: Option<usize>| -> Option<f64> {
            Some(whirl_rate? / results.median_rate(w, other?)?)
        };
        let best_actor_crate = impls::ACTOR_CRATES
            .iter()
            .filter_map(|name| Some((*name, results.median_rate(w, index(name)?)?)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let best = match (whirl_rate, best_actor_crate) {
            (Some(rate), Some((name, best))) => format!("{:.2}x ({name})", rate / best),
            _ => "-".into(),
        };
        let times = |r: Option<f64>| r.map_or("-".into(), |r| format!("{r:.2}x"));
        let percent =
            ratio_to(index("sequential")).map_or("-".into(), |r| format!("{:.1}%", r * 100.0));
        let memory = if *workload == Workload::Spawn {
            results
                .median_rss(w, whirl)
                .map_or("-".into(), |b| format!("{b:.0}"))
        } else {
            String::new()
        };
        println!(
            "{:<NAME_W$}{best:>RATIO_W$}{:>14}{:>14}{percent:>18}{memory:>20}",
            workload.name(),
            times(ratio_to(index("tokio"))),
            times(ratio_to(index("threads"))),
        );
    }
    println!();
}

fn print_failures(options: &Options, results: &Results) {
    let mut any = false;
    for (w, workload) in options.workloads.iter().enumerate() {
        for (i, implementation) in options.implementations.iter().enumerate() {
            for (round, result) in results.runs[w][i].iter().enumerate() {
                if let Err(why) = result {
                    if !any {
                        println!(
                            "failed runs (* in the table: the median is of the other rounds):"
                        );
                        any = true;
                    }
                    println!(
                        "  {} on {implementation}, round {}: {why}",
                        workload.name(),
                        round + 1
                    );
                }
            }
        }
    }
}

/// A rate with a unit prefix, e.g. `12.34 M`.
fn human(rate: f64) -> String {
    if rate >= 1e9 {
        format!("{:.2} G", rate / 1e9)
    } else if rate >= 1e6 {
        format!("{:.2} M", rate / 1e6)
    } else if rate >= 1e3 {
        format!("{:.1} k", rate / 1e3)
    } else {
        format!("{rate:.0}")
    }
}

/// A min-max range in the unit of its maximum, e.g. `11.9-12.5 M`.
fn range(min: f64, max: f64) -> String {
    let (scale, prefix) = if max >= 1e9 {
        (1e9, " G")
    } else if max >= 1e6 {
        (1e6, " M")
    } else if max >= 1e3 {
        (1e3, " k")
    } else {
        (1.0, "")
    };
    format!("{:.1}-{:.1}{prefix}", min / scale, max / scale)
}

/// The current date and time in UTC, as `YYYY-MM-DD HH:MM UTC`.
fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil-from-days algorithm.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        rest / 3_600,
        rest % 3_600 / 60
    )
}
