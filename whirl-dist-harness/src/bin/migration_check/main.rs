//! The promises of process migration (`whirl_dist::Node::migrate`), checked with three whirl
//! nodes as three OS processes on loopback over mutual TLS: S (where the account starts),
//! T (where it moves) and X (a third node). Each run starts a fresh set of three node
//! processes (children of this binary, `--child s|t|x`); this process only drives them.
//!
//! ```text
//! cargo run --release -p whirl-dist-harness --bin migration_check -- [--runs N]
//!     [--scenario order|crash|timeout|all] [--seed S]
//!     [--deposits N] [--rate N] [--hold-ms MS] [--lease-ms MS]
//! ```
//!
//! The account is a migratable process (`Node::accept_migrations` on every node, one kind
//! name) exported with `Deposit { from, seq }` (posted) and `Query` (asked). Its state keeps,
//! per sender, the next number expected, and counts deposits handled, out of order (not the
//! number expected), behind (below it) and repeated (handled before), so the counters travel
//! with the process. Each sender is a thread on a node posting its numbered deposits at a
//! steady rate, a `Rejected` one posted again before the next (never reordered). The
//! migration holds the account (its handler blocks for `--hold-ms`) and calls `migrate`
//! half-way through the hold, so deposits are queued and held when it moves.
//!
//! 1. **order** (`order.rs`): senders on S (to the pid, through a `RemoteAddr` on S itself)
//!    and on X (one to the pid, then by `whereis` once the name resolves elsewhere; one to the
//!    pid only); S → T with a 5 s limit. PASS iff for every sender nothing is out of order,
//!    behind or repeated, and handled = accepted − bounced.
//! 2. **crash** (`crash.rs`): senders on S and X as above (one on X), and S killed with
//!    SIGKILL: in even runs at a random moment from 20 ms before `migrate` returns to 200 ms
//!    after, in odd runs 0.3 to 1.5 ms after the hand-over, while the account is in flight (the
//!    seed is printed). X's sender is judged: lost = accepted − handled − bounced − in doubt
//!    (the rise of X's `DistCounts::in_doubt`); PASS iff lost ≤ 0. A run whose account died
//!    with S is printed as `NO ACCOUNT` and not judged.
//! 3. **timeout** (`timeout.rs`): the same senders, `migrate` with a limit shorter than a round
//!    trip (0, 1 µs, 200 µs, 1 ms by run). Every node reports the account copies it runs
//!    (`copies.rs`). PASS iff at most one restored copy handled deposits, the copies together
//!    handled each sender's accepted deposits once (total = accepted − bounced), and the name
//!    has one holder (`whereis_all` on X).
//!
//! Output: one line per run, `<scenario> run <i>: PASS|FAIL|NO ACCOUNT ... (<seconds>)` with
//! its figures, and last `migration_check: N runs, M failures` (runs not judged count as
//! runs, not failures). Exit code 0 only if every judged run passed. A run that cannot be
//! carried out (a child that does not start, an answer that does not come) is a failure,
//! with its reason. Every wait has a deadline; a child is killed on every error path (when its
//! handle drops), and shuts down by itself when its stdin closes. With `RUST_LOG` set, the
//! children say on stderr what they do.
//!
//! The children talk to the parent in lines: commands on their stdin (`SPAWN`, `SEND <id>
//! <pid> <count> <rate> follow|pid`, `SENDER <id>`, `HALT <id>`, `MIGRATE <node-id>
//! <timeout-µs> <hold-ms> <lead-ms>`, `QUERY <pid>`, `WHEREIS`, `COPIES`, `COUNTS`), answers on
//! their stdout (`READY <node-id>`, `SPAWNED <pid>`, `SENDING`, `SENDER <json>`, `HALTED
//! <json>`, `HOLDING`, `HELD` and `MIGRATION <json>`, `COUNTERS <json>`, `WHEREIS <json>`,
//! `COPIES <json>`, `COUNTS <json>`, `ERR <text>`), and membership events (`EVENT UP|DOWN
//! <node-id>`).
//!
//! The modules, by job: `settings` (the command line and the constants), `account` (the
//! account and its messages), `copies` (the copies a node runs), `sender` (a sender thread),
//! `child` (a node), `moving` (S's side of a migration), `child_proc` (the parent's handle on
//! a child), `cluster` (a run's three nodes), `steps` (what the scenarios share), `order`,
//! `crash` and `timeout` (the scenarios), `util` (small helpers).

mod account;
mod child;
mod child_proc;
mod cluster;
mod copies;
mod crash;
mod moving;
mod order;
mod sender;
mod settings;
mod steps;
mod timeout;
mod util;

use std::process::ExitCode;
use std::thread;
use std::time::Instant;

use clap::Parser;

use settings::{Args, Scenario, WATCHDOG};
use steps::{Outcome, Verdict};
use util::Rng;

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(label) = args.child.clone() {
        return match child::child_main(&label, &args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("migration_check (node {label}): {e}");
                ExitCode::FAILURE
            }
        };
    }
    thread::spawn(|| {
        thread::sleep(WATCHDOG);
        eprintln!("migration_check: FAILED: still running after {WATCHDOG:?}, giving up");
        std::process::exit(3);
    });
    match parent_main(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("migration_check: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

fn parent_main(args: &Args) -> Result<bool, String> {
    let seed = match args.seed {
        Some(seed) => seed,
        None => Rng::os_seed()?,
    };
    let mut rng = Rng::new(seed);
    let certs = std::env::temp_dir().join(format!(
        "whirl-migration-check-{}-{:08x}",
        std::process::id(),
        rng.next_u64() as u32
    ));
    whirl_dist_harness::make_certs(&certs, "migration-check-ca", &["S", "T", "X"])?;
    println!(
        "migration_check: {} run(s) of {:?}, seed {seed}, {} deposits per sender at {}/s, hold \
         {} ms",
        args.runs, args.scenario, args.deposits, args.rate, args.hold_ms
    );
    let scenarios: &[Scenario] = match args.scenario {
        Scenario::All => &[Scenario::Order, Scenario::Crash, Scenario::Timeout],
        Scenario::Order => &[Scenario::Order],
        Scenario::Crash => &[Scenario::Crash],
        Scenario::Timeout => &[Scenario::Timeout],
    };
    let (mut runs, mut failures) = (0u32, 0u32);
    for &scenario in scenarios {
        for run in 1..=args.runs {
            let began = Instant::now();
            let result = match scenario {
                Scenario::Order => order::run(args, &certs),
                Scenario::Crash => crash::run(args, &certs, &mut rng, run),
                Scenario::Timeout => timeout::run(args, &certs, run - 1),
                Scenario::All => Err("not a single scenario".to_owned()),
            };
            let outcome = result.unwrap_or_else(|e| Outcome {
                verdict: Verdict::Fail,
                line: format!("could not be carried out: {e}"),
            });
            let word = match outcome.verdict {
                Verdict::Pass => "PASS",
                Verdict::Fail => "FAIL",
                Verdict::NotJudged => "NO ACCOUNT",
            };
            let name = format!("{scenario:?}").to_lowercase();
            println!(
                "{name} run {run}: {word} {} ({:.1} s)",
                outcome.line,
                began.elapsed().as_secs_f64()
            );
            runs += 1;
            failures += u32::from(outcome.verdict == Verdict::Fail);
        }
    }
    if let Err(e) = std::fs::remove_dir_all(&certs) {
        eprintln!("migration_check: cannot remove {certs:?}: {e}");
    }
    println!("migration_check: {runs} runs, {failures} failures");
    Ok(failures == 0)
}
