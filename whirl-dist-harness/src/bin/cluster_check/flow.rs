//! Flows of deposits, counted at their senders, and the one place where registry names become
//! remote addresses ([`Target`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::SeqCst};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use whirl::prelude::*;
use whirl_dist::{BounceReason, Node, NodeId, Pid, RemoteAddr, RemotePostError};

use crate::account::{Balance, Deposit};
use crate::settings::{ASK_TIMEOUT, PACE_BATCH, REFRESH_EVERY, SETTLE_DEADLINE, SETUP_DEADLINE};
use crate::util::{lock, short};

/// A flow of deposits from one node to one registered account, counted at the sender.
#[derive(Default)]
pub struct FlowCounts {
    pub posted: AtomicU64,
    pub posted_cents: AtomicI64,
    /// Refused at the sender because the credit window was full (`Rejected`).
    pub refused_full: AtomicU64,
    /// Refused at the sender because the node is Down (`Terminated`).
    pub refused_down: AtomicU64,
    /// Refused at the sender for another reason (encoding, size).
    pub refused_other: AtomicU64,
    pub refused_cents: AtomicI64,
    /// Given back by the receiving node (to the bounce handler).
    pub bounced: AtomicU64,
    pub bounced_cents: AtomicI64,
    pub bounce_reasons: Mutex<BTreeMap<String, u64>>,
    /// How many times the name resolved to another process than before.
    pub moves: AtomicU64,
    /// Where the name resolved last.
    pub current: Mutex<Option<Pid>>,
}

impl FlowCounts {
    /// The cents posted and neither refused nor bounced: what the account should hold once
    /// everything arrived (every deposit is handled, dead-lettered or in doubt otherwise).
    pub fn accepted_cents(&self) -> i64 {
        self.posted_cents.load(SeqCst)
            - self.refused_cents.load(SeqCst)
            - self.bounced_cents.load(SeqCst)
    }

    pub fn bounce(&self, reason: BounceReason, cents: i64) {
        *lock(&self.bounce_reasons)
            .entry(format!("{reason:?}"))
            .or_default() += 1;
        self.bounced_cents.fetch_add(cents, SeqCst);
        self.bounced.fetch_add(1, SeqCst);
    }

    pub fn current(&self) -> Option<Pid> {
        *lock(&self.current)
    }
}

/// What a flow counted, as its sender reports it.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct FlowReport {
    /// The sending node.
    pub from: String,
    /// The registry name posted to.
    pub to: String,
    /// Where the name resolved last.
    pub pid: String,
    pub posted: u64,
    pub refused_full: u64,
    pub refused_down: u64,
    pub refused_other: u64,
    pub bounced: u64,
    pub bounce_reasons: BTreeMap<String, u64>,
    pub moves: u64,
    pub accepted_cents: i64,
    /// The account's balance when the flow settled, if it was asked.
    pub balance: Option<i64>,
}

impl FlowReport {
    pub fn refused(&self) -> u64 {
        self.refused_full + self.refused_down + self.refused_other
    }
}

/// A registered account as seen from one node: its name, the process the name resolves to
/// now, and the addresses to post deposits and ask balances there. The one place where the
/// demo turns a registry name into [`RemoteAddr`]s: [`Target::refresh`] looks the name up
/// again and, when it resolves to another process (the account migrated), makes new
/// addresses. The old deposit addresses are kept (not dropped) while the target lives, so
/// that bounces of deposits sent through them still reach the flow's bounce handler.
pub struct Target {
    pub name: String,
    pub counts: Arc<FlowCounts>,
    pub pid: Pid,
    pub deposits: RemoteAddr<Deposit>,
    pub balance: RemoteAddr<Balance>,
    pub retired: Vec<RemoteAddr<Deposit>>,
}

impl Target {
    /// Looks `name` up in `node`'s registry, waiting for it until `deadline`.
    pub fn resolve(node: &Node, name: &str, deadline: Instant) -> Result<Target, String> {
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
    pub fn refresh(&mut self, node: &Node) -> bool {
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
    pub fn post(&mut self, node: &Node, cents: i64) {
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
    pub fn ask_balance(&self, timeout: Duration) -> Result<i64, String> {
        self.balance
            .request(Balance)
            .timeout(timeout)
            .call()
            .map_err(|e| format!("asking {}'s balance: {e}", self.name))
    }

    /// Waits until the account's balance equals the deposits accepted (call it with the flow
    /// paused or stopped); returns the balance. The ask travels behind this node's deposits
    /// to the process (per-sender order), and the receiving node sends the bounces of those
    /// deposits before the answer, so a mismatch after the answer is real unless the account
    /// moved meanwhile; hence the retries until `deadline`.
    pub fn settle(&mut self, node: &Node, deadline: Instant) -> Result<i64, String> {
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

    pub fn report(&self, from: &str, balance: Option<i64>) -> FlowReport {
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
pub fn with_bounce_handler(
    addr: RemoteAddr<Deposit>,
    counts: &Arc<FlowCounts>,
) -> RemoteAddr<Deposit> {
    let counts = Arc::clone(counts);
    addr.on_bounce(move |undelivered| counts.bounce(undelivered.reason, undelivered.msg.0))
}

/// What the controller of a flow asks its thread.
pub enum LoadCmd {
    /// Pause, settle (balance = deposits accepted), answer, go on.
    Checkpoint(Sender<Result<FlowReport, String>>),
    Stop,
}

/// A running flow: a thread posting deposits to a registered account at a steady rate.
pub struct Load {
    pub from: String,
    pub name: String,
    pub counts: Arc<FlowCounts>,
    pub cmds: Sender<LoadCmd>,
    pub thread: JoinHandle<Target>,
}

impl Load {
    /// Resolves `name` on `node` and starts posting to it, `rate` deposits a second.
    pub fn start(node: &Arc<Node>, from: &str, name: &str, rate: u64) -> Result<Load, String> {
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
    pub fn goes_to(&self, node: &Node, id: NodeId) -> bool {
        let registered = node.whereis_all(&self.name).first().map(|pid| pid.node());
        self.counts.current().map(Pid::node) == Some(id) || registered == Some(id)
    }

    /// Pauses the flow, checks its account's balance equals the deposits accepted so far,
    /// and resumes it.
    pub fn checkpoint(&self) -> Result<FlowReport, String> {
        let (tx, rx) = mpsc::channel();
        self.cmds
            .send(LoadCmd::Checkpoint(tx))
            .map_err(|_| format!("the flow to {} has stopped", self.name))?;
        rx.recv_timeout(SETTLE_DEADLINE + ASK_TIMEOUT + Duration::from_secs(1))
            .map_err(|_| format!("the flow to {} did not answer its checkpoint", self.name))?
    }

    /// Stops the flow and settles it; returns the target (to post more through it) and the
    /// flow's report with the settled balance.
    pub fn stop(self, node: &Node) -> Result<(Target, FlowReport), String> {
        let from = self.from.clone();
        let mut target = self.halt()?;
        let balance = target.settle(node, Instant::now() + SETTLE_DEADLINE)?;
        let report = target.report(&from, Some(balance));
        Ok((target, report))
    }

    /// Stops the flow's thread; returns its target.
    pub fn halt(self) -> Result<Target, String> {
        // If the thread is gone already, the join below says how.
        let _ = self.cmds.send(LoadCmd::Stop);
        self.thread
            .join()
            .map_err(|_| format!("the flow to {} panicked", self.name))
    }
}

/// The flow's thread: posts `rate` deposits a second (of 1 to 7 cents), re-resolving the
/// name every [`REFRESH_EVERY`] posts, until told to stop.
pub fn run_load(
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
            if seq.is_multiple_of(REFRESH_EVERY) {
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
