//! The Zenoh spike: measures the gates whirl-dist must pass before it is built on Zenoh.
//!
//! * **Gate 1, `kill -9`:** a child node (an OS process) is killed with SIGKILL; the parent
//!   must see it Down within lease + 1 s, in every trial. Gate 1b does the same with SIGSTOP:
//!   the child hangs with its socket open, so only the lease can detect it.
//! * **Gate 2, partition then heal:** a TCP proxy in the parent stands between the parent node
//!   and a child node. Partition: the proxy cuts the link (mode `drop`: it closes both sockets;
//!   mode `blackhole`: it keeps them open and passes no byte) and refuses new connections; both
//!   sides must see each other Down. Heal: the proxy forwards again; the child's Zenoh session
//!   reconnects under the same incarnation, and both sides must refuse it
//!   (`ResurrectionRefused`), never mark it Up again.
//! * **Gate 3, overload loses nothing:** a sink child runs a whirl runtime with one group of
//!   one thread behind `QueueLength::max(K)`, and one exported process whose handler spins a
//!   fixed time per message. The parent posts N messages to it (1,000,000 by default) paced at
//!   10x the sink's nominal capacity, with a bounce handler. Once everything has settled,
//!   summed over both nodes, every post must be accounted for:
//!   `posts = refused at the sender + bounced back + handled + dead-lettered + in doubt`,
//!   with `lost = 0` and `in doubt = 0`; the sink's runtime must count as rejected exactly
//!   what its node bounced, and the sink process must have seen each sender's posts in order.
//! * **Gate 4, chaos under traffic:** the parent posts to a sink child (gate 3's) paced at the
//!   sink's capacity (not overloaded), and after about a third of the posts the link is cut
//!   while the traffic flows. The parent keeps posting: once it has seen the sink Down, every
//!   post must be refused Terminated at once. Three modes, each its own row:
//!   - **partition** (`drop`, `blackhole`): the sink reaches the parent through gate 2's proxy,
//!     which cuts the link and refuses reconnections; both sides must see each other Down.
//!     The sink is still alive, so once its counters are at rest it reports them, and the
//!     accounting is exact, summed over both nodes: with `P` posts, `R` refused at the sender,
//!     `B` bounced and returned to the parent (before the cut), `H` handled and `D`
//!     dead-lettered by the sink's runtime, `Q` bounced by the sink and never returned (its
//!     node's `bounced` minus the parent's `returned`; the bounces the cut swallowed and any
//!     `bounce_overflow`), and `N = sent − sink.received` frames that never arrived:
//!     `lost = P − (R + B + H + D + Q + N) = 0`, and `N ≤ in_doubt` (what never arrived is
//!     part of what the parent counts in doubt; the rest of its in-doubt frames arrived and
//!     were delivered or bounced, but their acknowledgement was cut). Also, at the sink:
//!     `received = delivered + bounced`, `delivered = H + D + queued` with `queued = 0`, its
//!     runtime rejected exactly what its node bounced, and its process saw the posts in order.
//!   - **kill -9** (`kill`): the sink is killed with SIGKILL mid-stream. Its counters die with
//!     it, so the identity over both nodes cannot be closed. What is checked is the parent's
//!     own side, `P = R + B + A + U` with `U` in doubt and `A = sent − U − B` (acknowledged
//!     and not bounced), i.e. `lost at the parent = P − R − sent = 0` with the parent's
//!     counters agreeing with what its posts returned, `U ≤ sent` and `U ≤` the credit
//!     window; and against the sink's last `PROGRESS` line (printed every 10 ms):
//!     `handled ≤ received ≤ sent`, and no `OUT_OF_ORDER` line. What a kill -9 cannot tell:
//!     how many messages the sink handled after its last `PROGRESS` line (up to 10 ms of
//!     work, plus whatever was in its queue), and so how the `U` in-doubt messages split
//!     between handled, queued and never arrived; and `A` rests on the library's definition
//!     of in doubt (sent and unacknowledged at Down), since `DistCounts` has no count of
//!     acknowledged frames to check it against independently.
//!
//! ```text
//! dist_spike [--trials N] [--stop-trials N] [--partition-trials N] [--lease-ms MS]
//!            [--modes drop,blackhole]
//!            [--overload-posts N] [--work-us US] [--queue-max K] [--overload X]
//!            [--sink-rate MSGS_PER_S] [--window W]
//!            [--chaos-trials N] [--chaos-posts N] [--chaos-modes drop,blackhole,kill]
//! dist_spike --help
//! dist_spike --child --connect tcp/127.0.0.1:PORT --cluster NAME --lease-ms MS   (internal)
//! dist_spike --child-sink --connect tcp/127.0.0.1:PORT --cluster NAME --lease-ms MS
//!            --work-us US --queue-max K [--window W] [--chaos]                     (internal)
//! ```
//!
//! A count of 0 skips its gate (`--trials 0 --stop-trials 0 --partition-trials 0
//! --chaos-trials 0` runs gate 3 alone; `--overload-posts 0` skips it). Gate 3's flags:
//! `--overload-posts` (default 1,000,000), `--work-us` (the sink's work per message, default
//! 10 µs), `--queue-max` (K, default 1,000), `--overload` (the pacing factor, default 10),
//! `--sink-rate` (the capacity the pacing assumes, default 1,000,000 / work-us per second),
//! `--window` (both nodes' credit window, default whirl-dist's). Run it in release for the
//! full million. Gate 4 uses the same sink settings (`--work-us`, `--queue-max`, `--window`)
//! and paces at `--sink-rate`; its own flags: `--chaos-trials` (trials per mode, default 2),
//! `--chaos-posts` (posts per trial, default 60,000; the cut comes after about a third),
//! `--chaos-modes` (default `drop,blackhole,kill`).
//!
//! The child prints one line per fact on stdout (`READY <id>`, `EVENT UP|DOWN|REFUSED <id>`,
//! `BYE`) and shuts down when its stdin closes. The sink child prints `READY <node-hex>
//! <local-id>`, answers each `REPORT` line on its stdin with one `REPORT key=value...` line
//! (its runtime's and its node's counters, once they are at rest), each `TALLY` line with one
//! `TALLY handled=N out_of_order=N busy_us=N` line (its process's own count, asked of it
//! locally, not over the network), prints `OUT_OF_ORDER seq=N after=N` for the first posts
//! its process sees out of order, and shuts down when its stdin closes; with `--chaos` it
//! also prints its node's events (`EVENT UP|DOWN|REFUSED <id>`) and, every 10 ms, `PROGRESS
//! handled=N received=N` (its runtime's handled, then its node's received). Exit code: 0 if
//! every gate passed, 1 if one failed, 2 on a usage or setup error.

use std::process::ExitCode;
use std::time::Duration;

mod chaos;
mod child;
mod figures;
mod kill;
mod nodes;
mod overload;
mod partition;
mod proxy;
mod settings;
mod sink;
mod sink_proc;

use crate::chaos::gate4;
use crate::child::child_main;
use crate::kill::{gate1, Signal};
use crate::overload::gate3;
use crate::partition::gate2;
use crate::proxy::PartitionMode;
use crate::settings::{flag_number, flag_value, Chaos, Overload};
use crate::sink::sink_main;

/// What `--help` prints (the module doc has the details).
const USAGE: &str = "\
dist_spike [--trials N] [--stop-trials N] [--partition-trials N] [--lease-ms MS]
           [--modes drop,blackhole]
           [--overload-posts N] [--work-us US] [--queue-max K] [--overload X]
           [--sink-rate MSGS_PER_S] [--window W]
           [--chaos-trials N] [--chaos-posts N] [--chaos-modes drop,blackhole,kill]

gate 1/1b: SIGKILL / SIGSTOP of a child -> Down within lease + 1 s (--trials, default 100;
           --stop-trials, default 20)
gate 2:    partition through a TCP proxy (--modes), then heal -> Down on both sides, no
           resurrection (--partition-trials, default 10)
gate 3:    overload of a sink behind QueueLength::max(K): nothing lost over both nodes
           (--overload-posts, default 1,000,000; 0 skips)
gate 4:    chaos under traffic: partition (drop, blackhole) or kill -9 of the sink after about
           a third of the posts; every post accounted for (--chaos-trials per mode, default 2;
           --chaos-posts, default 60,000; --chaos-modes, default drop,blackhole,kill)

A count of 0 skips its gate. Exit code: 0 if every gate passed, 1 if one failed, 2 on a
usage or setup error.
";

fn main() -> ExitCode {
    // Zenoh's own logs, if RUST_LOG asks for them.
    zenoh::try_init_log_from_env();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let result = if args.iter().any(|a| a == "--child-sink") {
        sink_main(&args)
    } else if args.iter().any(|a| a == "--child") {
        child_main(&args)
    } else {
        parent_main(&args)
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("dist_spike: {message}");
            ExitCode::from(2)
        }
    }
}

fn parent_main(args: &[String]) -> Result<ExitCode, String> {
    let trials = flag_number(args, "--trials", 100)?;
    let stop_trials = flag_number(args, "--stop-trials", 20)?;
    let partition_trials = flag_number(args, "--partition-trials", 10)?;
    let lease = Duration::from_millis(flag_number(args, "--lease-ms", 1000)?);
    let modes: Vec<PartitionMode> = flag_value(args, "--modes")
        .unwrap_or("drop,blackhole")
        .split(',')
        .filter(|m| !m.is_empty())
        .map(|m| match m {
            "drop" => Ok(PartitionMode::Drop),
            "blackhole" => Ok(PartitionMode::Blackhole),
            other => Err(format!("unknown partition mode {other:?}")),
        })
        .collect::<Result<_, _>>()?;
    let overload = Overload::from_args(args)?;
    let chaos = Chaos::from_args(args)?;

    println!(
        "dist_spike: zenoh peer mode on 127.0.0.1, multicast and gossip scouting off, lease {} ms \
         (keep-alive every {} ms)",
        lease.as_millis(),
        lease.as_millis() / 4
    );
    let mut rows = Vec::new();
    if trials > 0 {
        rows.push(gate1(trials, lease, Signal::Kill)?);
    }
    if stop_trials > 0 {
        rows.push(gate1(stop_trials, lease, Signal::Stop)?);
    }
    for mode in modes {
        if partition_trials > 0 {
            rows.push(gate2(partition_trials, lease, mode)?);
        }
    }
    if overload.posts > 0 {
        rows.push(gate3(lease, &overload)?);
    }
    if chaos.trials > 0 {
        for &mode in &chaos.modes {
            rows.push(gate4(lease, &overload, &chaos, mode)?);
        }
    }

    println!();
    println!("== summary (lease {} ms) ==", lease.as_millis());
    println!("{:<52} {:>7} {:>7}  figures", "gate", "passed", "verdict");
    let mut all = true;
    for row in &rows {
        all &= row.passed == row.trials;
        println!(
            "{:<52} {:>3}/{:<3} {:>7}  {}",
            row.name,
            row.passed,
            row.trials,
            if row.passed == row.trials {
                "PASS"
            } else {
                "FAIL"
            },
            row.figures
        );
    }
    Ok(if all {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
