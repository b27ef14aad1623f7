//! Automatic grouping (the Whirlwind paper's future work, §VII): processes whose handlers block
//! are moved out of the group they slow down.
//!
//! A `web` group of two workers serves many small API processes. A few `Report` processes in
//! the same group call a synchronous, blocking backend (a 40 ms sleep stands for a database
//! driver that blocks its thread). Each blocked handler holds one of the two workers, so the
//! API's answers wait behind it. The example runs the same load twice, each on a fresh runtime:
//!
//! 1. as written: everything stays in `web`;
//! 2. with `web.auto_move(AutoMove::blocking_to(&blocking))`: the slow-turn watchdog notices
//!    the reports' long turns, and the rule moves them to a `blocking` group with more threads,
//!    at a message boundary, their queues with them.
//!
//! It prints the API's round-trip latencies (after a warm-up, measured the same way in both
//! runs), the reports' throughput, how many processes moved, and that every message posted was
//! handled. The last line is the ratio of the API's p99 without the rule to with it.
//!
//! ```text
//! cargo run --release -p tour --bin auto_group
//! cargo run --release -p tour --bin auto_group -- --seconds 5 --reports 6
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use clap::Parser;
use hdrhistogram::Histogram;
use whirl::prelude::*;
use whirl::AutoMove;

#[derive(Parser, Debug)]
#[command(about = "Automatic grouping: processes that block move to a group of their own")]
struct Args {
    /// Seconds of measured load per run (after the warm-up).
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Warm-up seconds per run, not measured (the rule acts during it).
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// API calls per second, sent on a fixed schedule (each call's latency runs from when it
    /// was due, so a stall counts for every call it delays).
    #[arg(long, default_value_t = 2000)]
    api_rate: u64,
    /// API processes in `web`.
    #[arg(long, default_value_t = 200)]
    apis: usize,
    /// Report processes, each blocking per message.
    #[arg(long, default_value_t = 4)]
    reports: usize,
    /// Milliseconds a report's handler blocks.
    #[arg(long, default_value_t = 40)]
    block_ms: u64,
    /// The share of the `web` group's two workers the reports' requests would hold (the
    /// feeder's rate follows from it).
    #[arg(long, default_value_t = 0.5)]
    report_load: f64,
}

/// An API call: a little work, then the answer.
#[derive(Message)]
struct Lookup(u64, ReplyTo<u64>);

/// A report request: the handler calls a blocking backend.
#[derive(Message)]
struct Render;

/// How many reports a `Report` has rendered.
#[derive(Message)]
struct Rendered(ReplyTo<u64>);

#[process(group = "web")]
struct Api {
    table: Vec<u64>,
}

#[process]
impl Api {
    #[handle]
    fn lookup(&mut self, Lookup(key, reply): Lookup) {
        let slot = (key as usize) % self.table.len();
        self.table[slot] = self.table[slot].wrapping_mul(31).wrapping_add(key);
        let _ = reply.send(self.table[slot]);
    }
}

#[process(group = "web")]
struct Report {
    block: Duration,
    rendered: u64,
}

#[process]
impl Report {
    #[handle]
    fn render(&mut self, _: Render) {
        // A synchronous driver: the worker thread is held for the whole call.
        thread::sleep(self.block);
        self.rendered += 1;
    }

    #[handle]
    fn rendered(&mut self, Rendered(reply): Rendered) {
        let _ = reply.send(self.rendered);
    }
}

/// What one run measured.
struct Outcome {
    api: Histogram<u64>,
    api_calls: u64,
    measured: Duration,
    rendered: u64,
    moved: u64,
    reports_in_blocking: usize,
    posted: u64,
    handled: u64,
    lost: i128,
}

fn run(args: &Args, auto: bool) -> Result<Outcome, Box<dyn std::error::Error>> {
    let rt = Runtime::new();
    let web = rt
        .group("web")
        .threads(2)
        .slow_turn_threshold(Some(Duration::from_millis(10)))
        .build()?;
    let blocking = rt.group("blocking").threads(args.reports.max(1)).build()?;
    if auto {
        web.auto_move(
            AutoMove::blocking_to(&blocking)
                .after_slow_turns(2)
                .within(Duration::from_secs(5)),
        )?;
    }
    let apis: Vec<Addr<Api>> = (0..args.apis)
        .map(|_| rt.spawn(Api { table: vec![1; 64] }))
        .collect();
    let reports: Vec<Addr<Report>> = (0..args.reports)
        .map(|_| {
            rt.spawn(Report {
                block: Duration::from_millis(args.block_ms),
                rendered: 0,
            })
        })
        .collect();

    // The report load: together, the reports' requests would hold `report_load` of the two
    // `web` workers (each report gets one every `period`).
    let stop = Arc::new(AtomicBool::new(false));
    let feeder = {
        let stop = Arc::clone(&stop);
        let reports = reports.clone();
        let period = Duration::from_secs_f64(
            args.block_ms as f64 / 1000.0 * args.reports as f64
                / (2.0 * args.report_load.max(0.01)),
        );
        thread::spawn(move || {
            let mut posted = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for report in &reports {
                    if report.current().post(Render).is_ok() {
                        posted += 1;
                    }
                }
                thread::sleep(period);
            }
            posted
        })
    };

    // The API load: calls due on a fixed schedule, one at a time; a call's latency runs from
    // when it was due, not from when it could be sent, so a stall is charged to every call it
    // held up (no coordinated omission).
    let mut api = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let interval = Duration::from_secs_f64(1.0 / args.api_rate.max(1) as f64);
    let start = Instant::now();
    let warmup_end = start + Duration::from_secs_f64(args.warmup);
    let end = warmup_end + Duration::from_secs_f64(args.seconds);
    let mut measured_from = None;
    let mut calls = 0u64;
    let mut key = 0u64;
    let mut due = start;
    while due < end {
        let now = Instant::now();
        if now < due {
            thread::sleep(due - now);
        }
        key = key.wrapping_add(0x9e37_79b9);
        let target = &apis[(key as usize) % apis.len()];
        target.request_with(|reply| Lookup(key, reply)).call()?;
        if due >= warmup_end {
            measured_from.get_or_insert(due);
            api.record(due.elapsed().as_micros().max(1) as u64)?;
            calls += 1;
        }
        due += interval;
    }
    let measured = measured_from.map_or(Duration::ZERO, |from| from.elapsed());
    stop.store(true, Ordering::Relaxed);
    let renders_posted = feeder.join().map_err(|_| "the feeder thread panicked")?;
    rt.block_until_idle();

    let mut rendered = 0;
    let mut reports_in_blocking = 0;
    for report in &reports {
        let here = report.current();
        rendered += here.request_with(Rendered).call()?;
        if here.group().name() == "blocking" {
            reports_in_blocking += 1;
        }
    }
    let stats = rt.stats();
    let (mut posted, mut handled, mut rejected, mut dead, mut moved_msgs, mut queued) =
        (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    for g in &stats.groups {
        posted += g.counts.posted;
        handled += g.counts.handled;
        rejected += g.counts.rejected;
        dead += g.counts.dead_lettered;
        moved_msgs += g.counts.moved;
        queued += g.queue_length;
    }
    // A message passed on by a move is counted `moved` where it left and `posted` where it
    // arrived: summed over groups, `posted - moved` is what senders posted.
    let lost = posted as i128 - (handled + rejected + dead + moved_msgs + queued) as i128;
    let moved = web.stats().auto_moved;
    if rendered != renders_posted {
        return Err(format!("{renders_posted} renders posted, {rendered} rendered").into());
    }
    rt.shutdown_graceful();
    Ok(Outcome {
        api,
        api_calls: calls,
        measured,
        rendered,
        moved,
        reports_in_blocking,
        posted: posted - moved_msgs,
        handled,
        lost,
    })
}

fn ms(micros: u64) -> f64 {
    micros as f64 / 1000.0
}

fn print(name: &str, o: &Outcome) {
    let secs = o.measured.as_secs_f64().max(1e-9);
    println!(
        "{name:<22} {:>9.0} {:>8.3} {:>8.3} {:>9.3} {:>9.3} {:>9.1} {:>6} {:>9}",
        o.api_calls as f64 / secs,
        ms(o.api.value_at_quantile(0.50)),
        ms(o.api.value_at_quantile(0.99)),
        ms(o.api.value_at_quantile(0.999)),
        ms(o.api.max()),
        o.rendered as f64 / secs,
        o.moved,
        o.reports_in_blocking,
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    println!(
        "web: 2 workers, {} API processes and {} reports blocking {} ms per message, \
         holding {:.0}% of the workers; {:.1} s warm-up + {:.1} s measured per run",
        args.apis,
        args.reports,
        args.block_ms,
        args.report_load * 100.0,
        args.warmup,
        args.seconds
    );
    let stay = run(&args, false)?;
    let auto = run(&args, true)?;
    println!();
    println!(
        "{:<22} {:>9} {:>8} {:>8} {:>9} {:>9} {:>9} {:>6} {:>9}",
        "run", "api/s", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "renders/s", "moved", "reports"
    );
    print("all in `web`", &stay);
    print("auto_move to blocking", &auto);
    println!();
    for (name, o) in [("all in `web`", &stay), ("auto_move", &auto)] {
        println!(
            "{name}: {} messages posted, {} handled, {} unaccounted",
            o.posted, o.handled, o.lost
        );
        if o.lost != 0 {
            return Err(format!("{name}: {} messages unaccounted for", o.lost).into());
        }
    }
    if auto.reports_in_blocking != args.reports {
        return Err(format!(
            "the rule moved {} of {} reports",
            auto.reports_in_blocking, args.reports
        )
        .into());
    }
    let p99 = |o: &Outcome| o.api.value_at_quantile(0.99).max(1) as f64;
    let p50 = |o: &Outcome| o.api.value_at_quantile(0.50).max(1) as f64;
    println!(
        "api p50 without/with automatic grouping: {:.1}x",
        p50(&stay) / p50(&auto)
    );
    println!(
        "api p99 without/with automatic grouping: {:.1}x",
        p99(&stay) / p99(&auto)
    );
    Ok(())
}
