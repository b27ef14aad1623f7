//! `sim`: whole whirl clusters in one process, deterministically, under faults chosen by a
//! seed (`world.rs`); a violated invariant prints the seed, the trace that led to it, and the
//! command that replays it.
//!
//! ```text
//! cargo run --release -p whirl-dist-harness --bin sim -- --seeds 200     # seeds 1..=200
//! cargo run --release -p whirl-dist-harness --bin sim -- --seed 17       # one seed, its trace
//! ```

mod world;

use std::process::ExitCode;
use std::time::Instant;

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
    /// Every how many seeds one is run twice to check that it replays (0: never).
    #[arg(long, default_value_t = 10)]
    replay_every: u64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.nodes < 2 {
        eprintln!("--nodes must be at least 2");
        return ExitCode::from(2);
    }
    let shape = Shape {
        nodes: args.nodes,
        steps: args.steps,
        faults: args.faults,
        migrations: args.migrations,
    };
    let replay = |seed: u64| {
        format!(
            "cargo run --release -p whirl-dist-harness --bin sim -- --seed {seed} --nodes {} --steps {} --faults {} --migrations {}",
            args.nodes, args.steps, args.faults, args.migrations
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
    let start = Instant::now();
    let (mut steps, mut faults, mut posts, mut handled) = (0u64, 0u64, 0u64, 0u64);
    for seed in args.first..args.first + args.seeds {
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
