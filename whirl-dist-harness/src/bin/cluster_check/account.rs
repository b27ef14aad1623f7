//! The service each node runs: an account, its messages, what each node counts of it, and
//! how a node starts and registers it.

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::thread;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use whirl::prelude::*;
use whirl_dist::{Node, NodeConfig, Pid, Remote, Request};

use crate::settings::{ACCOUNT_KIND, SETUP_DEADLINE};

/// A deposit, in cents. Posted.
#[derive(Message, Serialize, Deserialize, Debug)]
pub struct Deposit(pub i64);

impl Remote for Deposit {
    const TAG: &'static str = "cluster_check.Deposit/1";
}

/// The account's balance. Asked.
#[derive(Message, Serialize, Deserialize, Debug)]
pub struct Balance;

impl Remote for Balance {
    const TAG: &'static str = "cluster_check.Balance/1";
}

impl Request for Balance {
    type Reply = i64;
}

/// Holds the account's worker for the given milliseconds (so that deposits queue up behind it,
/// and the migration carries a queue). Posted.
#[derive(Message, Serialize, Deserialize, Debug)]
pub struct Pause(pub u64);

impl Remote for Pause {
    const TAG: &'static str = "cluster_check.Pause/1";
}

/// Deposits handled by the accounts of this OS process, that is of this node (one node per
/// process). A process-wide counter rather than a field of the account, so that it stays
/// with the node when an account migrates: each deposit is counted once, where it was handled.
#[whirl::allow_shared(
    reason = "a statistic of this OS process: the demo's accounting reads it, no process does"
)]
pub static DEPOSITS_HANDLED: AtomicU64 = AtomicU64::new(0);

/// The service each node runs. Its state is what a migration moves.
#[process]
#[derive(Serialize, Deserialize, Debug)]
pub struct Account {
    pub owner: String,
    pub balance: i64,
    pub ops: u64,
}

#[process]
impl Account {
    #[handle]
    pub fn deposit(&mut self, Deposit(cents): Deposit) {
        self.balance += cents;
        self.ops += 1;
        DEPOSITS_HANDLED.fetch_add(1, SeqCst);
    }

    #[handle]
    pub fn read_balance(&mut self, _: Balance) -> i64 {
        self.balance
    }

    #[handle]
    pub fn pause(&mut self, Pause(ms): Pause) {
        thread::sleep(Duration::from_millis(ms));
    }
}

/// The registry name of node `node`'s account.
pub fn account_name(node: &str) -> String {
    format!("account-{node}")
}

/// Spawns node `node`'s account, exports it and registers it cluster-wide.
pub fn start_account(
    runtime: &Runtime,
    node: &Node,
    label: &str,
) -> Result<(Addr<Account>, Pid), String> {
    // Accounts may move to and from this node (migration restores them in its default group).
    node.accept_migrations::<Account, _>(ACCOUNT_KIND, runtime.default_group(), |export| {
        export
            .accept::<Deposit>()
            .accept::<Pause>()
            .answer::<Balance>()
    })
    .map_err(|e| format!("cannot accept migrations: {e}"))?;
    let account = runtime.spawn(Account {
        owner: label.to_owned(),
        balance: 0,
        ops: 0,
    });
    let pid = node
        .export(&account)
        .accept::<Deposit>()
        .accept::<Pause>()
        .answer::<Balance>()
        .build()
        .map_err(|e| format!("cannot export the account: {e}"))?;
    node.register(&account_name(label), pid)
        .map_err(|e| format!("cannot register the account: {e}"))?;
    Ok((account, pid))
}

/// Starts node `label` of `cluster` listening on the loopback `port`, connecting to `connect`,
/// over mutual TLS, with its certificate from [`certs_dir`](crate::util::certs_dir).
pub fn start_node(
    cluster: &str,
    label: &str,
    port: u16,
    connect: &[String],
    lease: Duration,
) -> Result<Node, String> {
    let dir = crate::util::certs_dir(cluster);
    Node::start(
        NodeConfig::new(cluster)
            .tls(
                dir.join(format!("{label}.pem")),
                dir.join(format!("{label}.key")),
                dir.join("ca.pem"),
            )
            .listen([endpoint(port)])
            .connect(connect.iter().cloned())
            .lease(lease)
            .reconnect_max(Duration::from_millis(500)),
    )
    .map_err(|e| format!("cannot start the node: {e}"))
}

pub fn endpoint(port: u16) -> String {
    format!("tls/127.0.0.1:{port}")
}

/// Waits until `node` sees `peers` other nodes Up.
pub fn wait_for_peers(node: &Node, peers: usize, deadline: Instant) -> Result<(), String> {
    while node.members().len() < peers {
        if Instant::now() >= deadline {
            return Err(format!(
                "saw {} of {peers} peers Up within {SETUP_DEADLINE:?}",
                node.members().len()
            ));
        }
        thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}
