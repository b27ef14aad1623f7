//! Three whirl nodes as three OS processes on loopback, with whirl-dist: a registry lookup,
//! remote asks, deposits flowing between the nodes, one node killed with SIGKILL and its Down
//! seen, and every deposit accounted for, summed over the nodes.
//!
//! ```text
//! cargo run --release -p whirl-dist-harness --bin cluster_check
//! ```
//!
//! A check more than an example (CI runs it): the example of the same API, in one screen, is
//! `examples/cluster` (`cargo run -p cluster`).
//!
//! What it does:
//!
//! 1. This process runs node **A** (a whirl `Runtime` and a `whirl_dist::Node` on 127.0.0.1)
//!    and starts two children of its own binary (`cluster_check --child b|c ...`) running nodes
//!    **B** and **C**. Every node listens on a loopback port; B connects to A, C to A and B, so
//!    the mesh is full (peers do not relay for each other). Each child prints `READY` once it
//!    sees the other two Up; A waits until it sees both.
//! 2. Each node runs an `Account` process (state `{ owner, balance, ops }`, serde-serializable:
//!    the state a migration moves), exported with `Deposit` (posted) and `Balance` (asked), and
//!    registered cluster-wide as `account-a`, `account-b`, `account-c`. A finds `account-c`
//!    with a registry lookup and times a few hundred remote asks.
//! 3. Deposits flow: A → `account-b`, A → `account-c`, C → `account-a`, each at a steady rate,
//!    each with a bounce handler, each counted at its sender. Every address is re-resolved by
//!    its registry name as the flow goes (`Target`), so a process that moves keeps receiving.
//!    A checkpoint pauses each flow and checks its account's balance equals the sum of the
//!    deposits accepted so far.
//! 4. The migration step (`migrate_step`): C's account moves to B with its state and its queue
//!    while A's deposits flow to it (`Node::migrate`); A's flow follows it by name and by the
//!    redirects its old pid answers with, and its balance at B is checked against the deposits.
//! 5. The flows into B stop and settle (balance = deposits accepted), B reports its counters,
//!    and B is killed with SIGKILL. A and C see B Down, A's monitor of `account-b` fires with
//!    `NoConnection`, the registry forgets B's names, and posts to B's account are refused at
//!    once (`Terminated`). The other flows run on through the kill.
//! 6. The remaining flows stop and settle, the surviving nodes report, and the deposits are
//!    summed over the nodes (B's part is its report from just before the kill): every deposit
//!    posted was refused at its sender or bounced back (`rejected`), handled by an account,
//!    dead-lettered, or in doubt (sent, unacknowledged, and its node died: 0 here, because the
//!    flows into B are drained before the kill). The last line is
//!    `accounting: posted=N handled=N rejected=N dead_lettered=N lost=0`.
//!
//! Exits 0 when every check holds and nothing is lost; otherwise non-zero, saying what broke.
//! Every wait has a deadline, and the children are killed on any error path (and shut down by
//! themselves when their stdin closes).
//!
//! The children talk to the parent in lines: commands on their stdin (`LOAD <name> <rate>`,
//! `CHECK <name>`, `STOP <name>`, `REPORT`, `MIGRATE <name> <node-id>`), answers on their
//! stdout (`READY`, `OK`, `CHECKED <json>`, `STOPPED <json>`, `REPORT <json>`, `MIGRATED`,
//! `ERR <text>`), and membership events as they happen (`EVENT UP|DOWN|REFUSED <node-id>`).
//!
//! The modules, by job: `settings` (the command line and the deadlines), `account` (the
//! service and how a node starts), `flow` (deposits posted by registry name, counted at their
//! senders), `accounting` (a node's report and the ledger), `child` (nodes B and C),
//! `child_proc` (the parent's handle on a child OS process), `demo` (node A, the first and last
//! steps), `steps` (the steps between), `util` (small helpers).

mod account;
mod accounting;
mod child;
mod child_proc;
mod demo;
mod flow;
mod settings;
mod steps;
mod util;

use std::process::ExitCode;
use std::thread;

use clap::Parser;

use child::child_main;
use demo::Demo;
use settings::{Args, WATCHDOG};
use steps::migrate_step;

fn main() -> ExitCode {
    let args = Args::parse();
    match args.child.clone() {
        Some(name) => match child_main(&name, &args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("cluster_check (node {name}): {e}");
                ExitCode::FAILURE
            }
        },
        None => {
            thread::spawn(|| {
                thread::sleep(WATCHDOG);
                eprintln!("cluster_check: FAILED: still running after {WATCHDOG:?}, giving up");
                std::process::exit(3);
            });
            match parent_main(&args) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("cluster_check: FAILED: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

fn parent_main(args: &Args) -> Result<bool, String> {
    let mut demo = Demo::start(args)?;
    demo.registry_and_asks()?;
    demo.start_load()?;
    thread::sleep(demo.phase);
    demo.checkpoint()?;
    migrate_step(&mut demo).map_err(|e| format!("migration: {e}"))?;
    thread::sleep(demo.phase);
    demo.kill_b()?;
    // The survivors' flows run on through the kill.
    thread::sleep(demo.phase);
    let started = demo.started;
    let (ledger, problems) = demo.finish()?;
    let lost = ledger.lost();
    println!(
        "identity over A, B and C: posted {} = handled {} + rejected {} (refused at the sender {} \
         + bounced {}) + dead-lettered {} + in doubt {} + lost {lost}",
        ledger.posted,
        ledger.handled,
        ledger.rejected(),
        ledger.refused,
        ledger.bounced,
        ledger.dead_lettered,
        ledger.in_doubt
    );
    for problem in &problems {
        println!("problem: {problem}");
    }
    println!("done in {:.1} s", started.elapsed().as_secs_f64());
    println!(
        "accounting: posted={} handled={} rejected={} dead_lettered={} lost={lost}",
        ledger.posted,
        ledger.handled,
        ledger.rejected(),
        ledger.dead_lettered
    );
    Ok(lost == 0 && problems.is_empty())
}
