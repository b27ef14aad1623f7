//! `dist_node`: one whirl-dist node per OS process, configured from flags.
//!
//! It runs a whirl runtime with an `Echo` process, exported to the cluster and registered
//! under the `--register` names, offers a factory `echo` (which peers may call only if
//! `--allow-factory-from` names them), prints every membership event as one line, and can ask
//! a registered name every second (`--ask`) or spawn on a named peer (`--spawn-on`). It stops
//! on SIGINT, SIGTERM or the end of its standard input, shuts the node down (peers see it Down
//! at once) and prints `stopped`.
//!
//! ```text
//! whirl-certs ca --dir certs && whirl-certs node n1 --dir certs && whirl-certs node n2 --dir certs
//! dist_node --name n1 --listen tls/127.0.0.1:7447 --register echo-1
//! dist_node --name n2 --listen tls/127.0.0.1:7448 --connect tls/127.0.0.1:7447 --ask echo-1
//! ```
//!
//! Errors are printed as `dist_node: <what>: <cause>`, with exit code 1.

use cluster::{chain, Failure};

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clap::Parser;
use serde::{Deserialize, Serialize};
use whirl::prelude::*;
use whirl_dist::{
    MemberState, Node, NodeConfig, NodeEvent, NodeId, Peers, Policy, Remote, Request,
};

/// Asked across nodes: answered with the text, echoed.
#[derive(Message, Serialize, Deserialize)]
struct Echo(String);
impl Remote for Echo {
    const TAG: &'static str = "dist_node.Echo/1";
}
impl Request for Echo {
    type Reply = String;
}

/// Answers `Echo` with `"<node name> echoes: <text>"`.
#[process]
struct Echoer {
    node: String,
}

#[process]
impl Echoer {
    #[handle]
    fn echo(&mut self, Echo(text): Echo) -> String {
        format!("{} echoes: {text}", self.node)
    }
}

/// One whirl-dist node: an exported, registered echo process, a factory `echo`, and a line
/// per membership event.
///
/// Over mutual TLS (the default), the node reads its certificate, its key and the cluster
/// CA's certificate; make them with `whirl-certs` (`whirl-certs ca --dir certs`, then
/// `whirl-certs node NAME --dir certs` per node). By default they are
/// <certs-dir>/<name>.pem, <certs-dir>/<name>.key and <certs-dir>/ca.pem.
///
/// Every pair of nodes must be linked by one side connecting to the other (peers are not
/// routed through one another). The node stops on SIGINT, SIGTERM, or when its standard input
/// closes (so it dies with a parent that pipes into it; pass --ignore-stdin to run it in the
/// background or with stdin at /dev/null).
#[derive(Parser, Debug)]
#[command(name = "dist_node", verbatim_doc_comment)]
struct Args {
    /// The cluster's name: nodes see only nodes of their own cluster.
    #[arg(long, default_value = "demo")]
    cluster: String,
    /// This node's certificate name, used to find <certs-dir>/<name>.pem and .key (peers see
    /// the name in the certificate).
    #[arg(long)]
    name: Option<String>,
    /// Listen on this endpoint (repeatable) [default: tls/127.0.0.1:7447, or
    /// tcp/127.0.0.1:7447 with --insecure-plaintext].
    #[arg(long = "listen", value_name = "ENDPOINT")]
    listen: Vec<String>,
    /// Connect to a peer at this endpoint (repeatable); retried while it is unreachable.
    #[arg(long = "connect", value_name = "ENDPOINT")]
    connect: Vec<String>,
    /// This node's certificate [default: <certs-dir>/<name>.pem].
    #[arg(long, value_name = "FILE")]
    cert: Option<PathBuf>,
    /// This node's private key [default: <certs-dir>/<name>.key].
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// The cluster CA's certificate(s) [default: <certs-dir>/ca.pem].
    #[arg(long, value_name = "FILE")]
    ca: Option<PathBuf>,
    /// Where the default certificate files are.
    #[arg(long, value_name = "DIR", default_value = "certs")]
    certs_dir: PathBuf,
    /// Register this node's echo process under NAME, cluster-wide (repeatable).
    #[arg(long = "register", value_name = "NAME")]
    register: Vec<String>,
    /// Let the peer with this certificate name call this node's `echo` factory (repeatable;
    /// by default no peer may).
    #[arg(long = "allow-factory-from", value_name = "PEER")]
    allow_factory_from: Vec<String>,
    /// Run WITHOUT encryption or authentication (tcp/… endpoints): anyone who reaches the
    /// port joins the cluster and may pose as any member. Loopback tests only.
    #[arg(long, conflicts_with_all = ["cert", "key", "ca"])]
    insecure_plaintext: bool,
    /// Once a peer registers NAME, ask it Echo("hello from <name>") every second and print
    /// the answer.
    #[arg(long, value_name = "NAME")]
    ask: Option<String>,
    /// Once the peer with this certificate name is Up, spawn an echo process on it with its
    /// factory `echo`, and print its pid or why it was refused.
    #[arg(long, value_name = "PEER_NAME")]
    spawn_on: Option<String>,
    /// Keep running when standard input closes (stop on SIGINT or SIGTERM only).
    #[arg(long)]
    ignore_stdin: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure { what, cause }) => {
            eprintln!("dist_node: {what}: {cause}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), Failure> {
    let config = config(args)?;
    // Before the node starts: from the first line printed on, SIGINT and SIGTERM stop it
    // cleanly.
    let (stop_tx, stop_rx) = mpsc::channel();
    watch_signals(stop_tx.clone())?;
    if !args.ignore_stdin {
        watch_stdin(stop_tx.clone())?;
    }
    let node = Node::start(config).map_err(|e| Failure::of("start the node", &e))?;
    let runtime = Runtime::new();
    let served = serve(&node, &runtime, args, &stop_rx);
    let (id, counts) = (node.id(), node.counts());
    let shut = node.shutdown();
    let _report = runtime.shutdown_graceful();
    served?;
    println!("counts {counts:?}");
    shut.map_err(|e| Failure::of(format!("shut node {id} down"), &e))?;
    println!("stopped");
    Ok(())
}

/// The node's configuration from the flags.
fn config(args: &Args) -> Result<NodeConfig, Failure> {
    if let Some(name) = &args.name {
        check_name("--name", name)?;
    }
    for name in args.register.iter().chain(&args.ask) {
        check_registry_name(name)?;
    }
    let mut config = NodeConfig::new(args.cluster.as_str());
    let default_listen;
    if args.insecure_plaintext {
        if args.spawn_on.is_some() {
            return Err(Failure::new(
                "--spawn-on",
                "it finds the peer by its certificate name, and plaintext peers have none",
            ));
        }
        eprintln!("dist_node: WARNING: --insecure-plaintext: this node's links are NOT encrypted or authenticated; anyone who reaches its port joins cluster {:?} and may pose as any member. Use it on loopback for tests only.", args.cluster);
        if !args.allow_factory_from.is_empty() {
            eprintln!("dist_node: WARNING: --allow-factory-from names certificates; plaintext peers have none, so no peer may call the factory");
        }
        config = config.insecure_plaintext("dist_node --insecure-plaintext");
        default_listen = "tcp/127.0.0.1:7447";
    } else {
        let file = |given: &Option<PathBuf>, flag: &str, ext: &str| match (given, &args.name) {
            (Some(path), _) => Ok(path.clone()),
            (None, Some(name)) => Ok(args.certs_dir.join(format!("{name}.{ext}"))),
            (None, None) => Err(Failure::new(
                format!("the node's --{flag}"),
                format!("give --name NAME (to read <certs-dir>/NAME.{ext}) or --{flag} FILE"),
            )),
        };
        let cert = file(&args.cert, "cert", "pem")?;
        let key = file(&args.key, "key", "key")?;
        let ca = args
            .ca
            .clone()
            .unwrap_or_else(|| args.certs_dir.join("ca.pem"));
        config = config.tls(cert, key, ca);
        default_listen = "tls/127.0.0.1:7447";
    }
    let listen = match args.listen.is_empty() {
        true => vec![default_listen.to_owned()],
        false => args.listen.clone(),
    };
    let mut policy = Policy::new();
    if !args.allow_factory_from.is_empty() {
        let peers = Peers::named(args.allow_factory_from.iter().cloned());
        policy = policy.allow_factory("echo", peers);
    }
    Ok(config
        .listen(listen)
        .connect(args.connect.iter().cloned())
        .policy(policy))
}

/// A name that becomes a file name: 1 to 64 ASCII letters, digits, '-', '_' and '.'.
fn check_name(flag: &str, name: &str) -> Result<(), Failure> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && !name.trim_matches('.').is_empty();
    match ok {
        true => Ok(()),
        false => Err(Failure::new(
            format!("{flag} {name:?}"),
            "use 1 to 64 ASCII letters, digits, '-', '_' and '.'",
        )),
    }
}

/// A registry name (checked here so `--ask` with a bad name fails at once).
fn check_registry_name(name: &str) -> Result<(), Failure> {
    let ok = (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    match ok {
        true => Ok(()),
        false => Err(Failure::new(
            format!("registry name {name:?}"),
            "use 1 to 128 ASCII letters, digits, '-', '_' and '.'",
        )),
    }
}

/// Sends on `stop` when SIGINT or SIGTERM arrives. The handlers are installed before this
/// returns (they only write to a pipe; the waiting happens on a thread of its own).
#[cfg(unix)]
fn watch_signals(stop: mpsc::Sender<String>) -> Result<(), Failure> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .map_err(|e| Failure::of("install the SIGINT and SIGTERM handlers", &e))?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                let name = if signal == SIGTERM {
                    "SIGTERM"
                } else {
                    "SIGINT"
                };
                // The receiver is gone only when the node is stopping already.
                let _ = stop.send(name.to_owned());
            }
        })
        .map(drop)
        .map_err(|e| Failure::of("start the signal thread", &e))
}

/// Elsewhere: the end of standard input (or the process's end) stops the node.
#[cfg(not(unix))]
fn watch_signals(_stop: mpsc::Sender<String>) -> Result<(), Failure> {
    Ok(())
}

/// Sends on `stop` when standard input ends (EOF or a read error); what is read is ignored.
fn watch_stdin(stop: mpsc::Sender<String>) -> Result<(), Failure> {
    std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || {
            let why = match std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink()) {
                Ok(_) => "stdin closed".to_owned(),
                Err(e) => format!("stdin: {e}"),
            };
            let _ = stop.send(why);
        })
        .map(drop)
        .map_err(|e| Failure::of("start the stdin thread", &e))
}

/// Sets the node up, then prints its events until told to stop.
fn serve(
    node: &Node,
    runtime: &Runtime,
    args: &Args,
    stop_rx: &mpsc::Receiver<String>,
) -> Result<(), Failure> {
    let events = node.events();
    let me = node
        .name()
        .map(str::to_owned)
        .or_else(|| args.name.clone())
        .unwrap_or_else(|| node.id().to_string());
    println!(
        "node {} name {me} cluster {} ({})",
        node.id(),
        node.cluster(),
        if node.name().is_some() {
            "mutual TLS"
        } else {
            "PLAINTEXT, unauthenticated"
        }
    );
    if let (Some(given), Some(proven)) = (&args.name, node.name()) {
        if given != proven {
            eprintln!("dist_node: note: --name is {given:?} but the certificate's name is {proven:?}; peers see {proven:?}");
        }
    }

    // The echo process: exported (peers may ask it Echo) and registered.
    let echo = runtime.spawn(Echoer { node: me.clone() });
    let pid = node
        .export(&echo)
        .answer::<Echo>()
        .build()
        .map_err(|e| Failure::of("export the echo process", &e))?;
    for name in &args.register {
        node.register(name, pid)
            .map_err(|e| Failure::of(format!("register {name:?}"), &e))?;
        println!("registered {name} -> {pid}");
    }
    // The factory `echo`: another echo process per call, from peers the policy allows.
    let group = runtime.default_group().clone();
    let factory_node = me.clone();
    node.add_factory("echo", move |(): (), ctx| {
        let state = Echoer {
            node: factory_node.clone(),
        };
        let addr = match ctx.take_principal() {
            Some(p) => group.spawner().principal(p).spawn(state),
            None => group.spawn(state),
        };
        ctx.export(&addr).answer::<Echo>().build().into()
    })
    .map_err(|e| Failure::of("add the factory \"echo\"", &e))?;
    println!(
        "echo process {pid}; factory echo open to {}",
        match args.allow_factory_from.is_empty() {
            true => "no peer".to_owned(),
            false => args.allow_factory_from.join(", "),
        }
    );

    let stopping = AtomicBool::new(false);
    std::thread::scope(|s| {
        if let Some(name) = &args.ask {
            s.spawn(|| ask_every_second(node, name, &me, &stopping));
        }
        if let Some(peer) = &args.spawn_on {
            s.spawn(|| spawn_on(node, peer, &me, &stopping));
        }
        let why = loop {
            if let Ok(why) = stop_rx.try_recv() {
                break why;
            }
            match events.recv_timeout(Duration::from_millis(100)) {
                Ok(event) => print_event(node, event),
                Err(e) if e.is_timeout() => {}
                Err(_) => break "the node's events ended".to_owned(),
            }
        };
        println!("stopping ({why})");
        stopping.store(true, Ordering::Relaxed);
    });
    Ok(())
}

/// One line per membership event.
fn print_event(node: &Node, event: NodeEvent) {
    match event {
        NodeEvent::Up(peer) => {
            let name = node
                .peer_name(peer)
                .unwrap_or_else(|| "no proven name".to_owned());
            println!("up {peer} ({name})");
        }
        NodeEvent::Down { node, reason } => println!("down {node} {reason:?}"),
        NodeEvent::NameConflict {
            name,
            holder,
            refused,
        } => println!("name-conflict {name}: {holder} keeps it, {refused} refused"),
        NodeEvent::Moved { from, to } => println!("moved {from} -> {to}"),
        NodeEvent::ResurrectionRefused(peer) => println!("resurrection-refused {peer}"),
        other => println!("event {other:?}"),
    }
}

/// Once a peer registers `name`, asks it every second and prints the answer.
fn ask_every_second(node: &Node, name: &str, me: &str, stopping: &AtomicBool) {
    let mut waiting = false;
    while !stopping.load(Ordering::Relaxed) {
        let next = Instant::now() + Duration::from_secs(1);
        match node.whereis::<Echo>(name) {
            None => {
                if !waiting {
                    println!("ask {name}: waiting for a node to register it");
                }
                waiting = true;
            }
            // Its node's hello not verified yet: not Up, nothing can be sent to it.
            Some(addr) if !is_up(node, addr.pid().node()) => {}
            Some(addr) => {
                waiting = false;
                let asked = addr
                    .request(Echo(format!("hello from {me}")))
                    .timeout(Duration::from_secs(2))
                    .call();
                match asked {
                    Ok(answer) => println!("ask {name} ({}): {answer}", addr.pid()),
                    Err(e) => println!("ask {name} ({}): no answer: {}", addr.pid(), chain(&e)),
                }
            }
        }
        sleep_until(next, stopping);
    }
}

/// Whether `id` is this node or a peer that is Up.
fn is_up(node: &Node, id: NodeId) -> bool {
    id == node.id() || node.state(id) == Some(MemberState::Up)
}

/// Once the peer named `peer` is Up, spawns an echo process on it and asks it once.
fn spawn_on(node: &Node, peer: &str, me: &str, stopping: &AtomicBool) {
    let mut waiting = false;
    let target = loop {
        if stopping.load(Ordering::Relaxed) {
            return;
        }
        let up = node
            .members()
            .into_iter()
            .find(|id: &NodeId| node.peer_name(*id).as_deref() == Some(peer));
        if let Some(id) = up {
            break id;
        }
        if !waiting {
            println!("spawn-on {peer}: waiting for it to be up");
            waiting = true;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    match node.spawn_on(target, "echo", &(), None, Duration::from_secs(5)) {
        Ok(pid) => {
            println!("spawn-on {peer} ({target}): spawned {pid}");
            let asked = node
                .remote::<Echo>(pid)
                .request(Echo(format!("hello from {me}")))
                .timeout(Duration::from_secs(2))
                .call();
            match asked {
                Ok(answer) => println!("spawn-on {peer}: {pid} answers: {answer}"),
                Err(e) => println!("spawn-on {peer}: {pid} did not answer: {}", chain(&e)),
            }
        }
        Err(e) => println!("spawn-on {peer} ({target}): refused: {e:?}: {}", chain(&e)),
    }
}

/// Sleeps until `deadline`, waking early when the node is stopping.
fn sleep_until(deadline: Instant, stopping: &AtomicBool) {
    while !stopping.load(Ordering::Relaxed) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}
