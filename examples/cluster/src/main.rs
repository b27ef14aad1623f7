//! Distribution with whirl-dist: two nodes on loopback, in one OS process for the example (each
//! with its own runtime, talking over mutually authenticated TLS 1.3, as between machines, with
//! certificates from a cluster CA made here in memory). Node B registers an account
//! under a cluster-wide name; node A finds it, posts to it, asks it, and monitors it. The
//! account is killed and A's monitor says so; B shuts down and A sees it Down.
//!
//! `cargo run -p cluster`. One node per OS process, from certificate files:
//! `cargo run --release --bin dist_node -- --help` (see whirl-dist's README). Three nodes as OS
//! processes, with a `kill -9` and the accounting summed over them:
//! `cargo run -p whirl-dist-harness --bin cluster_check`.

use std::error::Error;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use whirl::prelude::*;
use whirl_dist::certs::ClusterCa;
use whirl_dist::{Node, NodeConfig, NodeEvent, Remote, RemoteAddr, RemoteDown, Request};

/// Posted across nodes: `Remote` gives a message a stable name on the wire.
#[derive(Message, Serialize, Deserialize)]
struct Deposit(i64);
impl Remote for Deposit {
    const TAG: &'static str = "cluster.Deposit/1";
}

/// Asked across nodes: `Request` names the answer's type.
#[derive(Message, Serialize, Deserialize)]
struct Balance;
impl Remote for Balance {
    const TAG: &'static str = "cluster.Balance/1";
}
impl Request for Balance {
    type Reply = i64;
}

#[process]
struct Account {
    cents: i64,
}

#[process]
impl Account {
    #[handle]
    fn deposit(&mut self, Deposit(cents): Deposit) {
        self.cents += cents;
    }

    #[handle]
    fn balance(&mut self, _: Balance) -> i64 {
        self.cents
    }
}

/// On node A: asks the remote account from an async handler, and hears from the monitor.
#[process]
struct Teller {
    account: RemoteAddr<Balance>,
    downs: Vec<String>,
}

#[derive(Message)]
struct Audit;

#[derive(Message)]
struct Downs;

#[process]
impl Teller {
    #[handle]
    async fn audit(&mut self, _: Audit) -> Result<i64, Failure> {
        Ok(self.account.ask(Balance).await?) // its worker runs other processes meanwhile
    }

    #[handle]
    fn down(&mut self, notice: RemoteDown) {
        self.downs
            .push(format!("{} is down: {}", notice.pid, notice.reason));
    }

    #[handle]
    fn downs(&mut self, _: Downs) -> Vec<String> {
        self.downs.clone()
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let (cluster, endpoint) = ("example", format!("tls/127.0.0.1:{port}"));
    // The cluster's CA, and a certificate per node (files, in a real deployment).
    let ca = ClusterCa::new("example-ca")?;
    let config = |name: &str| -> Result<NodeConfig, Box<dyn Error>> {
        let cert = ca.node(name, 1)?;
        let ca = ca.certificate_pem().into_bytes();
        let config = NodeConfig::new(cluster);
        Ok(config.tls(cert.certificate.into_bytes(), cert.key.into_bytes(), ca))
    };
    let b = Node::start(config("bank")?.listen([endpoint.as_str()]))?;
    let a = config("teller")?.listen(Vec::<String>::new()); // connects out only
    let a = Node::start(a.connect([endpoint]))?;
    let events = a.events();
    wait_for("the nodes to meet", || a.members().contains(&b.id()))?;
    println!(
        "A {} ({:?}) sees B {} ({:?}) up, over TLS",
        a.id(),
        a.name().unwrap_or("?"),
        b.id(),
        a.peer_name(b.id()).unwrap_or_default()
    );

    // Node B: the account, exported (what it accepts from other nodes) and named.
    let (rt_a, rt_b) = (Runtime::new(), Runtime::new());
    let account = rt_b.spawn(Account { cents: 0 });
    let pid = b
        .export(&account)
        .accept::<Deposit>()
        .answer::<Balance>()
        .build()?;
    b.register("account", pid)?;

    // Node A: finds it by name (every node holds the registry), posts, asks, monitors.
    wait_for("the name to reach A", || {
        a.whereis::<Deposit>("account").is_some()
    })?;
    let deposits = a.whereis::<Deposit>("account").ok_or("no account")?;
    for cents in [100, 250, 50] {
        deposits.post(Deposit(cents))?; // never blocks; in order from one sender
    }
    let balance = a.remote::<Balance>(pid);
    let teller = rt_a.spawn(Teller {
        account: balance.clone(),
        downs: Vec::new(),
    });
    a.monitor(pid, teller.recipient()); // the teller is told when the account ends
    println!("A: call {pid}: balance {}", balance.call(Balance)?);
    println!("A: ask from a process: balance {}", teller.call(Audit)?);

    account.exit(ExitReason::Failed(Failure::new("closed by the bank"))); // on B
    wait_for("the monitor", || {
        teller.call(Downs).is_ok_and(|d| !d.is_empty())
    })?;
    println!("A: monitor: {}", teller.call(Downs)?.join("; "));
    wait_for("the name to go", || {
        a.whereis::<Deposit>("account").is_none()
    })?;
    println!("A: the name went with the process");

    rt_b.shutdown_graceful();
    b.shutdown()?;
    while let Ok(event) = events.recv_timeout(Duration::from_secs(10)) {
        if let NodeEvent::Down { node, reason } = event {
            println!("A: node {node} is down: {reason:?}");
            break;
        }
    }
    rt_a.shutdown_graceful();
    Ok(a.shutdown()?)
}

/// Polls `ok` until it holds, for at most 10 s.
fn wait_for(what: &str, mut ok: impl FnMut() -> bool) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ok() {
        if Instant::now() > deadline {
            return Err(format!("waited 10 s for {what}"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}
