//! `sim`: whole whirl clusters in one process, deterministically, under faults chosen by a
//! seed (`world.rs`); a violated invariant prints the seed, the trace that led to it, and the
//! command that replays it.
//!
//! ```text
//! cargo run --release -p whirl-dist-harness --bin sim -- --seeds 200     # seeds 1..=200
//! cargo run --release -p whirl-dist-harness --bin sim -- --seed 17       # one seed, its trace
//! ```

mod targets;
mod workloads;
mod world;

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;

use world::{Shape, World};

/// Simulates whirl clusters deterministically, one seed at a time.
#[derive(Parser, Debug)]
struct Args {
    /// Run this one seed and print its whole trace.
    #[arg(long)]
    seed: Option<u64>,
    /// Run seeds `first..first+seeds`.
    #[arg(long, default_value_t = 100)]
    seeds: u64,
    /// The first seed.
    #[arg(long, default_value_t = 1)]
    first: u64,
    /// Nodes per cluster.
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Steps before the cluster is run to rest.
    #[arg(long, default_value_t = 2_000)]
    steps: usize,
    /// Faults (partition, heal, kill) per 1,000 steps.
    #[arg(long, default_value_t = 4)]
    faults: u32,
    /// Whether the workload moves processes between nodes (`--migrations false`: posts and
    /// faults only).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    migrations: bool,
    /// Whether half the marks to a moved process are posted to the pid its registered name
    /// has at the time (the sender then uses both ways to it).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    by_name: bool,
    /// A seed that runs longer than this many seconds is reported as a hang (a deadlock in
    /// the code under test) and the run fails.
    #[arg(long, default_value_t = 60)]
    hang_secs: u64,
    /// Whether faults include partitions between two nodes (and heals); kills and pauses are
    /// injected either way.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    partitions: bool,
    /// With `--seed`: show this node's protocol state (0-based) in the trace each time it
    /// changes.
    #[arg(long)]
    watch: Option<usize>,
    /// Every how many seeds one is run twice to check that it replays (0: never).
    #[arg(long, default_value_t = 10)]
    replay_every: u64,
}

/// Fails the run if one seed takes too long: a simulation is one thread, so a seed that
/// never ends is a deadlock or a livelock in the code under test, and its seed replays it.
struct Watchdog {
    /// The seed running now, and a count of seeds started.
    seed: Arc<AtomicU64>,
    started: Arc<AtomicU64>,
}

impl Watchdog {
    fn start(limit: Duration, replay: impl Fn(u64) -> String + Send + 'static) -> Watchdog {
        let seed = Arc::new(AtomicU64::new(0));
        let started = Arc::new(AtomicU64::new(0));
        let (seen_seed, seen_started) = (Arc::clone(&seed), Arc::clone(&started));
        std::thread::spawn(move || {
            let mut last = (u64::MAX, Instant::now());
            loop {
                std::thread::sleep(Duration::from_millis(200));
                let now = seen_started.load(Ordering::Relaxed);
                if now != last.0 {
                    last = (now, Instant::now());
                } else if last.1.elapsed() > limit {
                    let seed = seen_seed.load(Ordering::Relaxed);
                    println!("HANG: seed {seed} ran longer than {limit:?} (a deadlock?)");
                    println!("replay: {}", replay(seed));
                    std::process::exit(1);
                }
            }
        });
        Watchdog { seed, started }
    }

    fn running(&self, seed: u64) {
        self.seed.store(seed, Ordering::Relaxed);
        self.started.fetch_add(1, Ordering::Relaxed);
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    // Processes killed through links are part of the workload: not reported one by one.
    whirl::failures::set_failure_hook(|_| {});
    if args.nodes < 2 {
        eprintln!("--nodes must be at least 2");
        return ExitCode::from(2);
    }
    let shape = Shape {
        nodes: args.nodes,
        steps: args.steps,
        faults: args.faults,
        migrations: args.migrations,
        by_name: args.by_name,
        watch: args.watch,
        partitions: args.partitions,
    };
    let (nodes, steps, faults, migrations, by_name, partitions) = (
        args.nodes,
        args.steps,
        args.faults,
        args.migrations,
        args.by_name,
        args.partitions,
    );
    let replay = move |seed: u64| {
        format!(
            "cargo run --release -p whirl-dist-harness --bin sim -- --seed {seed} --nodes {} --steps {} --faults {} --migrations {} --by-name {} --partitions {}",
            nodes, steps, faults, migrations, by_name, partitions
        )
    };
    if let Some(seed) = args.seed {
        let outcome = World::new(seed, shape, true).run();
        for line in &outcome.trace {
            println!("{line}");
        }
        println!(
            "seed {seed}: {} steps, {} posts ({} accepted), {} handled, {} deliveries, {} faults, trace {:016x}",
            outcome.steps,
            outcome.posts,
            outcome.accepted,
            outcome.handled,
            outcome.deliveries,
            outcome.faults,
            outcome.trace_hash
        );
        return match outcome.violation {
            Some(v) => {
                println!("VIOLATION at step {}: {}", v.step, v.what);
                ExitCode::FAILURE
            }
            None => ExitCode::SUCCESS,
        };
    }
    let watchdog = Watchdog::start(Duration::from_secs(args.hang_secs), replay);
    let start = Instant::now();
    let (mut steps, mut faults, mut posts, mut handled) = (0u64, 0u64, 0u64, 0u64);
    for seed in args.first..args.first + args.seeds {
        watchdog.running(seed);
        let outcome = World::new(seed, shape, false).run();
        if let Some(v) = &outcome.violation {
            let traced = World::new(seed, shape, true).run();
            let from = traced.trace.len().saturating_sub(60);
            for line in &traced.trace[from..] {
                println!("{line}");
            }
            println!("VIOLATION with seed {seed} at step {}: {}", v.step, v.what);
            println!("replay: {}", replay(seed));
            return ExitCode::FAILURE;
        }
        if args.replay_every > 0 && seed % args.replay_every == 0 {
            let again = World::new(seed, shape, false).run();
            if again.trace_hash != outcome.trace_hash {
                println!(
                    "NOT DETERMINISTIC: seed {seed} gave traces {:016x} and {:016x}",
                    outcome.trace_hash, again.trace_hash
                );
                println!("replay: {}", replay(seed));
                return ExitCode::FAILURE;
            }
        }
        steps += outcome.steps as u64;
        faults += outcome.faults;
        posts += outcome.posts;
        handled += outcome.handled;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{} seeds in {secs:.1} s ({:.1} seeds/s): {steps} steps, {posts} posts, {handled} handled, {faults} faults injected, no violation",
        args.seeds,
        args.seeds as f64 / secs
    );
    ExitCode::SUCCESS
}
