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

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Child, ChildStdin, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use whirl::admission::QueueLength;
use whirl::prelude::{process, Message, Runtime};
use whirl_dist::{
    BounceReason, DistCounts, MemberState, Node, NodeConfig, NodeEvent, NodeId, Pid, Remote,
    RemotePostError, Request,
};

/// How long to wait for anything that should happen but is not being timed.
const SETUP_DEADLINE: Duration = Duration::from_secs(20);

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

// ---------------------------------------------------------------------------------------------
// Arguments

fn flag_value<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

fn flag_number(args: &[String], name: &str, default: u64) -> Result<u64, String> {
    match flag_value(args, name) {
        None => Ok(default),
        Some(text) => text
            .parse()
            .map_err(|_| format!("{name} needs a whole number, got {text:?}")),
    }
}

// ---------------------------------------------------------------------------------------------
// The child

fn child_main(args: &[String]) -> Result<ExitCode, String> {
    let connect = flag_value(args, "--connect").ok_or("--child needs --connect")?;
    let cluster = flag_value(args, "--cluster").ok_or("--child needs --cluster")?;
    let lease = Duration::from_millis(flag_number(args, "--lease-ms", 1000)?);
    let node = Node::start(
        NodeConfig::new(cluster)
            .listen(Vec::<String>::new())
            .connect([connect])
            .lease(lease)
            .reconnect_max(Duration::from_millis(500)),
    )
    .map_err(|e| format!("child cannot start its node: {e}"))?;
    let events = node.events();
    println!("READY {}", node.id());
    thread::spawn(move || {
        for event in events {
            match event {
                NodeEvent::Up(id) => println!("EVENT UP {id}"),
                NodeEvent::Down { node, .. } => println!("EVENT DOWN {node}"),
                NodeEvent::ResurrectionRefused(id) => println!("EVENT REFUSED {id}"),
                other => println!("EVENT OTHER {other:?}"),
            }
        }
    });
    // Idle until the parent closes our stdin (or dies).
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    let shutdown = node.shutdown();
    println!("BYE");
    match shutdown {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => Err(format!("child shutdown: {e}")),
    }
}

/// What a child printed.
#[derive(Clone, Debug, PartialEq, Eq)]
enum ChildLine {
    Ready(NodeId),
    Up(NodeId),
    Down(NodeId),
    Refused(NodeId),
    Bye,
    Other(String),
}

fn parse_child_line(line: &str) -> ChildLine {
    let words: Vec<&str> = line.split_whitespace().collect();
    let id = |text: &str| text.parse::<NodeId>().ok();
    match words.as_slice() {
        ["READY", x] => id(x).map_or_else(|| ChildLine::Other(line.into()), ChildLine::Ready),
        ["EVENT", "UP", x] => id(x).map_or_else(|| ChildLine::Other(line.into()), ChildLine::Up),
        ["EVENT", "DOWN", x] => {
            id(x).map_or_else(|| ChildLine::Other(line.into()), ChildLine::Down)
        }
        ["EVENT", "REFUSED", x] => {
            id(x).map_or_else(|| ChildLine::Other(line.into()), ChildLine::Refused)
        }
        ["BYE"] => ChildLine::Bye,
        _ => ChildLine::Other(line.into()),
    }
}

/// A child node process, its stdin (closing it asks the child to shut down) and its lines.
struct ChildProc {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<(Instant, ChildLine)>,
}

impl ChildProc {
    fn spawn(connect: &str, cluster: &str, lease: Duration) -> Result<ChildProc, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let mut child = Command::new(exe)
            .args(["--child", "--connect", connect, "--cluster", cluster])
            .args(["--lease-ms", &lease.as_millis().to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot spawn a child: {e}"))?;
        let stdout = child.stdout.take().ok_or("child has no stdout")?;
        let stdin = child.stdin.take();
        let (tx, lines) = crossbeam_channel::unbounded();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send((Instant::now(), parse_child_line(&line))).is_err() {
                    break;
                }
            }
        });
        Ok(ChildProc {
            child,
            stdin,
            lines,
        })
    }

    /// Waits for a line matching `want`; returns when it arrived.
    fn wait_line(&self, deadline: Instant, want: impl Fn(&ChildLine) -> bool) -> Option<Instant> {
        self.wait_line_or(deadline, want, |_| {})
    }

    /// Waits for a line matching `want`, passing the lines before it to `other`.
    fn wait_line_or(
        &self,
        deadline: Instant,
        want: impl Fn(&ChildLine) -> bool,
        mut other: impl FnMut(&ChildLine),
    ) -> Option<Instant> {
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            match self.lines.recv_timeout(left) {
                Ok((at, line)) if want(&line) => return Some(at),
                Ok((_, ChildLine::Other(text))) => eprintln!("  child said: {text}"),
                Ok((_, line)) => other(&line),
                Err(_) => return None,
            }
        }
    }

    fn ready(&self) -> Result<NodeId, String> {
        let deadline = Instant::now() + SETUP_DEADLINE;
        loop {
            let left = deadline
                .checked_duration_since(Instant::now())
                .ok_or("child did not print READY in time")?;
            match self.lines.recv_timeout(left) {
                Ok((_, ChildLine::Ready(id))) => return Ok(id),
                Ok((_, other)) => eprintln!("  child said before READY: {other:?}"),
                Err(_) => return Err("child did not print READY in time".into()),
            }
        }
    }

    /// Asks the child to shut down; kills it if it has not exited within `grace`.
    fn finish(mut self, grace: Duration) {
        drop(self.stdin.take());
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------------------
// The parent

fn free_loopback_port() -> Result<u16, String> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(|e| format!("cannot find a free port: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("cannot find a free port: {e}"))
}

fn parent_node(cluster: &str, lease: Duration) -> Result<(Node, u16), String> {
    let port = free_loopback_port()?;
    let node = Node::start(
        NodeConfig::new(cluster)
            .listen([format!("tcp/127.0.0.1:{port}")])
            .lease(lease),
    )
    .map_err(|e| format!("parent cannot start its node: {e:#?}"))?;
    Ok((node, port))
}

/// Waits for a parent event matching `want`; returns when it arrived. Other events are passed
/// to `other`.
fn wait_event(
    events: &Receiver<NodeEvent>,
    deadline: Instant,
    want: impl Fn(&NodeEvent) -> bool,
    mut other: impl FnMut(NodeEvent),
) -> Option<Instant> {
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        match events.recv_timeout(left) {
            Ok(event) if want(&event) => return Some(Instant::now()),
            Ok(event) => other(event),
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return None,
        }
    }
}

/// A random duration in `[0, limit)`, to the microsecond.
fn random_below(limit: Duration) -> Duration {
    let micros = u64::try_from(limit.as_micros()).unwrap_or(u64::MAX).max(1);
    Duration::from_micros(getrandom::u64().unwrap_or(0) % micros)
}

fn random_cluster() -> Result<String, String> {
    let id = NodeId::random().map_err(|e| format!("{e}"))?;
    Ok(format!("spike-{}", &id.to_string()[..12]))
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

struct Row {
    name: String,
    trials: u64,
    passed: u64,
    figures: String,
}

/// Nearest-rank percentile of sorted durations.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

fn describe(times: &mut [Duration]) -> String {
    times.sort();
    if times.is_empty() {
        return "no measurement".into();
    }
    format!(
        "min {} / p50 {} / p99 {} / max {} ms (n={})",
        ms(times[0]),
        ms(percentile(times, 50.0)),
        ms(percentile(times, 99.0)),
        ms(times[times.len() - 1]),
        times.len()
    )
}

// ---------------------------------------------------------------------------------------------
// Gate 1

#[derive(Clone, Copy, PartialEq, Eq)]
enum Signal {
    /// SIGKILL: the process dies, the kernel closes its socket.
    Kill,
    /// SIGSTOP: the process hangs with its socket open; only the lease can tell.
    Stop,
}

fn send_signal(child: &mut Child, signal: Signal) -> Result<(), String> {
    match signal {
        // std's `Child::kill` sends SIGKILL on Unix.
        Signal::Kill => child.kill().map_err(|e| format!("kill: {e}")),
        Signal::Stop => stop(child),
    }
}

/// Freezes the child with SIGSTOP through kill(1), which keeps this binary free of `unsafe`
/// FFI; the microseconds the extra process costs are far below the lease being measured.
fn stop(child: &Child) -> Result<(), String> {
    let status = std::process::Command::new("kill")
        .arg("-STOP")
        .arg(child.id().to_string())
        .status()
        .map_err(|e| format!("cannot run kill(1): {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("kill -STOP {} failed: {status}", child.id()))
    }
}

fn gate1(trials: u64, lease: Duration, signal: Signal) -> Result<Row, String> {
    let name = match signal {
        Signal::Kill => "gate 1: SIGKILL -> Down within lease+1s",
        Signal::Stop => "gate 1b: SIGSTOP (hung) -> Down within lease+1s",
    };
    println!();
    println!("== {name}: {trials} trials ==");
    let cluster = random_cluster()?;
    let (parent, port) = parent_node(&cluster, lease)?;
    let events = parent.events();
    let endpoint = format!("tcp/127.0.0.1:{port}");
    let bound = lease + Duration::from_secs(1);
    let mut times = Vec::new();
    let mut within = 0;
    let mut missed = 0;
    let started = Instant::now();
    for trial in 1..=trials {
        let mut child = ChildProc::spawn(&endpoint, &cluster, lease)?;
        let child_id = child.ready()?;
        let up = wait_event(
            &events,
            Instant::now() + SETUP_DEADLINE,
            |e| *e == NodeEvent::Up(child_id),
            |_| {},
        );
        if up.is_none() {
            child.finish(Duration::ZERO);
            return Err(format!(
                "trial {trial}: the parent never saw child {child_id} Up"
            ));
        }
        // At a random point of the keep-alive cycle: right after Up, the child has just sent
        // its token, which would always put the kill at the start of a lease.
        thread::sleep(random_below(lease));
        let t0 = Instant::now();
        send_signal(&mut child.child, signal)?;
        let down = wait_event(
            &events,
            t0 + bound + Duration::from_secs(10),
            |e| matches!(e, NodeEvent::Down { node, .. } if *node == child_id),
            |_| {},
        );
        match down {
            Some(at) => {
                let took = at.duration_since(t0);
                times.push(took);
                if took <= bound {
                    within += 1;
                    if signal == Signal::Kill && took > Duration::from_millis(50) {
                        println!("  trial {trial}: slow Down, after {} ms", ms(took));
                    }
                } else {
                    println!(
                        "  trial {trial}: Down after {} ms (over the bound)",
                        ms(took)
                    );
                }
            }
            None => {
                missed += 1;
                println!("  trial {trial}: no Down within lease + 11 s");
            }
        }
        // Reap (a stopped child is killed first).
        let _ = child.child.kill();
        let _ = child.child.wait();
        if trial % 10 == 0 {
            println!("  {trial}/{trials} trials done, {within} within bound");
        }
    }
    let figures = format!(
        "{}; within {} ms: {within}/{trials}{}",
        describe(&mut times),
        bound.as_millis(),
        if missed > 0 {
            format!(", {missed} never Down")
        } else {
            String::new()
        }
    );
    println!(
        "  lease {} ms, {trials} trials in {:.1} s: {figures}",
        lease.as_millis(),
        started.elapsed().as_secs_f64()
    );
    let _ = parent.shutdown();
    Ok(Row {
        name: name.into(),
        trials,
        passed: within,
        figures,
    })
}

// ---------------------------------------------------------------------------------------------
// Gate 2: the proxy

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum PartitionMode {
    /// Close both sockets of every proxied connection (peers see FIN at once).
    Drop,
    /// Keep the sockets open but pass no byte (peers must rely on the lease).
    Blackhole,
}

/// A TCP proxy, one thread per direction per connection, that can be partitioned and healed.
struct Proxy {
    port: u16,
    shared: Arc<ProxyShared>,
}

struct ProxyShared {
    upstream: u16,
    partitioned: AtomicBool,
    stopped: AtomicBool,
    connections: Mutex<Vec<(TcpStream, TcpStream)>>,
    /// Connections forwarded so far.
    forwarded: AtomicU64,
    /// Connections refused while partitioned.
    refused: AtomicU64,
}

impl Proxy {
    fn start(upstream: u16) -> Result<Proxy, String> {
        let listener =
            TcpListener::bind("127.0.0.1:0").map_err(|e| format!("proxy cannot bind: {e}"))?;
        let port = listener
            .local_addr()
            .map_err(|e| format!("proxy address: {e}"))?
            .port();
        let shared = Arc::new(ProxyShared {
            upstream,
            partitioned: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            connections: Mutex::new(Vec::new()),
            forwarded: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        });
        let accept_shared = Arc::clone(&shared);
        thread::spawn(move || {
            for stream in listener.incoming() {
                if accept_shared.stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(downstream) = stream else { continue };
                accept_shared.accept(downstream);
            }
        });
        Ok(Proxy { port, shared })
    }

    /// Cuts the link: no new connection is forwarded, and existing ones are closed (`Drop`) or
    /// silenced (`Blackhole`).
    fn partition(&self, mode: PartitionMode) {
        self.shared.partitioned.store(true, Ordering::SeqCst);
        if mode == PartitionMode::Drop {
            self.shared.close_all();
        }
    }

    /// Forwards again. Connections silenced by a blackhole are closed first: the peers have
    /// given up on them and will connect anew.
    fn heal(&self) {
        self.shared.close_all();
        self.shared.partitioned.store(false, Ordering::SeqCst);
    }

    fn stop(&self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        self.shared.close_all();
        // Wake the accept loop.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

impl ProxyShared {
    fn accept(self: &Arc<Self>, downstream: TcpStream) {
        if self.partitioned.load(Ordering::SeqCst) {
            self.refused.fetch_add(1, Ordering::SeqCst);
            let _ = downstream.shutdown(Shutdown::Both);
            return;
        }
        let Ok(upstream) = TcpStream::connect(("127.0.0.1", self.upstream)) else {
            let _ = downstream.shutdown(Shutdown::Both);
            return;
        };
        let _ = downstream.set_nodelay(true);
        let _ = upstream.set_nodelay(true);
        let (Ok(d2), Ok(u2), Ok(d3), Ok(u3)) = (
            downstream.try_clone(),
            upstream.try_clone(),
            downstream.try_clone(),
            upstream.try_clone(),
        ) else {
            return;
        };
        self.connections.lock().push((d3, u3));
        self.forwarded.fetch_add(1, Ordering::SeqCst);
        let a = Arc::clone(self);
        thread::spawn(move || a.pump(downstream, u2));
        let b = Arc::clone(self);
        thread::spawn(move || b.pump(upstream, d2));
    }

    /// Copies `from` to `to` while not partitioned; while partitioned, reads and discards.
    fn pump(&self, mut from: TcpStream, mut to: TcpStream) {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if self.partitioned.load(Ordering::SeqCst) {
                continue;
            }
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        // A close passes through only while the link is up: a partition hides it.
        if !self.partitioned.load(Ordering::SeqCst) {
            let _ = to.shutdown(Shutdown::Both);
        }
    }

    fn close_all(&self) {
        for (down, up) in self.connections.lock().drain(..) {
            let _ = down.shutdown(Shutdown::Both);
            let _ = up.shutdown(Shutdown::Both);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Gate 2: the trials

fn gate2(trials: u64, lease: Duration, mode: PartitionMode) -> Result<Row, String> {
    let name = match mode {
        PartitionMode::Drop => "gate 2 (drop): Down both sides, no resurrection",
        PartitionMode::Blackhole => "gate 2 (blackhole): Down both sides, no resurrection",
    };
    println!();
    println!("== {name}: {trials} trials ==");
    let cluster = random_cluster()?;
    let (parent, port) = parent_node(&cluster, lease)?;
    let parent_id = parent.id();
    let events = parent.events();
    let mut passed = 0;
    let mut parent_down_times = Vec::new();
    let mut child_down_times = Vec::new();
    let mut heal_to_refused = Vec::new();
    let started = Instant::now();
    for trial in 1..=trials {
        let proxy = Proxy::start(port)?;
        let child = ChildProc::spawn(&format!("tcp/127.0.0.1:{}", proxy.port), &cluster, lease)?;
        let outcome = partition_trial(&parent, &events, parent_id, &child, &proxy, lease, mode);
        proxy.stop();
        child.finish(Duration::from_secs(5));
        match outcome {
            Ok(t) => {
                passed += 1;
                parent_down_times.push(t.parent_down);
                child_down_times.push(t.child_down);
                heal_to_refused.push(t.refused_after_heal);
                println!(
                    "  trial {trial}: PASS  Down seen by parent after {} ms, by child after {} ms; \
                     reconnected and refused on both sides {} ms after heal \
                     (proxy: {} connections forwarded, {} refused while partitioned)",
                    ms(t.parent_down),
                    ms(t.child_down),
                    ms(t.refused_after_heal),
                    t.forwarded,
                    t.refused
                );
            }
            Err(why) => println!("  trial {trial}: FAIL  {why}"),
        }
    }
    let figures = format!(
        "parent Down: {}; child Down: {}; heal->both refused: {}",
        describe(&mut parent_down_times),
        describe(&mut child_down_times),
        describe(&mut heal_to_refused)
    );
    println!(
        "  {trials} trials in {:.1} s: {passed} passed; {figures}",
        started.elapsed().as_secs_f64()
    );
    let _ = parent.shutdown();
    Ok(Row {
        name: name.into(),
        trials,
        passed,
        figures,
    })
}

struct TrialTimes {
    parent_down: Duration,
    child_down: Duration,
    refused_after_heal: Duration,
    forwarded: u64,
    refused: u64,
}

fn partition_trial(
    parent: &Node,
    events: &Receiver<NodeEvent>,
    parent_id: NodeId,
    child: &ChildProc,
    proxy: &Proxy,
    lease: Duration,
    mode: PartitionMode,
) -> Result<TrialTimes, String> {
    let child_id = child.ready()?;
    let setup = Instant::now() + SETUP_DEADLINE;
    // Both sides see each other Up.
    wait_event(events, setup, |e| *e == NodeEvent::Up(child_id), |_| {})
        .ok_or("parent never saw the child Up")?;
    child
        .wait_line(setup, |l| *l == ChildLine::Up(parent_id))
        .ok_or("child never saw the parent Up")?;

    // Partition (at a random point of the keep-alive cycle), and hold it until both sides have
    // seen Down, then one more lease.
    thread::sleep(random_below(lease));
    let mut ups_again = 0;
    let mut child_ups_early = 0;
    let cut = Instant::now();
    proxy.partition(mode);
    let detect = cut + lease * 3 + Duration::from_secs(10);
    let parent_down = wait_event(
        events,
        detect,
        |e| matches!(e, NodeEvent::Down { node, .. } if *node == child_id),
        |e| {
            if e == NodeEvent::Up(child_id) {
                ups_again += 1;
            }
        },
    )
    .ok_or_else(|| {
        format!(
            "parent did not see the child Down within {} ms of the partition",
            detect.duration_since(cut).as_millis()
        )
    })?
    .duration_since(cut);
    let child_down = child
        .wait_line_or(
            detect,
            |l| *l == ChildLine::Down(parent_id),
            |l| {
                if *l == ChildLine::Up(parent_id) {
                    child_ups_early += 1;
                }
            },
        )
        .ok_or_else(|| {
            format!(
                "child did not report the parent Down within {} ms of the partition",
                detect.duration_since(cut).as_millis()
            )
        })?
        .duration_since(cut);
    thread::sleep(lease);

    // Heal; the child's session reconnects to the proxy with the same incarnation.
    let healed = Instant::now();
    proxy.heal();
    let refuse_deadline = healed + SETUP_DEADLINE;
    let parent_refused = wait_event(
        events,
        refuse_deadline,
        |e| *e == NodeEvent::ResurrectionRefused(child_id),
        |e| {
            if e == NodeEvent::Up(child_id) {
                ups_again += 1;
            }
        },
    );
    let mut child_ups_again = child_ups_early;
    let child_refused = child.wait_line_or(
        refuse_deadline,
        |l| *l == ChildLine::Refused(parent_id),
        |l| {
            if *l == ChildLine::Up(parent_id) {
                child_ups_again += 1;
            }
        },
    );
    let forwarded = proxy.shared.forwarded.load(Ordering::SeqCst);
    let refused = proxy.shared.refused.load(Ordering::SeqCst);
    if ups_again > 0 {
        return Err(format!(
            "the parent marked the child Up again {ups_again} times"
        ));
    }
    if child_ups_again > 0 {
        return Err(format!(
            "the child marked the parent Up again {child_ups_again} times"
        ));
    }
    if parent.state(child_id) != Some(MemberState::Quarantined) {
        return Err(format!(
            "the child is {:?} at the parent, not quarantined",
            parent.state(child_id)
        ));
    }
    match (parent_refused, child_refused) {
        (Some(p), Some(c)) => Ok(TrialTimes {
            parent_down,
            child_down,
            refused_after_heal: p.max(c).duration_since(healed),
            forwarded,
            refused,
        }),
        (p, c) => Err(format!(
            "after heal (within {} s): parent refused the child: {}, child refused the parent: {} \
             (proxy: {forwarded} connections forwarded in all, {refused} refused while partitioned{})",
            SETUP_DEADLINE.as_secs(),
            p.is_some(),
            c.is_some(),
            if forwarded < 2 {
                "; the child never reconnected"
            } else {
                ""
            }
        )),
    }
}

// ---------------------------------------------------------------------------------------------
// Gate 3: overload loses nothing

/// How long the sink and the parent wait for everything sent to settle after the last post.
const SETTLE_DEADLINE: Duration = Duration::from_secs(60);

/// How long the parent waits for more bounces once the sink has taken every frame sent.
const STUCK_AFTER: Duration = Duration::from_secs(3);

/// Posts between two looks at the pacing schedule.
const PACE_BATCH: u64 = 1_000;

/// Gate 3's settings.
struct Overload {
    /// Messages to post (0 skips the gate).
    posts: u64,
    /// The sink's work per message (a spin).
    work: Duration,
    /// The sink group's `QueueLength` threshold.
    queue_max: u64,
    /// How many times the sink's capacity the parent posts at.
    factor: u64,
    /// The sink's capacity the pacing assumes, in messages per second.
    capacity: u64,
    /// Both nodes' credit window, if not whirl-dist's default.
    window: Option<usize>,
}

impl Overload {
    fn from_args(args: &[String]) -> Result<Overload, String> {
        let work_us = flag_number(args, "--work-us", 10)?;
        Ok(Overload {
            posts: flag_number(args, "--overload-posts", 1_000_000)?,
            work: Duration::from_micros(work_us),
            queue_max: flag_number(args, "--queue-max", 1_000)?,
            factor: flag_number(args, "--overload", 10)?.max(1),
            capacity: flag_number(args, "--sink-rate", 1_000_000 / work_us.max(1))?.max(1),
            window: flag_window(args)?,
        })
    }
}

fn flag_window(args: &[String]) -> Result<Option<usize>, String> {
    flag_value(args, "--window")
        .map(|text| {
            text.parse::<usize>()
                .map_err(|_| format!("--window needs a whole number, got {text:?}"))
        })
        .transpose()
}

/// What gate 3 posts.
#[derive(Message, Serialize, Deserialize, Debug)]
struct Load {
    seq: u64,
}

impl Remote for Load {
    const TAG: &'static str = "dist_spike.Load/1";
}

/// Asks the sink what it counted itself: (handled, out of order, microseconds from the first
/// message handled to the end of the last).
#[derive(Message, Serialize, Deserialize, Debug)]
struct Tally;

impl Remote for Tally {
    const TAG: &'static str = "dist_spike.Tally/1";
}

impl Request for Tally {
    type Reply = (u64, u64, u64);
}

/// The sink's process: spins `work` per message, counts, and checks the sender's order.
#[process]
struct Sink {
    work: Duration,
    handled: u64,
    out_of_order: u64,
    last_seq: Option<u64>,
    first: Option<Instant>,
    last: Option<Instant>,
}

#[process]
impl Sink {
    #[handle]
    fn load(&mut self, Load { seq }: Load) {
        let started = Instant::now();
        self.first.get_or_insert(started);
        let until = started + self.work;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
        if let Some(last) = self.last_seq.filter(|&last| seq <= last) {
            self.out_of_order += 1;
            // Said at once (gate 4 reads it even from a sink killed later); the first few.
            if self.out_of_order <= OUT_OF_ORDER_LINES {
                println!("OUT_OF_ORDER seq={seq} after={last}");
            }
        }
        self.last_seq = Some(seq);
        self.handled += 1;
        self.last = Some(Instant::now());
    }

    #[handle]
    fn tally(&mut self, _: Tally) -> (u64, u64, u64) {
        let busy = match (self.first, self.last) {
            (Some(first), Some(last)) => {
                u64::try_from(last.duration_since(first).as_micros()).unwrap_or(u64::MAX)
            }
            _ => 0,
        };
        (self.handled, self.out_of_order, busy)
    }
}

fn sink_main(args: &[String]) -> Result<ExitCode, String> {
    let connect = flag_value(args, "--connect").ok_or("--child-sink needs --connect")?;
    let cluster = flag_value(args, "--cluster").ok_or("--child-sink needs --cluster")?;
    let lease = Duration::from_millis(flag_number(args, "--lease-ms", 1000)?);
    let work = Duration::from_micros(flag_number(args, "--work-us", 10)?);
    let queue_max = flag_number(args, "--queue-max", 1_000)?;
    let chaos = args.iter().any(|a| a == "--chaos");
    let runtime = Runtime::builder().threads(1).build();
    let group = runtime
        .group("sink")
        .threads(1)
        .predicate(QueueLength::max(queue_max))
        .build()
        .map_err(|e| format!("sink cannot build its group: {e}"))?;
    let sink = runtime.spawn_in(
        &group,
        Sink {
            work,
            handled: 0,
            out_of_order: 0,
            last_seq: None,
            first: None,
            last: None,
        },
    );
    let mut config = NodeConfig::new(cluster)
        .listen(Vec::<String>::new())
        .connect([connect])
        .lease(lease)
        .reconnect_max(Duration::from_millis(500));
    if let Some(window) = flag_window(args)? {
        config = config.window(window);
    }
    let node = Node::start(config).map_err(|e| format!("sink cannot start its node: {e}"))?;
    let pid = node
        .export(&sink)
        .accept::<Load>()
        .answer::<Tally>()
        .build()
        .map_err(|e| format!("sink cannot export its process: {e}"))?;
    // READY only once the parent is Up here: its mailbox subscriber (declared before its
    // token) is then known, so the first acknowledgements and bounces have a route.
    let events = node.events();
    wait_event(
        &events,
        Instant::now() + SETUP_DEADLINE,
        |e| matches!(e, NodeEvent::Up(_)),
        |_| {},
    )
    .ok_or("the sink never saw the parent Up")?;
    if chaos {
        thread::spawn(move || {
            for event in events {
                match event {
                    NodeEvent::Up(id) => println!("EVENT UP {id}"),
                    NodeEvent::Down { node, .. } => println!("EVENT DOWN {node}"),
                    NodeEvent::ResurrectionRefused(id) => println!("EVENT REFUSED {id}"),
                    other => println!("EVENT OTHER {other:?}"),
                }
            }
        });
    } else {
        drop(events);
    }
    println!("READY {} {}", pid.node(), pid.local());
    let stop = AtomicBool::new(false);
    thread::scope(|scope| {
        if chaos {
            // The runtime's count first, then the node's: `handled <= received` in every line.
            // Progress stops at the first `REPORT`: a line read after it could count the
            // `TALLY` ask that follows it, and the parent compares the last line with the
            // report. A reading taken before the stop and printed after it is still older
            // than the report.
            scope.spawn(|| loop {
                let handled = runtime.counts().handled;
                let received = node.counts().received;
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                println!("PROGRESS handled={handled} received={received}");
                thread::sleep(PROGRESS_EVERY);
            });
        }
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            match line.trim() {
                "REPORT" => {
                    stop.store(true, Ordering::SeqCst);
                    println!("{}", sink_report(&node, &runtime));
                }
                // Asked of the process here, not over the network (the link may be cut); the
                // ask is counted by the runtime, so after the last REPORT.
                "TALLY" => match sink.call_timeout(Tally, Duration::from_secs(5)) {
                    Ok((handled, out_of_order, busy_us)) => println!(
                        "TALLY handled={handled} out_of_order={out_of_order} busy_us={busy_us}"
                    ),
                    Err(e) => println!("TALLY failed: {e:?}"),
                },
                _ => {}
            }
        }
        stop.store(true, Ordering::SeqCst);
    });
    let shutdown = node.shutdown();
    let _report = runtime.shutdown_timeout(Duration::from_secs(5));
    println!("BYE");
    match shutdown {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => Err(format!("sink shutdown: {e}")),
    }
}

/// One `REPORT` line: the runtime's and the node's counters, read once they are at rest (the
/// node's counters unchanged around a reading of the runtime's, the runtime quiescent, every
/// frame received delivered or bounced), or after 5 s with `settled=0`.
fn sink_report(node: &Node, runtime: &Runtime) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let before = node.counts();
        let rt = runtime.counts();
        let dist = node.counts();
        let settled =
            before == dist && rt.is_quiescent() && dist.received == dist.delivered + dist.bounced;
        if settled || Instant::now() >= deadline {
            return format!(
                "REPORT settled={} posted={} handled={} rejected={} dead_lettered={} queued={} \
                 received={} delivered={} bounced={} malformed={} from_quarantined={} \
                 from_unknown={} control_overflow={} bounce_overflow={}",
                u8::from(settled),
                rt.posted,
                rt.handled,
                rt.rejected,
                rt.dead_lettered,
                rt.queued(),
                dist.received,
                dist.delivered,
                dist.bounced,
                dist.malformed,
                dist.from_quarantined,
                dist.from_unknown,
                dist.control_overflow,
                dist.bounce_overflow
            );
        }
        thread::sleep(Duration::from_millis(2));
    }
}

/// What the sink reported.
struct SinkReport {
    settled: bool,
    posted: u64,
    handled: u64,
    rejected: u64,
    dead_lettered: u64,
    queued: u64,
    received: u64,
    delivered: u64,
    bounced: u64,
    malformed: u64,
    from_quarantined: u64,
    /// Frames from a node that was not Up (here: the parent's, after the sink saw it Down).
    from_unknown: u64,
    control_overflow: u64,
    /// Bounces the sink could not send back (its control lane was full): dead letters there.
    bounce_overflow: u64,
}

/// The `key=value` fields of a line whose first word is `word`; `get` reads one.
struct Fields<'a> {
    line: &'a str,
    fields: std::collections::HashMap<&'a str, u64>,
}

impl<'a> Fields<'a> {
    fn parse(line: &'a str, word: &str) -> Result<Fields<'a>, String> {
        let mut fields = std::collections::HashMap::new();
        let mut words = line.split_whitespace();
        if words.next() != Some(word) {
            return Err(format!("not a {word} line: {line:?}"));
        }
        for field in words {
            let (key, value) = field
                .split_once('=')
                .ok_or_else(|| format!("malformed field {field:?} in {line:?}"))?;
            let value: u64 = value
                .parse()
                .map_err(|_| format!("malformed field {field:?} in {line:?}"))?;
            fields.insert(key, value);
        }
        Ok(Fields { line, fields })
    }

    fn get(&self, key: &str) -> Result<u64, String> {
        self.fields
            .get(key)
            .copied()
            .ok_or_else(|| format!("the sink's line lacks {key}: {:?}", self.line))
    }
}

impl SinkReport {
    fn parse(line: &str) -> Result<SinkReport, String> {
        let fields = Fields::parse(line, "REPORT")?;
        let get = |key: &str| fields.get(key);
        Ok(SinkReport {
            settled: get("settled")? == 1,
            posted: get("posted")?,
            handled: get("handled")?,
            rejected: get("rejected")?,
            dead_lettered: get("dead_lettered")?,
            queued: get("queued")?,
            received: get("received")?,
            delivered: get("delivered")?,
            bounced: get("bounced")?,
            malformed: get("malformed")?,
            from_quarantined: get("from_quarantined")?,
            from_unknown: get("from_unknown")?,
            control_overflow: get("control_overflow")?,
            bounce_overflow: get("bounce_overflow")?,
        })
    }
}

/// The sink's last `PROGRESS` line (gate 4), how many it printed, and how many
/// `OUT_OF_ORDER` lines (the sink prints the first [`OUT_OF_ORDER_LINES`]).
#[derive(Clone, Copy, Default, Debug)]
struct Progress {
    lines: u64,
    handled: u64,
    received: u64,
    out_of_order: u64,
}

impl Progress {
    /// Counts `line` in, if it is a well-formed `PROGRESS` line.
    fn update(&mut self, line: &str) -> Result<(), String> {
        let fields = Fields::parse(line, "PROGRESS")?;
        self.lines += 1;
        self.handled = fields.get("handled")?;
        self.received = fields.get("received")?;
        Ok(())
    }
}

/// How many `OUT_OF_ORDER` lines the sink prints at most.
const OUT_OF_ORDER_LINES: u64 = 10;

/// The sink child process: its stdin (a `REPORT` line asks for a report, closing it asks the
/// child to shut down), its stdout lines with when they were read, and its last `PROGRESS`
/// line (those are not passed on as lines).
struct SinkProc {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<(Instant, String)>,
    progress: Arc<Mutex<Progress>>,
}

impl SinkProc {
    fn spawn(
        connect: &str,
        cluster: &str,
        lease: Duration,
        overload: &Overload,
        chaos: bool,
    ) -> Result<SinkProc, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let mut command = Command::new(exe);
        command
            .args(["--child-sink", "--connect", connect, "--cluster", cluster])
            .args(["--lease-ms", &lease.as_millis().to_string()])
            .args(["--work-us", &overload.work.as_micros().to_string()])
            .args(["--queue-max", &overload.queue_max.to_string()]);
        if let Some(window) = overload.window {
            command.args(["--window", &window.to_string()]);
        }
        if chaos {
            command.arg("--chaos");
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot spawn the sink: {e}"))?;
        let stdout = child.stdout.take().ok_or("the sink has no stdout")?;
        let stdin = child.stdin.take();
        let (tx, lines) = crossbeam_channel::unbounded();
        let progress = Arc::new(Mutex::new(Progress::default()));
        let last = Arc::clone(&progress);
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.starts_with("PROGRESS ") {
                    if let Err(why) = last.lock().update(&line) {
                        eprintln!("  {why}");
                    }
                    continue;
                }
                if line.starts_with("OUT_OF_ORDER ") {
                    last.lock().out_of_order += 1;
                    eprintln!("  sink said: {line}");
                    continue;
                }
                if tx.send((Instant::now(), line)).is_err() {
                    break;
                }
            }
        });
        Ok(SinkProc {
            child,
            stdin,
            lines,
            progress,
        })
    }

    /// The next line whose first word is `word`; the lines before it are echoed.
    fn next_line(&self, deadline: Instant, word: &str) -> Result<String, String> {
        self.next_line_at(deadline, word).map(|(_, line)| line)
    }

    /// The next line whose first word is `word`, and when it was read; the lines before it
    /// are echoed.
    fn next_line_at(&self, deadline: Instant, word: &str) -> Result<(Instant, String), String> {
        loop {
            let left = deadline
                .checked_duration_since(Instant::now())
                .ok_or_else(|| format!("the sink printed no {word} line in time"))?;
            match self.lines.recv_timeout(left) {
                Ok((at, line)) if line.split_whitespace().next() == Some(word) => {
                    return Ok((at, line))
                }
                Ok((_, line)) => eprintln!("  sink said: {line}"),
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!("the sink printed no {word} line in time"))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!("the sink exited before printing a {word} line"))
                }
            }
        }
    }

    /// The pid of the sink's process, from its `READY` line.
    fn ready(&self) -> Result<Pid, String> {
        let line = self.next_line(Instant::now() + SETUP_DEADLINE, "READY")?;
        match line.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["READY", node, local] => {
                let node: NodeId = node
                    .parse()
                    .map_err(|e| format!("malformed node id in {line:?}: {e}"))?;
                let local: u64 = local
                    .parse()
                    .map_err(|_| format!("malformed process id in {line:?}"))?;
                Ok(Pid::new(node, local))
            }
            _ => Err(format!("malformed READY line {line:?}")),
        }
    }

    fn report(&mut self, deadline: Instant) -> Result<SinkReport, String> {
        let stdin = self.stdin.as_mut().ok_or("the sink's stdin is closed")?;
        stdin
            .write_all(b"REPORT\n")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("cannot ask the sink for a report: {e}"))?;
        SinkReport::parse(&self.next_line(deadline, "REPORT")?)
    }

    /// The sink process's own count, asked of it locally: (handled, out of order, µs busy).
    fn tally(&mut self, deadline: Instant) -> Result<(u64, u64, u64), String> {
        let stdin = self.stdin.as_mut().ok_or("the sink's stdin is closed")?;
        stdin
            .write_all(b"TALLY\n")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("cannot ask the sink for its tally: {e}"))?;
        let line = self.next_line(deadline, "TALLY")?;
        let fields = Fields::parse(&line, "TALLY")?;
        Ok((
            fields.get("handled")?,
            fields.get("out_of_order")?,
            fields.get("busy_us")?,
        ))
    }

    /// Reads the sink's stdout to its end (the sink has exited), echoing what it said;
    /// `false` if the end did not come by `deadline`.
    fn drain(&self, deadline: Instant) -> bool {
        loop {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return false;
            };
            match self.lines.recv_timeout(left) {
                Ok((_, line)) => eprintln!("  sink said: {line}"),
                Err(RecvTimeoutError::Timeout) => return false,
                Err(RecvTimeoutError::Disconnected) => return true,
            }
        }
    }

    /// The last `PROGRESS` line read so far.
    fn progress(&self) -> Progress {
        *self.progress.lock()
    }

    /// Asks the sink to shut down; kills it if it has not exited within `grace`.
    fn finish(mut self, grace: Duration) {
        drop(self.stdin.take());
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Bounces that came back to the parent, by reason.
#[derive(Default)]
struct Bounces {
    total: AtomicU64,
    by_reason: Mutex<std::collections::HashMap<BounceReason, u64>>,
}

impl Bounces {
    fn record(&self, reason: BounceReason) {
        *self.by_reason.lock().entry(reason).or_default() += 1;
        self.total.fetch_add(1, Ordering::SeqCst);
    }

    fn total(&self) -> u64 {
        self.total.load(Ordering::SeqCst)
    }

    /// Bounces for any reason but `Rejected`.
    fn not_rejected(&self) -> u64 {
        self.by_reason
            .lock()
            .iter()
            .filter(|(reason, _)| **reason != BounceReason::Rejected)
            .map(|(_, n)| n)
            .sum()
    }
}

fn rate(count: u64, over: Duration) -> f64 {
    match over.is_zero() {
        true => 0.0,
        false => count as f64 / over.as_secs_f64(),
    }
}

fn gate3(lease: Duration, overload: &Overload) -> Result<Row, String> {
    let name = "gate 3 (overload): nothing lost over both nodes";
    println!();
    println!(
        "== gate 3 (overload): {} posts at {}x the sink's capacity ({} µs of work per message, \
         QueueLength::max({})) ==",
        overload.posts,
        overload.factor,
        overload.work.as_micros(),
        overload.queue_max
    );
    let cluster = random_cluster()?;
    let port = free_loopback_port()?;
    let mut config = NodeConfig::new(&cluster)
        .listen([format!("tcp/127.0.0.1:{port}")])
        .lease(lease);
    if let Some(window) = overload.window {
        config = config.window(window);
    }
    let parent =
        Node::start(config).map_err(|e| format!("parent cannot start its node: {e:#?}"))?;
    let events = parent.events();
    let mut sink = SinkProc::spawn(
        &format!("tcp/127.0.0.1:{port}"),
        &cluster,
        lease,
        overload,
        false,
    )?;
    let outcome = overload_run(&parent, &events, &mut sink, overload);
    sink.finish(Duration::from_secs(10));
    let _ = parent.shutdown();
    let (passed, figures) = match outcome {
        Ok(outcome) => outcome,
        Err(why) => {
            println!("gate 3 (overload): FAIL  {why}");
            (false, why)
        }
    };
    Ok(Row {
        name: name.into(),
        trials: 1,
        passed: u64::from(passed),
        figures,
    })
}

/// Posts, lets everything settle, and checks the accounting; returns the verdict and the
/// figures for the summary.
fn overload_run(
    parent: &Node,
    events: &Receiver<NodeEvent>,
    sink: &mut SinkProc,
    overload: &Overload,
) -> Result<(bool, String), String> {
    let pid = sink.ready()?;
    wait_event(
        events,
        Instant::now() + SETUP_DEADLINE,
        |e| *e == NodeEvent::Up(pid.node()),
        |_| {},
    )
    .ok_or("the parent never saw the sink Up")?;

    let bounces = Arc::new(Bounces::default());
    let seen = Arc::clone(&bounces);
    let loads = parent
        .remote::<Load>(pid)
        .on_bounce(move |u| seen.record(u.reason));
    let target = overload.capacity.saturating_mul(overload.factor) as f64;
    let (mut sent, mut rejected, mut terminated, mut other) = (0u64, 0u64, 0u64, 0u64);
    let started = Instant::now();
    for seq in 0..overload.posts {
        if seq % PACE_BATCH == 0 {
            let due = started + Duration::from_secs_f64(seq as f64 / target);
            if let Some(ahead) = due.checked_duration_since(Instant::now()) {
                thread::sleep(ahead);
            }
        }
        match loads.post(Load { seq }) {
            Ok(()) => sent += 1,
            Err(RemotePostError::Rejected(_)) => rejected += 1,
            Err(RemotePostError::Terminated(_)) => terminated += 1,
            Err(e) => {
                if other == 0 {
                    eprintln!("  post {seq} failed: {e:?}");
                }
                other += 1;
            }
        }
    }
    let posting = started.elapsed();
    let refused = rejected + terminated + other;
    println!(
        "  posted {} in {:.3} s ({:.0}/s, target {target:.0}/s): {sent} sent, {refused} refused at \
         the sender ({rejected} rejected, {terminated} terminated, {other} other)",
        overload.posts,
        posting.as_secs_f64(),
        rate(overload.posts, posting)
    );

    // Settle: every frame sent was received by the sink and delivered or bounced, every bounce
    // came back to the handler, and the sink's runtime is quiescent. Gives up at the deadline,
    // or earlier once the sink has taken everything and no bounce has come back for a while
    // (a bounce the sink counted but never sent would otherwise keep it waiting to the end).
    let settle_started = Instant::now();
    let deadline = settle_started + SETTLE_DEADLINE;
    let mut last_returned = (u64::MAX, Instant::now());
    let (report, sender, settled) = loop {
        let report = sink.report(deadline + Duration::from_secs(10))?;
        let sender = parent.counts();
        let sink_done = report.settled && report.received == sender.sent;
        let settled = sink_done
            && report.bounced == sender.returned + report.bounce_overflow
            && sender.returned == bounces.total();
        if sender.returned != last_returned.0 {
            last_returned = (sender.returned, Instant::now());
        }
        let stuck = sink_done && last_returned.1.elapsed() >= STUCK_AFTER;
        if settled || stuck || Instant::now() >= deadline {
            break (report, sender, settled);
        }
        thread::sleep(Duration::from_millis(20));
    };
    let settle_time = settle_started.elapsed();
    let returned = bounces.total();
    let by_reason = format!("{:?}", bounces.by_reason.lock());
    // The sink process's own count, asked after the report (so outside the counts above).
    let tally = parent.remote::<Tally>(pid).call(Tally, SETUP_DEADLINE);
    drop(loads);

    let accounted = i128::from(refused)
        + i128::from(returned)
        + i128::from(report.handled)
        + i128::from(report.dead_lettered)
        + i128::from(report.bounce_overflow)
        + i128::from(sender.in_doubt);
    let lost = i128::from(overload.posts) - accounted;

    let mut problems = Vec::new();
    if !settled {
        problems.push(format!(
            "not settled after {} ms (sink settled: {}, sink received {} of {} sent, sink \
             bounced {}, sender returned {}, bounce handler saw {returned})",
            settle_time.as_millis(),
            report.settled,
            report.received,
            sender.sent,
            report.bounced,
            sender.returned
        ));
    }
    if lost != 0 {
        problems.push(format!("{lost} posts unaccounted for"));
    }
    if sender.in_doubt != 0 {
        problems.push(format!("{} posts in doubt", sender.in_doubt));
    }
    if report.rejected != report.bounced {
        problems.push(format!(
            "the sink's runtime rejected {} but its node bounced {}",
            report.rejected, report.bounced
        ));
    }
    if report.posted != report.delivered + report.rejected {
        problems.push(format!(
            "the sink's runtime was offered {} but its node delivered {} and the runtime \
             rejected {}",
            report.posted, report.delivered, report.rejected
        ));
    }
    if bounces.not_rejected() != 0 {
        problems.push(format!(
            "bounces for other reasons than Rejected: {by_reason}"
        ));
    }
    if sender.sent != sent || sender.refused != refused {
        problems.push(format!(
            "the sender's counters disagree with its posts: sent {} (posts Ok {sent}), refused {} \
             (posts Err {refused})",
            sender.sent, sender.refused
        ));
    }
    if sender.returned_unrouted != 0 {
        problems.push(format!(
            "{} bounces found no handler",
            sender.returned_unrouted
        ));
    }
    if report.control_overflow + report.malformed + report.from_quarantined != 0 {
        problems.push(format!(
            "sink: control_overflow {}, malformed {}, from_quarantined {}",
            report.control_overflow, report.malformed, report.from_quarantined
        ));
    }
    if refused + returned == 0 {
        problems.push("the sink was never overloaded (nothing refused or bounced)".into());
    }
    let handled_rate = match &tally {
        Ok((handled, out_of_order, busy_us)) => {
            if *handled != report.handled {
                problems.push(format!(
                    "the sink process counted {handled} handled, its runtime {}",
                    report.handled
                ));
            }
            if *out_of_order != 0 {
                problems.push(format!("{out_of_order} posts handled out of order"));
            }
            rate(*handled, Duration::from_micros(*busy_us))
        }
        Err(e) => {
            problems.push(format!("the sink's tally could not be asked: {e:?}"));
            0.0
        }
    };
    let offered_rate = rate(overload.posts, posting);

    println!(
        "  {} {} ms after the last post; sender: {}",
        if settled { "settled" } else { "gave up" },
        settle_time.as_millis(),
        describe_counts(&sender)
    );
    println!(
        "  sink runtime: posted={} handled={} rejected={} dead_lettered={} queued={}; sink node: \
         received={} delivered={} bounced={}; bounces back at the sender: {by_reason}",
        report.posted,
        report.handled,
        report.rejected,
        report.dead_lettered,
        report.queued,
        report.received,
        report.delivered,
        report.bounced
    );
    match &tally {
        Ok((handled, out_of_order, busy_us)) => println!(
            "  sink process: handled {handled} in {:.3} s of work ({handled_rate:.0}/s), {out_of_order} \
             out of order; offered/handled rate = {:.1}x, sent/handled = {:.1}x",
            *busy_us as f64 / 1e6,
            offered_rate / handled_rate.max(1.0),
            rate(sent, posting) / handled_rate.max(1.0)
        ),
        Err(e) => println!("  sink process: no tally ({e:?})"),
    }
    for problem in &problems {
        println!("  problem: {problem}");
    }
    let passed = problems.is_empty();
    let figures = format!(
        "posts={} refused_at_sender={refused} bounced={returned} handled={} dead_lettered={} \
         in_doubt={} lost={lost} offered_rate={offered_rate:.0}/s handled_rate={handled_rate:.0}/s",
        overload.posts,
        report.handled,
        report.dead_lettered + report.bounce_overflow,
        sender.in_doubt
    );
    println!(
        "gate 3 (overload): {figures} {}",
        if passed { "PASS" } else { "FAIL" }
    );
    Ok((passed, figures))
}

fn describe_counts(c: &DistCounts) -> String {
    format!(
        "sent={} refused={} returned={} returned_unrouted={} in_doubt={} control_overflow={}",
        c.sent, c.refused, c.returned, c.returned_unrouted, c.in_doubt, c.control_overflow
    )
}

// ---------------------------------------------------------------------------------------------
// Gate 4: chaos under traffic

/// How often the sink prints `PROGRESS` in gate 4.
const PROGRESS_EVERY: Duration = Duration::from_millis(10);

/// Posts between two looks at gate 4's pacing schedule (finer than gate 3's: the parent looks
/// for the sink's Down between two posts).
const CHAOS_PACE_BATCH: u64 = 100;

/// How long the parent's counters must stay unchanged to count as at rest.
const REST_FOR: Duration = Duration::from_millis(100);

/// How a gate 4 trial cuts the traffic.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ChaosMode {
    /// Gate 2's proxy partitions the link; the sink lives on and reports.
    Partition(PartitionMode),
    /// SIGKILL of the sink.
    Kill,
}

/// Gate 4's settings.
struct Chaos {
    /// Trials per mode (0 skips the gate).
    trials: u64,
    /// Posts per trial; the cut comes after about a third of them.
    posts: u64,
    modes: Vec<ChaosMode>,
}

impl Chaos {
    fn from_args(args: &[String]) -> Result<Chaos, String> {
        let trials = flag_number(args, "--chaos-trials", 2)?;
        let posts = flag_number(args, "--chaos-posts", 60_000)?;
        if trials > 0 && posts < 3 {
            return Err("--chaos-posts needs at least 3 posts".into());
        }
        let modes = flag_value(args, "--chaos-modes")
            .unwrap_or("drop,blackhole,kill")
            .split(',')
            .filter(|m| !m.is_empty())
            .map(|m| match m {
                "drop" => Ok(ChaosMode::Partition(PartitionMode::Drop)),
                "blackhole" => Ok(ChaosMode::Partition(PartitionMode::Blackhole)),
                "kill" => Ok(ChaosMode::Kill),
                other => Err(format!("unknown chaos mode {other:?}")),
            })
            .collect::<Result<_, _>>()?;
        Ok(Chaos {
            trials,
            posts,
            modes,
        })
    }
}

/// What the parent's posts returned.
#[derive(Default)]
struct PostOutcomes {
    ok: u64,
    rejected: u64,
    terminated: u64,
    other: u64,
    /// Posts made once the parent had seen the sink Down that were not refused Terminated.
    after_down_not_terminated: u64,
}

impl PostOutcomes {
    fn refused(&self) -> u64 {
        self.rejected + self.terminated + self.other
    }
}

/// One gate 4 trial's figures.
struct ChaosOutcome {
    passed: bool,
    /// From the cut to the parent's Down.
    parent_down: Duration,
    /// From the cut to the sink's Down (partition only: a killed sink sees nothing).
    sink_down: Option<Duration>,
    in_doubt: u64,
    /// Frames sent that never reached the sink (partition only: unknown after a kill).
    never_arrived: Option<i128>,
    /// Posts unaccounted for: over both nodes (partition), at the parent (kill).
    lost: i128,
}

/// `min..max` of some figures.
fn span<T: Ord + Copy + std::fmt::Display>(values: &[T]) -> String {
    match (values.iter().min(), values.iter().max()) {
        (Some(lo), Some(hi)) if lo == hi => format!("{lo} in all"),
        (Some(lo), Some(hi)) => format!("{lo}..{hi}"),
        _ => "none".into(),
    }
}

fn gate4(
    lease: Duration,
    overload: &Overload,
    chaos: &Chaos,
    mode: ChaosMode,
) -> Result<Row, String> {
    let name = match mode {
        ChaosMode::Partition(PartitionMode::Drop) => "gate 4 (drop under traffic): nothing lost",
        ChaosMode::Partition(PartitionMode::Blackhole) => {
            "gate 4 (blackhole under traffic): nothing lost"
        }
        ChaosMode::Kill => "gate 4 (kill -9 under traffic): parent loses nothing",
    };
    println!();
    println!(
        "== {name}: {} trials of {} posts paced at {}/s ({} µs of work per message, \
         QueueLength::max({})), cut after about post {} ==",
        chaos.trials,
        chaos.posts,
        overload.capacity,
        overload.work.as_micros(),
        overload.queue_max,
        chaos.posts / 3
    );
    let gate = Gate4 {
        lease,
        overload,
        chaos,
        mode,
    };
    let started = Instant::now();
    let mut passed = 0;
    let (mut parent_downs, mut sink_downs) = (Vec::new(), Vec::new());
    let (mut in_doubt, mut never_arrived, mut lost) = (Vec::new(), Vec::new(), Vec::new());
    for trial in 1..=chaos.trials {
        match gate.trial(trial) {
            Ok(outcome) => {
                passed += u64::from(outcome.passed);
                parent_downs.push(outcome.parent_down);
                sink_downs.extend(outcome.sink_down);
                in_doubt.push(outcome.in_doubt);
                never_arrived.extend(outcome.never_arrived);
                lost.push(outcome.lost);
            }
            Err(why) => println!("  trial {trial}: FAIL  {why}"),
        }
    }
    let figures = match mode {
        ChaosMode::Partition(_) => format!(
            "lost {}; in doubt {}, never arrived {}; parent Down: {}; sink Down: {}",
            span(&lost),
            span(&in_doubt),
            span(&never_arrived),
            describe(&mut parent_downs),
            describe(&mut sink_downs)
        ),
        ChaosMode::Kill => format!(
            "lost at the parent {}; in doubt {}; parent Down: {}",
            span(&lost),
            span(&in_doubt),
            describe(&mut parent_downs)
        ),
    };
    println!(
        "  {} trials in {:.1} s: {passed} passed; {figures}",
        chaos.trials,
        started.elapsed().as_secs_f64()
    );
    Ok(Row {
        name: name.into(),
        trials: chaos.trials,
        passed,
        figures,
    })
}

/// One mode of gate 4.
struct Gate4<'a> {
    lease: Duration,
    overload: &'a Overload,
    chaos: &'a Chaos,
    mode: ChaosMode,
}

impl Gate4<'_> {
    /// A trial with its own parent node, proxy (partition) and sink; all stopped at the end,
    /// whatever happened.
    fn trial(&self, trial: u64) -> Result<ChaosOutcome, String> {
        let cluster = random_cluster()?;
        let port = free_loopback_port()?;
        let mut config = NodeConfig::new(&cluster)
            .listen([format!("tcp/127.0.0.1:{port}")])
            .lease(self.lease);
        if let Some(window) = self.overload.window {
            config = config.window(window);
        }
        let parent =
            Node::start(config).map_err(|e| format!("parent cannot start its node: {e:#?}"))?;
        let events = parent.events();
        let proxy = match self.mode {
            ChaosMode::Partition(_) => Some(Proxy::start(port)?),
            ChaosMode::Kill => None,
        };
        let connect = format!("tcp/127.0.0.1:{}", proxy.as_ref().map_or(port, |p| p.port));
        let outcome = SinkProc::spawn(&connect, &cluster, self.lease, self.overload, true)
            .and_then(|mut sink| {
                let outcome = self.run(trial, &parent, &events, &mut sink, proxy.as_ref());
                // Kills the sink if it does not shut down (a killed one has exited already).
                sink.finish(Duration::from_secs(5));
                outcome
            });
        if let Some(proxy) = &proxy {
            proxy.stop();
        }
        let _ = parent.shutdown();
        outcome
    }

    /// Posts, cuts, waits for Down and for rest, and checks the accounting.
    fn run(
        &self,
        trial: u64,
        parent: &Node,
        events: &Receiver<NodeEvent>,
        sink: &mut SinkProc,
        proxy: Option<&Proxy>,
    ) -> Result<ChaosOutcome, String> {
        let pid = sink.ready()?;
        let sink_id = pid.node();
        let parent_id = parent.id();
        wait_event(
            events,
            Instant::now() + SETUP_DEADLINE,
            |e| *e == NodeEvent::Up(sink_id),
            |_| {},
        )
        .ok_or("the parent never saw the sink Up")?;

        // Post at the sink's capacity; cut after a third. Once the parent has seen the sink
        // Down, it posts the rest unpaced: each must be refused Terminated at once.
        let bounces = Arc::new(Bounces::default());
        let seen = Arc::clone(&bounces);
        let loads = parent
            .remote::<Load>(pid)
            .on_bounce(move |u| seen.record(u.reason));
        let posts = self.chaos.posts;
        // About a third, at a random point of a pacing batch (not always right after a burst).
        let cut_after =
            (posts / 3 + getrandom::u64().unwrap_or(0) % CHAOS_PACE_BATCH).min(posts - 1);
        let rate = self.overload.capacity as f64;
        let mut out = PostOutcomes::default();
        let mut cut_at = None;
        let mut down: Option<(u64, Instant)> = None;
        let mut ups_again = 0u64;
        let started = Instant::now();
        for seq in 0..posts {
            if seq == cut_after {
                cut_at = Some(Instant::now());
                match (self.mode, proxy) {
                    (ChaosMode::Partition(mode), Some(proxy)) => proxy.partition(mode),
                    (ChaosMode::Partition(_), None) => return Err("no proxy to cut".into()),
                    (ChaosMode::Kill, _) => sink
                        .child
                        .kill()
                        .map_err(|e| format!("kill -9 of the sink: {e}"))?,
                }
            }
            if down.is_none() {
                if seq % CHAOS_PACE_BATCH == 0 {
                    let due = started + Duration::from_secs_f64(seq as f64 / rate);
                    if let Some(ahead) = due.checked_duration_since(Instant::now()) {
                        thread::sleep(ahead);
                    }
                }
                while let Ok(event) = events.try_recv() {
                    match event {
                        NodeEvent::Down { node, .. } if node == sink_id => {
                            down.get_or_insert((seq, Instant::now()));
                        }
                        NodeEvent::Up(node) if node == sink_id => ups_again += 1,
                        _ => {}
                    }
                }
            }
            let result = loads.post(Load { seq });
            if down.is_some() && !matches!(result, Err(RemotePostError::Terminated(_))) {
                out.after_down_not_terminated += 1;
            }
            match result {
                Ok(()) => out.ok += 1,
                Err(RemotePostError::Rejected(_)) => out.rejected += 1,
                Err(RemotePostError::Terminated(_)) => out.terminated += 1,
                Err(e) => {
                    if out.other == 0 {
                        eprintln!("  post {seq} failed: {e:?}");
                    }
                    out.other += 1;
                }
            }
        }
        let posting = started.elapsed();
        let cut_at = cut_at.ok_or("the posts ended before the cut")?;

        // Both sides see Down (a killed sink sees nothing).
        let detect = cut_at + self.lease * 3 + Duration::from_secs(10);
        let down_at = match down {
            Some((_, at)) => at,
            None => wait_event(
                events,
                detect,
                |e| matches!(e, NodeEvent::Down { node, .. } if *node == sink_id),
                |e| {
                    if e == NodeEvent::Up(sink_id) {
                        ups_again += 1;
                    }
                },
            )
            .ok_or_else(|| {
                format!(
                    "the parent did not see the sink Down within {} ms of the cut",
                    detect.duration_since(cut_at).as_millis()
                )
            })?,
        };
        let parent_down = down_at.saturating_duration_since(cut_at);
        let mut sink_ups_again = 0u64;
        let sink_down = match self.mode {
            ChaosMode::Kill => None,
            ChaosMode::Partition(_) => {
                let at = loop {
                    let (at, line) = sink.next_line_at(detect, "EVENT").map_err(|e| {
                        format!("{e} (waiting for the sink to see the parent Down)")
                    })?;
                    match parse_child_line(&line) {
                        ChildLine::Down(id) if id == parent_id => break at,
                        ChildLine::Up(id) if id == parent_id => sink_ups_again += 1,
                        _ => eprintln!("  sink said: {line}"),
                    }
                };
                Some(at.saturating_duration_since(cut_at))
            }
        };

        // The parent at rest: its counters unchanged for a while, every bounce it counted
        // handed to the handler.
        let rest_deadline = Instant::now() + Duration::from_secs(10);
        let mut sender = parent.counts();
        let mut since = Instant::now();
        let at_rest = loop {
            thread::sleep(Duration::from_millis(10));
            let now = parent.counts();
            if now != sender {
                sender = now;
                since = Instant::now();
            }
            if since.elapsed() >= REST_FOR && sender.returned == bounces.total() {
                break true;
            }
            if Instant::now() >= rest_deadline {
                break false;
            }
        };
        let returned = bounces.total();
        let by_reason = format!("{:?}", bounces.by_reason.lock());
        drop(loads);

        // The sink: its report once at rest (partition), or its last PROGRESS (kill).
        let mut problems = Vec::new();
        let report = match self.mode {
            ChaosMode::Partition(_) => {
                let report = sink.report(Instant::now() + Duration::from_secs(15))?;
                // The process's own count, asked after the report (so outside its counts).
                let tally = sink.tally(Instant::now() + Duration::from_secs(10));
                Some((report, tally))
            }
            ChaosMode::Kill => {
                let _ = sink.child.wait();
                if !sink.drain(Instant::now() + Duration::from_secs(5)) {
                    problems.push("the killed sink's stdout did not end within 5 s".to_string());
                }
                None
            }
        };
        let progress = sink.progress();

        let posted = i128::from(posts);
        let refused = i128::from(out.refused());
        let sent = i128::from(sender.sent);
        let back = i128::from(returned);
        let in_doubt = i128::from(sender.in_doubt);
        let window = self
            .overload
            .window
            .unwrap_or(NodeConfig::DEFAULT_WINDOW)
            .max(1) as u64;

        // What holds whatever the cut.
        if !at_rest {
            problems.push(format!(
                "the parent's counters were not at rest 10 s after Down (returned {}, the \
                 bounce handler saw {returned})",
                sender.returned
            ));
        }
        if let Some((seq, _)) = down {
            if seq < cut_after {
                problems.push(format!(
                    "the parent saw the sink Down at post {seq}, before the cut"
                ));
            }
        }
        if ups_again + sink_ups_again > 0 {
            problems.push(format!(
                "Up again after the cut: the sink at the parent {ups_again} times, the parent at \
                 the sink {sink_ups_again} times"
            ));
        }
        if out.after_down_not_terminated > 0 {
            problems.push(format!(
                "{} posts made after the parent saw the sink Down were not refused Terminated",
                out.after_down_not_terminated
            ));
        }
        if sender.sent != out.ok || sender.refused != out.refused() {
            problems.push(format!(
                "the sender's counters disagree with its posts: sent {} (posts Ok {}), refused {} \
                 (posts Err {})",
                sender.sent,
                out.ok,
                sender.refused,
                out.refused()
            ));
        }
        if sender.in_doubt > sender.sent || sender.in_doubt > window {
            problems.push(format!(
                "{} in doubt, more than the {} sent or the credit window of {window}",
                sender.in_doubt, sender.sent
            ));
        }
        if sender.returned_unrouted != 0 {
            problems.push(format!(
                "{} bounces found no handler",
                sender.returned_unrouted
            ));
        }
        if bounces.not_rejected() != 0 {
            problems.push(format!(
                "bounces for other reasons than Rejected: {by_reason}"
            ));
        }
        if progress.lines == 0 {
            problems.push("the sink printed no PROGRESS line".into());
        }
        if progress.out_of_order != 0 {
            problems.push(format!(
                "the sink printed {} OUT_OF_ORDER lines (posts handled out of order)",
                progress.out_of_order
            ));
        }
        if progress.handled > progress.received || progress.received > sender.sent {
            problems.push(format!(
                "the sink's last PROGRESS line has handled {} and received {}, not within the \
                 {} sent",
                progress.handled, progress.received, sender.sent
            ));
        }

        let cut = match self.mode {
            ChaosMode::Partition(PartitionMode::Drop) => "proxy cut (drop)",
            ChaosMode::Partition(PartitionMode::Blackhole) => "proxy cut (blackhole)",
            ChaosMode::Kill => "sink killed (SIGKILL)",
        };
        println!(
            "  trial {trial}: {cut} after post {cut_after}; Down seen by the parent after {} ms \
             ({}){}; {posts} posts in {:.3} s: {} Ok, {} rejected, {} terminated, {} other; \
             sender: {}",
            ms(parent_down),
            match down {
                Some((seq, _)) => format!("at post {seq}"),
                None => "after the last post".into(),
            },
            match sink_down {
                Some(d) => format!(", by the sink after {} ms", ms(d)),
                None => String::new(),
            },
            posting.as_secs_f64(),
            out.ok,
            out.rejected,
            out.terminated,
            out.other,
            describe_counts(&sender)
        );

        let (lost, never_arrived) = match &report {
            Some((report, tally)) => {
                // Exact, over both nodes.
                let handled = i128::from(report.handled);
                let dead = i128::from(report.dead_lettered);
                let not_returned = i128::from(report.bounced) - back;
                let never_arrived = sent - i128::from(report.received);
                let lost =
                    posted - (refused + back + handled + dead + not_returned + never_arrived);
                if !report.settled {
                    problems.push("the sink's counters did not come to rest within 5 s".into());
                }
                if never_arrived < 0 {
                    problems.push(format!(
                        "the sink received {} frames, more than the {sent} sent",
                        report.received
                    ));
                }
                if never_arrived > in_doubt {
                    problems.push(format!(
                        "{never_arrived} frames never arrived, more than the {in_doubt} in doubt"
                    ));
                }
                if not_returned < 0 {
                    problems.push(format!(
                        "the parent got {returned} bounces back, the sink bounced {}",
                        report.bounced
                    ));
                }
                if report.received != report.delivered + report.bounced {
                    problems.push(format!(
                        "the sink received {} frames but delivered {} and bounced {}",
                        report.received, report.delivered, report.bounced
                    ));
                }
                if report.delivered != report.handled + report.dead_lettered + report.queued {
                    problems.push(format!(
                        "the sink's node delivered {} but its runtime handled {}, dead-lettered \
                         {} and has {} queued",
                        report.delivered, report.handled, report.dead_lettered, report.queued
                    ));
                }
                if report.queued != 0 {
                    problems.push(format!("{} still queued at the sink", report.queued));
                }
                if report.rejected != report.bounced {
                    problems.push(format!(
                        "the sink's runtime rejected {} but its node bounced {}",
                        report.rejected, report.bounced
                    ));
                }
                if report.posted != report.delivered + report.rejected {
                    problems.push(format!(
                        "the sink's runtime was offered {} but its node delivered {} and the \
                         runtime rejected {}",
                        report.posted, report.delivered, report.rejected
                    ));
                }
                let process = match tally {
                    Ok((handled, out_of_order, _)) => {
                        if *handled != report.handled {
                            problems.push(format!(
                                "the sink process counted {handled} handled, its runtime {}",
                                report.handled
                            ));
                        }
                        if *out_of_order != 0 {
                            problems.push(format!("{out_of_order} posts handled out of order"));
                        }
                        format!("handled={handled} out_of_order={out_of_order}")
                    }
                    Err(e) => {
                        problems.push(format!("the sink's tally could not be asked: {e}"));
                        "no tally".into()
                    }
                };
                if progress.handled > report.handled {
                    problems.push(format!(
                        "the sink's last PROGRESS line has handled {}, its final report {}",
                        progress.handled, report.handled
                    ));
                }
                if report.control_overflow + report.malformed + report.from_quarantined != 0 {
                    problems.push(format!(
                        "sink: control_overflow {}, malformed {}, from_quarantined {}",
                        report.control_overflow, report.malformed, report.from_quarantined
                    ));
                }
                if lost != 0 {
                    problems.push(format!("{lost} posts unaccounted for over both nodes"));
                }
                println!(
                    "    sink runtime: posted={} handled={} rejected={} dead_lettered={} \
                     queued={}; sink node: received={} delivered={} bounced={} \
                     bounce_overflow={} from_unknown={}; sink process: {process} (last of {} \
                     PROGRESS lines: handled={}); bounces back at the sender: {by_reason}",
                    report.posted,
                    report.handled,
                    report.rejected,
                    report.dead_lettered,
                    report.queued,
                    report.received,
                    report.delivered,
                    report.bounced,
                    report.bounce_overflow,
                    report.from_unknown,
                    progress.lines,
                    progress.handled
                );
                for problem in &problems {
                    println!("    problem: {problem}");
                }
                println!(
                    "  trial {trial}: {}  posts={posted} = refused_at_sender={refused} + \
                     returned={back} + handled={handled} + dead_lettered={dead} + \
                     bounced_not_returned={not_returned} + never_arrived={never_arrived}, \
                     lost={lost}; never_arrived={never_arrived} <= in_doubt={in_doubt} \
                     (arrived, not acknowledged: {})",
                    if problems.is_empty() { "PASS" } else { "FAIL" },
                    in_doubt - never_arrived
                );
                (lost, Some(never_arrived))
            }
            None => {
                // At the parent only: every post refused, returned, acknowledged, or in doubt.
                let acknowledged = sent - in_doubt;
                let acked_not_returned = acknowledged - back;
                let lost = posted - (refused + back + acked_not_returned + in_doubt);
                if lost != 0 {
                    problems.push(format!("{lost} posts unaccounted for at the parent"));
                }
                println!(
                    "    sink before the kill: last of {} PROGRESS lines: handled={} received={}, \
                     {} OUT_OF_ORDER lines; what it handled after that line is unknown (at most \
                     {} more); bounces back at the sender: {by_reason}",
                    progress.lines,
                    progress.handled,
                    progress.received,
                    progress.out_of_order,
                    sent - i128::from(progress.handled)
                );
                for problem in &problems {
                    println!("    problem: {problem}");
                }
                println!(
                    "  trial {trial}: {}  posts={posted} = refused_at_sender={refused} + \
                     returned={back} + acked_not_returned={acked_not_returned} + \
                     in_doubt={in_doubt}, lost_at_parent={lost}; sent={sent} = \
                     acknowledged={acknowledged} + in_doubt={in_doubt}; last PROGRESS \
                     handled={} <= received={} <= sent={sent}",
                    if problems.is_empty() { "PASS" } else { "FAIL" },
                    progress.handled,
                    progress.received
                );
                (lost, None)
            }
        };
        Ok(ChaosOutcome {
            passed: problems.is_empty(),
            parent_down,
            sink_down,
            in_doubt: sender.in_doubt,
            never_arrived,
            lost,
        })
    }
}
