//! What a connected peer costs a node: memory and threads, over mutual TLS.
//!
//! A hub node runs in this process with a counting process exported. Peers are whirl nodes in
//! child OS processes (this binary with `--child`), each with its own certificate of the same
//! CA; each connects to the hub, waits until both see each other Up (hellos verified), posts
//! `--posts` messages to the hub's process and stays connected. The hub reads its own resident
//! memory and thread count (`/proc/self/status`) before any peer, after each step of peers,
//! and after the peers left; the figures are the growth per peer.
//!
//! ```text
//! cargo run --release -p whirl-dist-harness --bin peer_cost -- --peers 8,32
//! ```

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use serde::{Deserialize, Serialize};
use whirl::prelude::*;
use whirl_dist::certs::ClusterCa;
use whirl_dist::{Node, NodeConfig, NodeId, Pid, Remote};

/// What a peer costs a node, in memory and threads.
#[derive(Parser, Debug)]
struct Args {
    /// Numbers of peers to measure at, in increasing order.
    #[arg(long, value_delimiter = ',', default_value = "8,32")]
    peers: Vec<usize>,
    /// Messages each peer posts to the hub once it is Up.
    #[arg(long, default_value_t = 1_000)]
    posts: u64,
    /// Internal: run as a peer connecting to this endpoint.
    #[arg(long, hide = true)]
    child: Option<String>,
    /// Internal: the certificates' folder.
    #[arg(long, hide = true)]
    certs: Option<PathBuf>,
    /// Internal: the cluster's name.
    #[arg(long, hide = true)]
    cluster: Option<String>,
    /// Internal: this peer's certificate name.
    #[arg(long, hide = true)]
    name: Option<String>,
    /// Internal: the hub's node id.
    #[arg(long, hide = true)]
    hub: Option<String>,
    /// Internal: the hub's counting process's local id.
    #[arg(long, hide = true)]
    local: Option<u64>,
}

/// Posted by peers; counted by the hub.
#[derive(Message, Serialize, Deserialize)]
struct Ping(u64);
impl Remote for Ping {
    const TAG: &'static str = "peer_cost.Ping/1";
}

#[process]
struct Counter {
    pings: u64,
}

#[process]
impl Counter {
    #[handle]
    fn ping(&mut self, _: Ping) {
        self.pings += 1;
    }
}

/// A field of `/proc/self/status`, as a number (kB for memory).
fn status(field: &str) -> Result<u64, String> {
    let text = std::fs::read_to_string("/proc/self/status").map_err(|e| e.to_string())?;
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| format!("no {field} in /proc/self/status"))
}

fn config(cluster: &str, dir: &Path, name: &str) -> NodeConfig {
    NodeConfig::new(cluster).tls(
        dir.join(format!("{name}.pem")),
        dir.join(format!("{name}.key")),
        dir.join("ca.pem"),
    )
}

fn write_cert(dir: &Path, ca: &ClusterCa, name: &str) -> Result<(), String> {
    let cert = ca.node(name, 1).map_err(|e| e.to_string())?;
    std::fs::write(dir.join(format!("{name}.pem")), cert.certificate).map_err(|e| e.to_string())?;
    std::fs::write(dir.join(format!("{name}.key")), cert.key).map_err(|e| e.to_string())
}

fn wait(what: &str, deadline: Duration, mut ok: impl FnMut() -> bool) -> Result<(), String> {
    let end = Instant::now() + deadline;
    while !ok() {
        if Instant::now() > end {
            return Err(format!("{what}: not within {deadline:?}"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// A peer: joins, posts, says READY, stays until its stdin closes.
fn child(args: &Args, endpoint: &str) -> Result<(), String> {
    let (Some(dir), Some(cluster), Some(name), Some(hub), Some(local)) = (
        &args.certs,
        &args.cluster,
        &args.name,
        &args.hub,
        args.local,
    ) else {
        return Err("--child needs --certs, --cluster, --name, --hub and --local".to_owned());
    };
    let hub: NodeId = hub.parse().map_err(|e| format!("--hub: {e}"))?;
    let pid = Pid::new(hub, local);
    let node = Node::start(
        config(cluster, dir, name)
            .listen(Vec::<String>::new())
            .connect([endpoint]),
    )
    .map_err(|e| format!("start: {e}"))?;
    wait("the hub Up", Duration::from_secs(30), || {
        node.members().contains(&pid.node())
    })?;
    let pings = node.remote::<Ping>(pid);
    for n in 0..args.posts {
        let mut msg = Ping(n);
        while let Err(e) = pings.post(msg) {
            msg = e.into_message();
            std::thread::sleep(Duration::from_micros(100));
        }
    }
    println!("READY");
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    node.shutdown().map_err(|e| format!("shutdown: {e}"))
}

fn spawn_peer(
    args: &Args,
    endpoint: &str,
    dir: &Path,
    cluster: &str,
    name: &str,
    pid: Pid,
) -> Result<Child, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = Command::new(exe)
        .args(["--child", endpoint, "--cluster", cluster, "--name", name])
        .arg("--certs")
        .arg(dir)
        .args(["--hub", &pid.node().to_string()])
        .args(["--local", &pid.local().to_string()])
        .args(["--posts", &args.posts.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start peer {name}: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    if line.trim() != "READY" {
        return Err(format!("peer {name} did not get ready: {line:?}"));
    }
    Ok(child)
}

fn run(args: &Args) -> Result<(), String> {
    let id = NodeId::random().map_err(|e| e.to_string())?;
    let cluster = format!("peer-cost-{}", &id.to_string()[..8]);
    let dir = std::env::temp_dir().join(&cluster);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let ca = ClusterCa::new("peer-cost-ca").map_err(|e| e.to_string())?;
    std::fs::write(dir.join("ca.pem"), ca.certificate_pem()).map_err(|e| e.to_string())?;
    let most = args.peers.iter().copied().max().unwrap_or(0);
    for i in 0..=most {
        write_cert(&dir, &ca, &format!("peer-{i}"))?;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let endpoint = format!("tls/127.0.0.1:{port}");
    let hub = Node::start(
        config(&cluster, &dir, "peer-0")
            .listen([endpoint.as_str()])
            .max_peers(most + 8),
    )
    .map_err(|e| format!("the hub: {e}"))?;
    let runtime = Runtime::new();
    let counter = runtime.spawn(Counter { pings: 0 });
    let pid = hub
        .export(&counter)
        .accept::<Ping>()
        .build()
        .map_err(|e| e.to_string())?;
    std::thread::sleep(Duration::from_millis(500));
    let (rss0, threads0) = (status("VmRSS")?, status("Threads")?);
    println!(
        "peer_cost: hub alone: {rss0} kB resident, {threads0} threads; each peer posts {} messages",
        args.posts
    );
    println!(
        "{:>6} {:>12} {:>10} {:>16} {:>16}",
        "peers", "RSS kB", "threads", "kB per peer", "threads per peer"
    );
    let mut children = Vec::new();
    for &target in &args.peers {
        while children.len() < target {
            let name = format!("peer-{}", children.len() + 1);
            children.push(spawn_peer(args, &endpoint, &dir, &cluster, &name, pid)?);
        }
        wait("every peer Up on the hub", Duration::from_secs(60), || {
            hub.members().len() >= target
        })?;
        std::thread::sleep(Duration::from_millis(500));
        let (rss, threads) = (status("VmRSS")?, status("Threads")?);
        let n = target as f64;
        println!(
            "{target:>6} {rss:>12} {threads:>10} {:>16.1} {:>16.2}",
            (rss as f64 - rss0 as f64) / n,
            (threads as f64 - threads0 as f64) / n
        );
    }
    for mut child in children {
        drop(child.stdin.take());
        let _ = child.wait();
    }
    wait(
        "every peer Down on the hub",
        Duration::from_secs(30),
        || hub.members().is_empty(),
    )?;
    std::thread::sleep(Duration::from_millis(500));
    println!(
        "after the peers left: {} kB resident, {} threads",
        status("VmRSS")?,
        status("Threads")?
    );
    runtime.shutdown_graceful();
    hub.shutdown().map_err(|e| e.to_string())?;
    std::fs::remove_dir_all(&dir).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let args = Args::parse();
    let result = match &args.child {
        Some(endpoint) => child(&args, endpoint),
        None => run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("peer_cost: {e}");
            ExitCode::FAILURE
        }
    }
}
