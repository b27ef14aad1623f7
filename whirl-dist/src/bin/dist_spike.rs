//! The Zenoh spike: measures the two gates whirl-dist must pass before it is built on Zenoh.
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
//!
//! ```text
//! dist_spike [--trials N] [--stop-trials N] [--partition-trials N] [--lease-ms MS]
//!            [--modes drop,blackhole]
//! dist_spike --child --connect tcp/127.0.0.1:PORT --cluster NAME --lease-ms MS   (internal)
//! ```
//!
//! The child prints one line per fact on stdout (`READY <id>`, `EVENT UP|DOWN|REFUSED <id>`,
//! `BYE`) and shuts down when its stdin closes. Exit code: 0 if every gate passed, 1 if one
//! failed, 2 on a usage or setup error.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Child, ChildStdin, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use parking_lot::Mutex;
use whirl_dist::{MemberState, Node, NodeConfig, NodeEvent, NodeId};

/// How long to wait for anything that should happen but is not being timed.
const SETUP_DEADLINE: Duration = Duration::from_secs(20);

fn main() -> ExitCode {
    // Zenoh's own logs, if RUST_LOG asks for them.
    zenoh::try_init_log_from_env();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = if args.iter().any(|a| a == "--child") {
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
