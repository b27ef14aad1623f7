//! Three whirl nodes as three OS processes on loopback, with whirl-dist: a registry lookup,
//! remote asks, deposits flowing between the nodes, one node killed with SIGKILL and its Down
//! seen, and every deposit accounted for, summed over the nodes.
//!
//! ```text
//! cargo run --release -p examples --bin cluster_demo
//! ```
//!
//! What it does:
//!
//! 1. This process runs node **A** (a whirl `Runtime` and a `whirl_dist::Node` on 127.0.0.1)
//!    and starts two children of its own binary (`cluster_demo --child b|c ...`) running nodes
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

use std::collections::BTreeMap;
use std::error::Error;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitCode, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::SeqCst};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use clap::Parser;
use serde::{Deserialize, Serialize};
use whirl::prelude::*;
use whirl_dist::{
    BounceReason, DistCounts, Node, NodeConfig, NodeEvent, NodeId, Pid, Remote, RemoteAddr,
    RemoteExit, RemotePostError, Request,
};

/// The migration kind of accounts: the same name on every node.
const ACCOUNT_KIND: &str = "cluster_demo.Account/1";
/// How long setting up may take (a child starting, the mesh forming, a name appearing).
const SETUP_DEADLINE: Duration = Duration::from_secs(20);
/// How long a child may take to answer a command.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// How long one remote ask may take.
const ASK_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a flow may take to settle (its account's balance equal to the deposits accepted).
const SETTLE_DEADLINE: Duration = Duration::from_secs(5);
/// How long a node's counters may take to come to rest for a report.
const REST_DEADLINE: Duration = Duration::from_secs(5);
/// How long the survivors may take to see the killed node Down.
const DOWN_DEADLINE: Duration = Duration::from_secs(5);
/// After a flow into B settled, time for B's last acknowledgements to come back (whirl-dist
/// acknowledges every 5 ms), so that nothing sent to B is unacknowledged when it is killed.
const ACK_GRACE: Duration = Duration::from_millis(100);
/// The whole demo, as a last resort against a hang: the parent exits (its children see their
/// stdin close and shut down).
const WATCHDOG: Duration = Duration::from_secs(120);

/// Remote asks timed in step 2.
const ASKS: usize = 300;
/// Posts to B's account after the kill (all refused at once).
const POSTS_AFTER_KILL: u64 = 100;
/// A flow re-resolves its registry name every this many posts.
const REFRESH_EVERY: u64 = 100;
/// A flow paces itself after every this many posts.
const PACE_BATCH: u64 = 20;

// ---------------------------------------------------------------------------------------------
// Command line

/// Three whirl nodes as OS processes on loopback: registry, remote asks, SIGKILL, accounting.
#[derive(Parser, Debug)]
#[command(name = "cluster_demo")]
struct Args {
    /// Deposits per second in each flow (A → account-b, A → account-c, C → account-a).
    #[arg(long, default_value_t = 2_000)]
    rate: u64,
    /// The link lease in milliseconds (how long a silent peer lives).
    #[arg(long, default_value_t = 1_000)]
    lease_ms: u64,
    /// How long the flows run before the migration, after it, and after the kill (ms).
    #[arg(long, default_value_t = 1_000)]
    phase_ms: u64,
    /// Internal: run as the child node of this name.
    #[arg(long, hide = true)]
    child: Option<String>,
    /// Internal: the cluster's name.
    #[arg(long, hide = true)]
    cluster: Option<String>,
    /// Internal: the loopback port the child listens on.
    #[arg(long, hide = true)]
    listen: Option<u16>,
    /// Internal: the endpoints the child connects to.
    #[arg(long, hide = true, value_delimiter = ',')]
    connect: Vec<String>,
    /// Internal: how many peers the child waits for before it is ready.
    #[arg(long, hide = true, default_value_t = 2)]
    peers: usize,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match args.child.clone() {
        Some(name) => match child_main(&name, &args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("cluster_demo (node {name}): {e}");
                ExitCode::FAILURE
            }
        },
        None => {
            thread::spawn(|| {
                thread::sleep(WATCHDOG);
                eprintln!("cluster_demo: FAILED: still running after {WATCHDOG:?}, giving up");
                std::process::exit(3);
            });
            match parent_main(&args) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("cluster_demo: FAILED: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The service: an account, its messages, and what each node counts of it

/// A deposit, in cents. Posted.
#[derive(Message, Serialize, Deserialize, Debug)]
struct Deposit(i64);

impl Remote for Deposit {
    const TAG: &'static str = "cluster_demo.Deposit/1";
}

/// The account's balance. Asked.
#[derive(Message, Serialize, Deserialize, Debug)]
struct Balance;

impl Remote for Balance {
    const TAG: &'static str = "cluster_demo.Balance/1";
}

impl Request for Balance {
    type Reply = i64;
}

/// Holds the account's worker for the given milliseconds (so that deposits queue up behind it,
/// and the migration carries a queue). Posted.
#[derive(Message, Serialize, Deserialize, Debug)]
struct Pause(u64);

impl Remote for Pause {
    const TAG: &'static str = "cluster_demo.Pause/1";
}

/// Deposits handled by the accounts of this OS process, that is of this node (one node per
/// process). A process-wide counter rather than a field of the account, so that it stays
/// with the node when an account migrates: each deposit is counted once, where it was handled.
#[whirl::allow_shared(
    reason = "a statistic of this OS process: the demo's accounting reads it, no process does"
)]
static DEPOSITS_HANDLED: AtomicU64 = AtomicU64::new(0);

/// The service each node runs. Its state is what a migration moves.
#[process]
#[derive(Serialize, Deserialize, Debug)]
struct Account {
    owner: String,
    balance: i64,
    ops: u64,
}

#[process]
impl Account {
    #[handle]
    fn deposit(&mut self, Deposit(cents): Deposit) {
        self.balance += cents;
        self.ops += 1;
        DEPOSITS_HANDLED.fetch_add(1, SeqCst);
    }

    #[handle]
    fn read_balance(&mut self, _: Balance) -> i64 {
        self.balance
    }

    #[handle]
    fn pause(&mut self, Pause(ms): Pause) {
        thread::sleep(Duration::from_millis(ms));
    }
}

/// The registry name of node `node`'s account.
fn account_name(node: &str) -> String {
    format!("account-{node}")
}

/// Spawns node `node`'s account, exports it and registers it cluster-wide.
fn start_account(
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

/// Starts a node of `cluster` listening on the loopback `port`, connecting to `connect`.
fn start_node(
    cluster: &str,
    port: u16,
    connect: &[String],
    lease: Duration,
) -> Result<Node, String> {
    Node::start(
        NodeConfig::new(cluster)
            .listen([endpoint(port)])
            .connect(connect.iter().cloned())
            .lease(lease)
            .reconnect_max(Duration::from_millis(500)),
    )
    .map_err(|e| format!("cannot start the node: {e}"))
}

fn endpoint(port: u16) -> String {
    format!("tcp/127.0.0.1:{port}")
}

/// Waits until `node` sees `peers` other nodes Up.
fn wait_for_peers(node: &Node, peers: usize, deadline: Instant) -> Result<(), String> {
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

// ---------------------------------------------------------------------------------------------
// Flows of deposits, and the one place where registry names become remote addresses

/// A flow of deposits from one node to one registered account, counted at the sender.
#[derive(Default)]
struct FlowCounts {
    posted: AtomicU64,
    posted_cents: AtomicI64,
    /// Refused at the sender because the credit window was full (`Rejected`).
    refused_full: AtomicU64,
    /// Refused at the sender because the node is Down (`Terminated`).
    refused_down: AtomicU64,
    /// Refused at the sender for another reason (encoding, size).
    refused_other: AtomicU64,
    refused_cents: AtomicI64,
    /// Given back by the receiving node (to the bounce handler).
    bounced: AtomicU64,
    bounced_cents: AtomicI64,
    bounce_reasons: Mutex<BTreeMap<String, u64>>,
    /// How many times the name resolved to another process than before.
    moves: AtomicU64,
    /// Where the name resolved last.
    current: Mutex<Option<Pid>>,
}

impl FlowCounts {
    /// The cents posted and neither refused nor bounced: what the account should hold once
    /// everything arrived (every deposit is handled, dead-lettered or in doubt otherwise).
    fn accepted_cents(&self) -> i64 {
        self.posted_cents.load(SeqCst)
            - self.refused_cents.load(SeqCst)
            - self.bounced_cents.load(SeqCst)
    }

    fn bounce(&self, reason: BounceReason, cents: i64) {
        *lock(&self.bounce_reasons)
            .entry(format!("{reason:?}"))
            .or_default() += 1;
        self.bounced_cents.fetch_add(cents, SeqCst);
        self.bounced.fetch_add(1, SeqCst);
    }

    fn current(&self) -> Option<Pid> {
        *lock(&self.current)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What a flow counted, as its sender reports it.
#[derive(Serialize, Deserialize, Debug, Clone)]
struct FlowReport {
    /// The sending node.
    from: String,
    /// The registry name posted to.
    to: String,
    /// Where the name resolved last.
    pid: String,
    posted: u64,
    refused_full: u64,
    refused_down: u64,
    refused_other: u64,
    bounced: u64,
    bounce_reasons: BTreeMap<String, u64>,
    moves: u64,
    accepted_cents: i64,
    /// The account's balance when the flow settled, if it was asked.
    balance: Option<i64>,
}

impl FlowReport {
    fn refused(&self) -> u64 {
        self.refused_full + self.refused_down + self.refused_other
    }
}

/// A registered account as seen from one node: its name, the process the name resolves to
/// now, and the addresses to post deposits and ask balances there. The one place where the
/// demo turns a registry name into [`RemoteAddr`]s: [`Target::refresh`] looks the name up
/// again and, when it resolves to another process (the account migrated), makes new
/// addresses. The old deposit addresses are kept (not dropped) while the target lives, so
/// that bounces of deposits sent through them still reach the flow's bounce handler.
struct Target {
    name: String,
    counts: Arc<FlowCounts>,
    pid: Pid,
    deposits: RemoteAddr<Deposit>,
    balance: RemoteAddr<Balance>,
    retired: Vec<RemoteAddr<Deposit>>,
}

impl Target {
    /// Looks `name` up in `node`'s registry, waiting for it until `deadline`.
    fn resolve(node: &Node, name: &str, deadline: Instant) -> Result<Target, String> {
        let found = loop {
            if let Some(addr) = node.whereis::<Deposit>(name) {
                break addr;
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "{name} is not in node {}'s registry in time",
                    short(node.id())
                ));
            }
            thread::sleep(Duration::from_millis(5));
        };
        let counts = Arc::new(FlowCounts::default());
        let pid = found.pid();
        *lock(&counts.current) = Some(pid);
        Ok(Target {
            name: name.to_owned(),
            deposits: with_bounce_handler(found, &counts),
            balance: node.remote::<Balance>(pid),
            counts,
            pid,
            retired: Vec::new(),
        })
    }

    /// Looks the name up again; if it resolves to another process now, posts and asks go
    /// there from now on. Returns whether it moved. A name that vanished leaves the target
    /// where it was (its posts then come back `Terminated` or bounce, and are counted).
    fn refresh(&mut self, node: &Node) -> bool {
        let Some(found) = node.whereis::<Deposit>(&self.name) else {
            return false;
        };
        let pid = found.pid();
        if pid == self.pid {
            return false;
        }
        let old = std::mem::replace(&mut self.deposits, with_bounce_handler(found, &self.counts));
        self.retired.push(old);
        self.balance = node.remote::<Balance>(pid);
        self.pid = pid;
        *lock(&self.counts.current) = Some(pid);
        self.counts.moves.fetch_add(1, SeqCst);
        true
    }

    /// Posts one deposit and counts what became of it at the sender.
    fn post(&mut self, node: &Node, cents: i64) {
        self.counts.posted.fetch_add(1, SeqCst);
        self.counts.posted_cents.fetch_add(cents, SeqCst);
        let Err(e) = self.deposits.post(Deposit(cents)) else {
            return;
        };
        self.counts.refused_cents.fetch_add(cents, SeqCst);
        let down = matches!(e, RemotePostError::Terminated(_));
        match e {
            RemotePostError::Rejected(_) => &self.counts.refused_full,
            RemotePostError::Terminated(_) => &self.counts.refused_down,
            _ => &self.counts.refused_other,
        }
        .fetch_add(1, SeqCst);
        if down {
            // The process may have moved away from a node that is gone.
            self.refresh(node);
        }
    }

    /// Asks the account's balance.
    fn ask_balance(&self, timeout: Duration) -> Result<i64, String> {
        self.balance
            .call(Balance, timeout)
            .map_err(|e| format!("asking {}'s balance: {e}", self.name))
    }

    /// Waits until the account's balance equals the deposits accepted (call it with the flow
    /// paused or stopped); returns the balance. The ask travels behind this node's deposits
    /// to the process (per-sender order), and the receiving node sends the bounces of those
    /// deposits before the answer, so a mismatch after the answer is real unless the account
    /// moved meanwhile; hence the retries until `deadline`.
    fn settle(&mut self, node: &Node, deadline: Instant) -> Result<i64, String> {
        loop {
            self.refresh(node);
            let left = deadline.saturating_duration_since(Instant::now());
            let answer = self.ask_balance(left.clamp(Duration::from_millis(10), ASK_TIMEOUT));
            let expected = self.counts.accepted_cents();
            let problem = match answer {
                Ok(balance) if balance == expected => return Ok(balance),
                Ok(balance) => format!("balance {balance}, deposits accepted {expected}"),
                Err(e) => e,
            };
            if Instant::now() >= deadline {
                return Err(format!("{} did not settle: {problem}", self.name));
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    fn report(&self, from: &str, balance: Option<i64>) -> FlowReport {
        let c = &self.counts;
        FlowReport {
            from: from.to_owned(),
            to: self.name.clone(),
            pid: self.pid.to_string(),
            posted: c.posted.load(SeqCst),
            refused_full: c.refused_full.load(SeqCst),
            refused_down: c.refused_down.load(SeqCst),
            refused_other: c.refused_other.load(SeqCst),
            bounced: c.bounced.load(SeqCst),
            bounce_reasons: lock(&c.bounce_reasons).clone(),
            moves: c.moves.load(SeqCst),
            accepted_cents: c.accepted_cents(),
            balance,
        }
    }
}

/// `addr` with a bounce handler that counts into `counts`.
fn with_bounce_handler(addr: RemoteAddr<Deposit>, counts: &Arc<FlowCounts>) -> RemoteAddr<Deposit> {
    let counts = Arc::clone(counts);
    addr.on_bounce(move |undelivered| counts.bounce(undelivered.reason, undelivered.msg.0))
}

/// What the controller of a flow asks its thread.
enum LoadCmd {
    /// Pause, settle (balance = deposits accepted), answer, go on.
    Checkpoint(Sender<Result<FlowReport, String>>),
    Stop,
}

/// A running flow: a thread posting deposits to a registered account at a steady rate.
struct Load {
    from: String,
    name: String,
    counts: Arc<FlowCounts>,
    cmds: Sender<LoadCmd>,
    thread: JoinHandle<Target>,
}

impl Load {
    /// Resolves `name` on `node` and starts posting to it, `rate` deposits a second.
    fn start(node: &Arc<Node>, from: &str, name: &str, rate: u64) -> Result<Load, String> {
        let target = Target::resolve(node, name, Instant::now() + SETUP_DEADLINE)?;
        let counts = Arc::clone(&target.counts);
        let (cmds, rx) = mpsc::channel();
        let node = Arc::clone(node);
        let thread = thread::Builder::new()
            .name(format!("flow-{name}"))
            .spawn({
                let from = from.to_owned();
                move || run_load(&node, &from, target, rate.max(1), &rx)
            })
            .map_err(|e| format!("cannot start the flow to {name}: {e}"))?;
        Ok(Load {
            from: from.to_owned(),
            name: name.to_owned(),
            counts,
            cmds,
            thread,
        })
    }

    /// Whether the flow's account is on node `id`: where the flow's last lookup found it, or
    /// where the registry says it is now (a flow looks again only every [`REFRESH_EVERY`]
    /// posts).
    fn goes_to(&self, node: &Node, id: NodeId) -> bool {
        let registered = node.whereis_all(&self.name).first().map(|pid| pid.node());
        self.counts.current().map(Pid::node) == Some(id) || registered == Some(id)
    }

    /// Pauses the flow, checks its account's balance equals the deposits accepted so far,
    /// and resumes it.
    fn checkpoint(&self) -> Result<FlowReport, String> {
        let (tx, rx) = mpsc::channel();
        self.cmds
            .send(LoadCmd::Checkpoint(tx))
            .map_err(|_| format!("the flow to {} has stopped", self.name))?;
        rx.recv_timeout(SETTLE_DEADLINE + ASK_TIMEOUT + Duration::from_secs(1))
            .map_err(|_| format!("the flow to {} did not answer its checkpoint", self.name))?
    }

    /// Stops the flow and settles it; returns the target (to post more through it) and the
    /// flow's report with the settled balance.
    fn stop(self, node: &Node) -> Result<(Target, FlowReport), String> {
        let from = self.from.clone();
        let mut target = self.halt()?;
        let balance = target.settle(node, Instant::now() + SETTLE_DEADLINE)?;
        let report = target.report(&from, Some(balance));
        Ok((target, report))
    }

    /// Stops the flow's thread; returns its target.
    fn halt(self) -> Result<Target, String> {
        // If the thread is gone already, the join below says how.
        let _ = self.cmds.send(LoadCmd::Stop);
        self.thread
            .join()
            .map_err(|_| format!("the flow to {} panicked", self.name))
    }
}

/// The flow's thread: posts `rate` deposits a second (of 1 to 7 cents), re-resolving the
/// name every [`REFRESH_EVERY`] posts, until told to stop.
fn run_load(
    node: &Node,
    from: &str,
    mut target: Target,
    rate: u64,
    cmds: &Receiver<LoadCmd>,
) -> Target {
    let mut paced_from = (Instant::now(), 0u64);
    let mut seq = 0u64;
    loop {
        match cmds.try_recv() {
            Ok(LoadCmd::Checkpoint(reply)) => {
                let settled = target.settle(node, Instant::now() + SETTLE_DEADLINE);
                let _ = reply.send(settled.map(|balance| target.report(from, Some(balance))));
                paced_from = (Instant::now(), seq);
            }
            Ok(LoadCmd::Stop) | Err(TryRecvError::Disconnected) => return target,
            Err(TryRecvError::Empty) => {}
        }
        for _ in 0..PACE_BATCH {
            if seq % REFRESH_EVERY == 0 {
                target.refresh(node);
            }
            let cents = 1 + i64::try_from(seq % 7).unwrap_or(0);
            target.post(node, cents);
            seq += 1;
        }
        let due = paced_from.0 + Duration::from_secs_f64((seq - paced_from.1) as f64 / rate as f64);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            thread::sleep(wait);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// What a node reports of itself

/// A node's counters once they are at rest: its runtime's, its distribution layer's, and the
/// deposits its accounts handled.
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
struct NodeReport {
    label: String,
    id: String,
    /// The counters did not change around a reading, the runtime was quiescent, and every
    /// frame received was delivered or bounced.
    at_rest: bool,
    deposits_handled: u64,
    rt_posted: u64,
    rt_handled: u64,
    rt_rejected: u64,
    rt_dead_lettered: u64,
    rt_moved: u64,
    rt_queued: u64,
    sent: u64,
    refused: u64,
    received: u64,
    delivered: u64,
    bounced: u64,
    returned: u64,
    returned_unrouted: u64,
    in_doubt: u64,
    bounce_overflow: u64,
    control_overflow: u64,
    malformed: u64,
    from_quarantined: u64,
}

impl NodeReport {
    /// Messages this node dead-lettered: left in the inbox of a process that ended, bounces
    /// that found no way back, bounces that came back without a handler. The runtime counts
    /// every message, not only deposits; in this demo the accounts are the only processes
    /// that receive anything, and no `Balance` ask is pending when one of them ends, so every
    /// dead letter here is a deposit.
    fn dead_lettered(&self) -> u64 {
        self.rt_dead_lettered + self.bounce_overflow + self.returned_unrouted
    }
}

/// Reads `node`'s and `runtime`'s counters once they are at rest (or after
/// [`REST_DEADLINE`], with `at_rest: false`).
fn node_report(label: &str, node: &Node, runtime: &Runtime) -> NodeReport {
    let deadline = Instant::now() + REST_DEADLINE;
    loop {
        let before = node.counts();
        let handled = DEPOSITS_HANDLED.load(SeqCst);
        let rt = runtime.counts();
        let dist: DistCounts = node.counts();
        let at_rest = before == dist
            && handled == DEPOSITS_HANDLED.load(SeqCst)
            && rt.is_quiescent()
            && dist.received == dist.delivered + dist.bounced + dist.redirected;
        if at_rest || Instant::now() >= deadline {
            return NodeReport {
                label: label.to_owned(),
                id: node.id().to_string(),
                at_rest,
                deposits_handled: handled,
                rt_posted: rt.posted,
                rt_handled: rt.handled,
                rt_rejected: rt.rejected,
                rt_dead_lettered: rt.dead_lettered,
                rt_moved: rt.moved,
                rt_queued: rt.queued(),
                sent: dist.sent,
                refused: dist.refused,
                received: dist.received,
                delivered: dist.delivered,
                bounced: dist.bounced,
                returned: dist.returned,
                returned_unrouted: dist.returned_unrouted,
                in_doubt: dist.in_doubt,
                bounce_overflow: dist.bounce_overflow,
                control_overflow: dist.control_overflow,
                malformed: dist.malformed,
                from_quarantined: dist.from_quarantined,
            };
        }
        thread::sleep(Duration::from_millis(5));
    }
}

fn to_json<T: Serialize>(value: &T) -> Result<String, String> {
    serde_json::to_string(value).map_err(|e| format!("cannot encode a report: {e}"))
}

fn from_json<T: for<'de> Deserialize<'de>>(what: &str, text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| format!("malformed {what} {text:?}: {e}"))
}

// ---------------------------------------------------------------------------------------------
// The child: nodes B and C

/// One line to the parent. A parent that is gone cannot read it; the child notices when its
/// stdin closes.
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn child_main(label: &str, args: &Args) -> Result<(), String> {
    let cluster = args.cluster.as_deref().ok_or("--child needs --cluster")?;
    let port = args.listen.ok_or("--child needs --listen")?;
    let runtime = Runtime::new();
    let node = Arc::new(start_node(
        cluster,
        port,
        &args.connect,
        Duration::from_millis(args.lease_ms),
    )?);
    let events = node.events();
    thread::spawn(move || {
        for event in events {
            match event {
                NodeEvent::Up(id) => say(&format!("EVENT UP {id}")),
                NodeEvent::Down { node, .. } => say(&format!("EVENT DOWN {node}")),
                NodeEvent::ResurrectionRefused(id) => say(&format!("EVENT REFUSED {id}")),
                other => say(&format!("EVENT OTHER {other:?}")),
            }
        }
    });
    let (account, pid) = start_account(&runtime, &node, label)?;
    // Ready once the others are Up here: their mailboxes are then known, so the first
    // acknowledgements, answers and bounces have a route.
    wait_for_peers(&node, args.peers, Instant::now() + SETUP_DEADLINE)?;
    say(&format!("READY {} {}", node.id(), pid.local()));

    let mut loads: BTreeMap<String, Load> = BTreeMap::new();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let words: Vec<&str> = line.split_whitespace().collect();
        let answer = match words.as_slice() {
            ["LOAD", name, rate] => rate
                .parse::<u64>()
                .map_err(|_| format!("not a rate: {rate:?}"))
                .and_then(|rate| Load::start(&node, &label.to_uppercase(), name, rate))
                .map(|load| {
                    loads.insert((*name).to_owned(), load);
                    "OK".to_owned()
                }),
            ["CHECK", name] => match loads.get(*name) {
                Some(load) => load
                    .checkpoint()
                    .and_then(|report| to_json(&report))
                    .map(|json| format!("CHECKED {json}")),
                None => Err(format!("no flow to {name}")),
            },
            ["STOP", name] => match loads.remove(*name) {
                Some(load) => load
                    .stop(&node)
                    .and_then(|(_, report)| to_json(&report))
                    .map(|json| format!("STOPPED {json}")),
                None => Err(format!("no flow to {name}")),
            },
            ["REPORT"] => to_json(&node_report(&label.to_uppercase(), &node, &runtime))
                .map(|json| format!("REPORT {json}")),
            ["MIGRATE", name, to] => to
                .parse::<NodeId>()
                .map_err(|e| e.to_string())
                .and_then(|to| migrate_account(&node, &runtime, name, &account, to))
                .map(|(pid, queued)| format!("MIGRATED {} {} {queued}", pid.node(), pid.local())),
            _ => Err(format!("unknown command {line:?}")),
        };
        say(&answer.unwrap_or_else(|e| format!("ERR {e}")));
    }

    // Stdin closed: the parent is done, or gone. Shut down, within bounds.
    thread::spawn(|| {
        thread::sleep(Duration::from_secs(10));
        eprintln!("cluster_demo: a child took over 10 s to shut down; exiting");
        std::process::exit(4);
    });
    for (_, load) in loads {
        let _ = load.halt();
    }
    let node = Arc::try_unwrap(node).map_err(|_| "the node is still shared at shutdown")?;
    let shutdown = node.shutdown();
    let _ = runtime.shutdown_timeout(Duration::from_secs(2));
    say("BYE");
    shutdown.map_err(|e| format!("node shutdown: {e}"))
}

/// The child's half of the migration: moves this node's account `name` (its process is
/// `account`) to node `to`, with its state, its queue, its name and its watchers, and returns
/// its pid there with the number of messages that moved with its queue. Run by the
/// `MIGRATE <name> <node-id>` command (see [`migrate_step`]).
fn migrate_account(
    node: &Node,
    runtime: &Runtime,
    name: &str,
    account: &Addr<Account>,
    to: NodeId,
) -> Result<(Pid, u64), String> {
    let before = runtime.counts().moved;
    let pid = node
        .migrate(account, to, REQUEST_TIMEOUT)
        .map_err(|e| format!("migrating {name} to node {}: {e}", short(to)))?;
    Ok((pid, runtime.counts().moved - before))
}

// ---------------------------------------------------------------------------------------------
// The parent's view of a child

/// A child node process: its stdin (commands; closing it asks the child to shut down), its
/// answers, and its membership events with the time they arrived. Killed when dropped, if
/// still running: no orphans on an error path.
struct ChildProc {
    label: &'static str,
    child: Child,
    stdin: Option<ChildStdin>,
    answers: Receiver<String>,
    events: Receiver<(Instant, String)>,
    /// From its `READY` line.
    id: NodeId,
    account: Pid,
}

impl ChildProc {
    /// Starts `cluster_demo --child <label>` listening on `port`, connecting to `connect`
    /// (then see [`ChildProc::ready`]).
    fn spawn(
        label: &'static str,
        cluster: &str,
        port: u16,
        connect: &[String],
        args: &Args,
    ) -> Result<ChildProc, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let mut child = Command::new(exe)
            .args(["--child", label, "--cluster", cluster])
            .args(["--listen", &port.to_string()])
            .args(["--connect", &connect.join(",")])
            .args(["--peers", "2", "--lease-ms", &args.lease_ms.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start node {label}: {e}"))?;
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("node {label} has no stdin or stdout"));
        };
        let (answers_tx, answers) = mpsc::channel();
        let (events_tx, events) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let sent = match line.strip_prefix("EVENT ") {
                    Some(event) => events_tx.send((Instant::now(), event.to_owned())).is_ok(),
                    None => answers_tx.send(line).is_ok(),
                };
                if !sent {
                    break;
                }
            }
        });
        Ok(ChildProc {
            label,
            child,
            stdin: Some(stdin),
            answers,
            events,
            id: NodeId::from_u128(0),
            account: Pid::new(NodeId::from_u128(0), 0),
        })
    }

    /// Waits for the child's `READY <node-id> <account-local-id>`: it has seen its peers Up
    /// and registered its account.
    fn ready(&mut self, deadline: Instant) -> Result<(), String> {
        let label = self.label;
        let ready = self.answer("READY", deadline)?;
        let (id, local) = ready
            .split_once(' ')
            .ok_or_else(|| format!("malformed READY from node {label}: {ready:?}"))?;
        self.id = id.parse().map_err(|e| format!("node {label}: {e}"))?;
        let local = local
            .parse()
            .map_err(|_| format!("malformed READY from node {label}: {ready:?}"))?;
        self.account = Pid::new(self.id, local);
        Ok(())
    }

    /// Sends `command` and returns the rest of the answer line that starts with `word`.
    fn request(&mut self, command: &str, word: &str) -> Result<String, String> {
        let label = self.label;
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| format!("node {label}'s stdin is closed"))?;
        writeln!(stdin, "{command}")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("cannot send {command:?} to node {label}: {e}"))?;
        self.answer(word, Instant::now() + REQUEST_TIMEOUT)
    }

    /// The rest of the next answer line that starts with `word`; other lines are echoed.
    fn answer(&self, word: &str, deadline: Instant) -> Result<String, String> {
        let label = self.label;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.answers.recv_timeout(left) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!("node {label} did not answer {word} in time"))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!("node {label} exited before answering {word}"))
                }
            };
            let (first, rest) = line.split_once(' ').unwrap_or((&line, ""));
            if first == word {
                return Ok(rest.to_owned());
            }
            if first == "ERR" {
                return Err(format!("node {label}: {rest}"));
            }
            eprintln!("  node {label} said: {line}");
        }
    }

    /// Waits for the membership event `event` (e.g. `DOWN <id>`); returns when it arrived.
    fn wait_event(&self, event: &str, deadline: Instant) -> Option<Instant> {
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            match self.events.recv_timeout(left) {
                Ok((at, line)) if line == event => return Some(at),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }

    /// Kills the child with SIGKILL (std's `Child::kill` on Unix); returns when, and how it
    /// ended.
    fn kill(&mut self) -> Result<(Instant, ExitStatus), String> {
        let at = Instant::now();
        self.child
            .kill()
            .map_err(|e| format!("cannot kill node {}: {e}", self.label))?;
        let status = self
            .child
            .wait()
            .map_err(|e| format!("cannot reap node {}: {e}", self.label))?;
        Ok((at, status))
    }

    /// Closes the child's stdin (it shuts down) and waits for it to exit successfully.
    fn finish(&mut self, grace: Duration) -> Result<(), String> {
        drop(self.stdin.take());
        let deadline = Instant::now() + grace;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => {
                    return Err(format!("node {} exited with {status}", self.label))
                }
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
                Ok(None) => {
                    return Err(format!(
                        "node {} did not shut down within {grace:?}",
                        self.label
                    ))
                }
                Err(e) => return Err(format!("cannot wait for node {}: {e}", self.label)),
            }
        }
    }
}

impl Drop for ChildProc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The parent: node A, and the demo's steps

/// Node A (this process), the two children, and what the steps share.
struct Demo {
    started: Instant,
    rate: u64,
    phase: Duration,
    node: Arc<Node>,
    runtime: Runtime,
    /// A's account (kept so its address outlives every step).
    a_account: (Addr<Account>, Pid),
    /// A's membership events, with the time each arrived.
    events: Receiver<(Instant, NodeEvent)>,
    b: ChildProc,
    c: ChildProc,
    /// A's running flows.
    loads: Vec<Load>,
    /// Flows that ended, with their final counts (A's and C's).
    flows: Vec<FlowReport>,
    /// A's flows stopped before the kill, kept to post to a dead node, with their settled
    /// balances.
    stopped: Vec<(Target, Option<i64>)>,
    /// Reports of nodes that are gone (B's, from just before its kill).
    gone: Vec<NodeReport>,
    /// Fires when A's monitor of B's account does.
    b_monitor: Receiver<(Instant, RemoteExit)>,
}

impl Demo {
    /// Step 1: node A, the children B and C, a full mesh, every account registered, and a
    /// monitor on B's account.
    fn start(args: &Args) -> Result<Demo, String> {
        let started = Instant::now();
        let lease = Duration::from_millis(args.lease_ms);
        let id = NodeId::random().map_err(|e| format!("no entropy for a cluster name: {e}"))?;
        let cluster = format!("demo-{}", &id.to_string()[..12]);
        let ports = free_ports()?;
        let runtime = Runtime::new();
        let node = Arc::new(start_node(&cluster, ports[0], &[], lease)?);
        let (events_tx, events) = mpsc::channel();
        let node_events = node.events();
        thread::spawn(move || {
            for event in node_events {
                if events_tx.send((Instant::now(), event)).is_err() {
                    break;
                }
            }
        });
        let a_account = start_account(&runtime, &node, "a")?;
        println!(
            "cluster_demo: three whirl nodes as OS processes on 127.0.0.1 (cluster {cluster}, \
             lease {} ms)",
            lease.as_millis()
        );
        // B connects to A; C to A and B: every pair is linked once.
        let mut b = ChildProc::spawn("b", &cluster, ports[1], &[endpoint(ports[0])], args)?;
        let mut c = ChildProc::spawn(
            "c",
            &cluster,
            ports[2],
            &[endpoint(ports[0]), endpoint(ports[1])],
            args,
        )?;
        let deadline = started + SETUP_DEADLINE;
        b.ready(deadline)?;
        c.ready(deadline)?;
        let up = [b.id, c.id];
        while !up.iter().all(|id| node.members().contains(id)) {
            if Instant::now() >= deadline {
                return Err(format!(
                    "node A did not see B and C Up within {SETUP_DEADLINE:?}"
                ));
            }
            thread::sleep(Duration::from_millis(5));
        }
        let mesh = started.elapsed();
        for (label, id, port, pid) in [
            ("A", node.id(), ports[0], std::process::id()),
            ("B", b.id, ports[1], b.child.id()),
            ("C", c.id, ports[2], c.child.id()),
        ] {
            println!(
                "  node {label}: {}  {}  OS pid {pid}",
                short(id),
                endpoint(port)
            );
        }
        println!(
            "mesh: A, B and C each see the other two Up, {} ms after the start",
            mesh.as_millis()
        );
        let (mon_tx, b_monitor) = mpsc::channel();
        node.monitor_with(b.account, move |reason| {
            let _ = mon_tx.send((Instant::now(), reason));
        });
        Ok(Demo {
            started,
            rate: args.rate,
            phase: Duration::from_millis(args.phase_ms),
            node,
            runtime,
            a_account,
            events,
            b,
            c,
            loads: Vec::new(),
            flows: Vec::new(),
            stopped: Vec::new(),
            gone: Vec::new(),
            b_monitor,
        })
    }

    /// Step 2: the registry as A sees it, then remote asks to C's account, timed.
    fn registry_and_asks(&self) -> Result<(), String> {
        let deadline = Instant::now() + SETUP_DEADLINE;
        let mut found = Vec::new();
        for (label, pid) in [
            ("a", self.a_account.1),
            ("b", self.b.account),
            ("c", self.c.account),
        ] {
            let name = account_name(label);
            let target = Target::resolve(&self.node, &name, deadline)?;
            if target.pid != pid {
                return Err(format!(
                    "the registry gives {} for {name}, its node said {pid}",
                    target.pid
                ));
            }
            found.push(format!("{name} → {}", short_pid(target.pid)));
        }
        println!("registry (looked up on A): {}", found.join(", "));

        let c_account = Target::resolve(&self.node, &account_name("c"), deadline)?;
        let mut rtts = Vec::with_capacity(ASKS);
        for _ in 0..ASKS {
            let asked = Instant::now();
            let balance = c_account.ask_balance(ASK_TIMEOUT)?;
            rtts.push(asked.elapsed());
            if balance != 0 {
                return Err(format!(
                    "account-c's balance is {balance} before any deposit"
                ));
            }
        }
        rtts.sort();
        println!(
            "remote asks: {ASKS} Balance asks A → account-c (found by whereis): p50 {}, p99 {}, \
             max {}",
            ms(percentile(&rtts, 50.0)),
            ms(percentile(&rtts, 99.0)),
            ms(rtts.last().copied().unwrap_or_default())
        );
        Ok(())
    }

    /// Step 3: deposits flow A → account-b, A → account-c and C → account-a.
    fn start_load(&mut self) -> Result<(), String> {
        let rate = self.rate;
        for name in ["account-b", "account-c"] {
            self.loads.push(Load::start(&self.node, "A", name, rate)?);
        }
        self.c.request(&format!("LOAD account-a {rate}"), "OK")?;
        println!(
            "load: A → account-b, A → account-c, C → account-a, {rate} deposits/s each (1 to 7 \
             cents), posted by registry name with bounce handlers"
        );
        Ok(())
    }

    /// Pauses each flow in turn and checks its account's balance equals the deposits it had
    /// accepted.
    fn checkpoint(&mut self) -> Result<(), String> {
        let mut reports = Vec::new();
        for load in &self.loads {
            reports.push(load.checkpoint()?);
        }
        let answer = self.c.request("CHECK account-a", "CHECKED")?;
        reports.push(from_json("checkpoint", &answer)?);
        for r in &reports {
            println!(
                "checkpoint: {} → {} balance {} = the {} cents of the {} deposits accepted so far \
                 ({} posted, {} refused, {} bounced)",
                r.from,
                r.to,
                r.balance.unwrap_or_default(),
                r.accepted_cents,
                r.posted - r.refused() - r.bounced,
                r.posted,
                r.refused(),
                r.bounced
            );
        }
        Ok(())
    }

    /// A's running flow to the account registered as `name`.
    fn load(&self, name: &str) -> Result<&Load, String> {
        self.loads
            .iter()
            .find(|l| l.name == name)
            .ok_or_else(|| format!("A has no flow to {name}"))
    }

    /// Step 5: drain what flows into B, take B's report, SIGKILL it, and watch the survivors
    /// see it Down; then post to its account, which is refused at once.
    fn kill_b(&mut self) -> Result<(), String> {
        let victim = self.b.id;
        // Every flow whose account lives on B now (account-b; account-c too once migrated
        // there) stops and settles, so nothing sent to B is unacknowledged at the kill. C's
        // only flow goes to A.
        let (into_b, others): (Vec<Load>, Vec<Load>) = std::mem::take(&mut self.loads)
            .into_iter()
            .partition(|l| l.goes_to(&self.node, victim));
        self.loads = others;
        for load in into_b {
            let (target, report) = load.stop(&self.node)?;
            println!(
                "kill: flow A → {} stopped and settled: balance {} = deposits accepted ({} \
                 posted, {} refused, {} bounced)",
                report.to,
                report.balance.unwrap_or_default(),
                report.posted,
                report.refused(),
                report.bounced
            );
            self.stopped.push((target, report.balance));
        }
        thread::sleep(ACK_GRACE);
        let report: NodeReport = from_json("report", &self.b.request("REPORT", "REPORT")?)?;
        println!(
            "kill: B reports {} deposits handled, {} messages queued, {} dead-lettered, at rest: \
             {}",
            report.deposits_handled, report.rt_queued, report.rt_dead_lettered, report.at_rest
        );
        self.gone.push(report);
        if let Ok((_, reason)) = self.b_monitor.try_recv() {
            return Err(format!(
                "A's monitor of account-b fired before the kill: {reason:?}"
            ));
        }
        while self.events.try_recv().is_ok() {}

        let (killed, status) = self.b.kill()?;
        println!(
            "kill: SIGKILL to node B (OS pid {}): it ended with {status}",
            self.b.child.id()
        );
        let deadline = killed + DOWN_DEADLINE;
        let a_saw = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok((at, NodeEvent::Down { node, reason })) if node == victim => break (at, reason),
                Ok(_) => {}
                Err(_) => return Err(format!("A did not see B Down within {DOWN_DEADLINE:?}")),
            }
        };
        let c_saw = self
            .c
            .wait_event(&format!("DOWN {victim}"), deadline)
            .ok_or_else(|| format!("C did not see B Down within {DOWN_DEADLINE:?}"))?;
        let (fired, exit) = self
            .b_monitor
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .map_err(|_| {
                format!("A's monitor of account-b did not fire within {DOWN_DEADLINE:?}")
            })?;
        if exit != RemoteExit::NoConnection {
            return Err(format!(
                "A's monitor of account-b fired with {exit:?}, not NoConnection"
            ));
        }
        println!(
            "kill: A saw B Down ({:?}) {} after the kill; C saw it {} after; A's monitor of \
             account-b fired with {exit:?} {} after",
            a_saw.1,
            ms(a_saw.0.saturating_duration_since(killed)),
            ms(c_saw.saturating_duration_since(killed)),
            ms(fired.saturating_duration_since(killed))
        );
        let name = account_name("b");
        while !self.node.whereis_all(&name).is_empty() {
            if Instant::now() >= deadline {
                return Err(format!(
                    "{name} is still in A's registry {DOWN_DEADLINE:?} after the kill"
                ));
            }
            thread::sleep(Duration::from_millis(5));
        }
        println!(
            "kill: {name} is gone from A's registry {} after the kill",
            ms(killed.elapsed())
        );
        for (target, _) in &mut self.stopped {
            let refused_before = target.counts.refused_down.load(SeqCst);
            for _ in 0..POSTS_AFTER_KILL {
                target.post(&self.node, 1);
            }
            let refused = target.counts.refused_down.load(SeqCst) - refused_before;
            println!(
                "kill: {POSTS_AFTER_KILL} more posts to {} ({}): {refused} refused at once \
                 (Terminated)",
                target.name,
                short_pid(target.pid)
            );
            if refused != POSTS_AFTER_KILL {
                return Err(format!(
                    "{} of {POSTS_AFTER_KILL} posts to the dead node were not refused",
                    POSTS_AFTER_KILL - refused
                ));
            }
        }
        Ok(())
    }

    /// Step 6: stop the remaining flows, take the survivors' reports, shut everything down,
    /// and sum up. Returns the ledger and the problems found.
    fn finish(mut self) -> Result<(Ledger, Vec<String>), String> {
        for load in std::mem::take(&mut self.loads) {
            let (_, report) = load.stop(&self.node)?;
            self.flows.push(report);
        }
        let stopped: FlowReport = from_json("flow", &self.c.request("STOP account-a", "STOPPED")?)?;
        self.flows.push(stopped);
        for (target, balance) in std::mem::take(&mut self.stopped) {
            self.flows.push(target.report("A", balance));
        }
        let mut nodes = vec![node_report("A", &self.node, &self.runtime)];
        nodes.extend(self.gone.iter().cloned());
        nodes.push(from_json("report", &self.c.request("REPORT", "REPORT")?)?);

        let mut problems = Vec::new();
        if let Err(e) = self.c.finish(Duration::from_secs(10)) {
            problems.push(e);
        }
        let Demo { node, runtime, .. } = self;
        match Arc::try_unwrap(node) {
            Ok(node) => {
                if let Err(e) = node.shutdown() {
                    problems.push(format!("node A's shutdown: {e}"));
                }
            }
            Err(_) => problems.push("node A is still shared at shutdown".to_owned()),
        }
        let _report = runtime.shutdown_timeout(Duration::from_secs(2));

        println!("flows (counted at their senders):");
        for f in &self.flows {
            println!(
                "  {} → {:<9} posted {:>6}  refused {:>4} (window full {}, node down {}, other \
                 {})  bounced {:>4} {:?}  moved {}  balance {} / accepted {} cents",
                f.from,
                f.to,
                f.posted,
                f.refused(),
                f.refused_full,
                f.refused_down,
                f.refused_other,
                f.bounced,
                f.bounce_reasons,
                f.moves,
                f.balance.map_or("-".to_owned(), |b| b.to_string()),
                f.accepted_cents
            );
        }
        println!("nodes (B: its report just before the kill):");
        for n in &nodes {
            println!(
                "  {}  deposits handled {:>6}  runtime: posted {} handled {} rejected {} \
                 dead-lettered {} moved {} queued {}  dist: sent {} refused {} received {} \
                 delivered {} bounced {} returned {} in doubt {}{}",
                n.label,
                n.deposits_handled,
                n.rt_posted,
                n.rt_handled,
                n.rt_rejected,
                n.rt_dead_lettered,
                n.rt_moved,
                n.rt_queued,
                n.sent,
                n.refused,
                n.received,
                n.delivered,
                n.bounced,
                n.returned,
                n.in_doubt,
                if n.at_rest { "" } else { "  NOT AT REST" }
            );
            if !n.at_rest {
                problems.push(format!("node {}'s counters did not come to rest", n.label));
            }
            let anomalies = n.control_overflow + n.malformed + n.from_quarantined;
            if anomalies != 0 {
                problems.push(format!(
                    "node {}: control overflow {}, malformed {}, from quarantined {}",
                    n.label, n.control_overflow, n.malformed, n.from_quarantined
                ));
            }
        }
        for f in &self.flows {
            if f.balance.is_some_and(|b| b != f.accepted_cents) {
                problems.push(format!(
                    "{} → {}: balance differs from the deposits accepted",
                    f.from, f.to
                ));
            }
        }
        Ok((Ledger::sum(&self.flows, &nodes), problems))
    }
}

/// Step 4, the migration: C's account moves to B with its state and its queue while A's
/// deposits to it flow; A's flow, which posts by registry name, follows it; its balance at B
/// must then equal the sum of the deposits A had accepted for it.
fn migrate_step(demo: &mut Demo) -> Result<(), Box<dyn Error>> {
    // Hold the account for a moment, so deposits queue up behind the pause and move with it.
    demo.node
        .remote::<Pause>(demo.c.account)
        .post(Pause(100))
        .map_err(|e| format!("cannot pause account-c: {e}"))?;
    thread::sleep(Duration::from_millis(50));
    let began = Instant::now();
    let answer = demo
        .c
        .request(&format!("MIGRATE account-c {}", demo.b.id), "MIGRATED")?;
    let took = began.elapsed();
    let mut words = answer.split_whitespace();
    let (node, local, queued) = (words.next(), words.next(), words.next());
    let (Some(node), Some(local), Some(queued)) = (node, local, queued) else {
        return Err(format!("malformed MIGRATED answer {answer:?}").into());
    };
    let node: NodeId = node.parse()?;
    let local: u64 = local.parse()?;
    let moved_to = Pid::new(node, local);
    if node != demo.b.id {
        return Err(format!("account-c moved to {moved_to}, not to node B").into());
    }
    println!(
        "migration: account-c moved from C to B as {moved_to} in {:.1} ms (the pause it was in \
         included), with the {queued} deposits queued for it; deposits kept flowing",
        took.as_secs_f64() * 1e3
    );
    // Let the flow run on at B a while, then pause it and check the balance there.
    thread::sleep(Duration::from_millis(300));
    let report = demo.load("account-c")?.checkpoint()?;
    if report.pid != moved_to.to_string() {
        return Err(format!(
            "the flow to account-c still posts to {}, not to {moved_to}",
            report.pid
        )
        .into());
    }
    println!(
        "migration: account-c at B: balance {} = the {} cents of the {} deposits A had accepted \
         for it (its state and its queue came along; A's posts to the old pid were redirected)",
        report.balance.unwrap_or_default(),
        report.accepted_cents,
        report.posted - report.refused() - report.bounced
    );
    Ok(())
}

/// Every deposit posted, and where it ended, summed over the nodes.
struct Ledger {
    posted: u64,
    /// Refused at the sender (`Rejected`, `Terminated`).
    refused: u64,
    /// Given back by the receiving node.
    bounced: u64,
    handled: u64,
    dead_lettered: u64,
    in_doubt: u64,
}

impl Ledger {
    fn sum(flows: &[FlowReport], nodes: &[NodeReport]) -> Ledger {
        Ledger {
            posted: flows.iter().map(|f| f.posted).sum(),
            refused: flows.iter().map(FlowReport::refused).sum(),
            bounced: flows.iter().map(|f| f.bounced).sum(),
            handled: nodes.iter().map(|n| n.deposits_handled).sum(),
            dead_lettered: nodes.iter().map(NodeReport::dead_lettered).sum(),
            in_doubt: nodes.iter().map(|n| n.in_doubt).sum(),
        }
    }

    fn rejected(&self) -> u64 {
        self.refused + self.bounced
    }

    fn lost(&self) -> i128 {
        i128::from(self.posted)
            - i128::from(self.handled)
            - i128::from(self.rejected())
            - i128::from(self.dead_lettered)
            - i128::from(self.in_doubt)
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

// ---------------------------------------------------------------------------------------------
// Small helpers

/// Three distinct loopback ports nobody listens on now.
fn free_ports() -> Result<[u16; 3], String> {
    let listeners = (0..3)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("cannot find a free port: {e}"))?;
    let mut ports = [0; 3];
    for (port, listener) in ports.iter_mut().zip(&listeners) {
        *port = listener
            .local_addr()
            .map_err(|e| format!("cannot find a free port: {e}"))?
            .port();
    }
    Ok(ports)
}

/// A node id's first 8 hex digits.
fn short(id: NodeId) -> String {
    id.to_string()[..8].to_owned()
}

fn short_pid(pid: Pid) -> String {
    format!("{}@{}", pid.local(), short(pid.node()))
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
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}
