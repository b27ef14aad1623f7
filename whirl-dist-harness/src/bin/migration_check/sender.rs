//! A sender: a thread on a child node posting a numbered sequence of deposits to the account,
//! at a steady rate, counted at the sender. It posts through the pid it was given (following
//! the library's redirects after a move) and, when told to follow the name, looks the account
//! up by its registered name every few deposits and posts to the new pid once the name
//! resolves there, as real clients do. A deposit refused with `Rejected` is posted again
//! before the next one, so a retry never reorders.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use whirl::prelude::*;
use whirl_dist::{Node, Pid, RemoteAddr, RemotePostError};

use crate::account::Deposit;
use crate::settings::{ACCOUNT_NAME, PACE_BATCH, REFRESH_EVERY, RETRY_AFTER, RETRY_FOR};
use crate::util::lock;

/// What a sender is told to do.
#[derive(Clone, Copy, Debug)]
pub struct SenderSpec {
    pub id: u32,
    pub pid: Pid,
    pub count: u64,
    pub rate: u64,
    pub follow_name: bool,
}

/// A sender's counts, as it reports them.
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct SenderReport {
    pub id: u32,
    /// Deposits the library took (`post` returned `Ok`).
    pub accepted: u64,
    /// `Rejected` refusals retried.
    pub retries: u64,
    /// Deposits given up: `Rejected` for too long, `Terminated`, or another error.
    pub refused: u64,
    /// Deposits the library gave back to the bounce handler.
    pub bounced: u64,
    pub bounce_reasons: BTreeMap<String, u64>,
    /// Times the name resolved to another pid and the sender went there.
    pub switches: u64,
    /// All its deposits were posted (or given up).
    pub done: bool,
    /// Where it posts now.
    pub pid: String,
}

#[derive(Default)]
struct Counts {
    accepted: AtomicU64,
    retries: AtomicU64,
    refused: AtomicU64,
    bounced: AtomicU64,
    bounce_reasons: Mutex<BTreeMap<String, u64>>,
    switches: AtomicU64,
    done: AtomicBool,
    pid: Mutex<Option<Pid>>,
}

/// A running (or finished) sender.
pub struct SenderThread {
    id: u32,
    counts: Arc<Counts>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<RemoteAddr<Deposit>>>>,
    /// The addresses it posted through, kept so that late bounces still reach its handler.
    kept: Vec<RemoteAddr<Deposit>>,
}

impl SenderThread {
    pub fn start(node: &Arc<Node>, spec: SenderSpec) -> Result<SenderThread, String> {
        let counts = Arc::new(Counts::default());
        let stop = Arc::new(AtomicBool::new(false));
        let thread = thread::Builder::new()
            .name(format!("sender-{}", spec.id))
            .spawn({
                let (node, counts, stop) =
                    (Arc::clone(node), Arc::clone(&counts), Arc::clone(&stop));
                move || run(&node, spec, &counts, &stop)
            })
            .map_err(|e| format!("cannot start sender {}: {e}", spec.id))?;
        Ok(SenderThread {
            id: spec.id,
            counts,
            stop,
            thread: Some(thread),
            kept: Vec::new(),
        })
    }

    pub fn report(&self) -> SenderReport {
        let c = &self.counts;
        SenderReport {
            id: self.id,
            accepted: c.accepted.load(SeqCst),
            retries: c.retries.load(SeqCst),
            refused: c.refused.load(SeqCst),
            bounced: c.bounced.load(SeqCst),
            bounce_reasons: lock(&c.bounce_reasons).clone(),
            switches: c.switches.load(SeqCst),
            done: c.done.load(SeqCst),
            pid: lock(&c.pid).map_or("-".to_owned(), |p| p.to_string()),
        }
    }

    /// Stops the thread (it checks between deposits and retries) and keeps its addresses.
    pub fn halt(&mut self) -> Result<SenderReport, String> {
        self.stop.store(true, SeqCst);
        if let Some(thread) = self.thread.take() {
            let kept = thread
                .join()
                .map_err(|_| format!("sender {} panicked", self.id))?;
            self.kept.extend(kept);
        }
        Ok(self.report())
    }
}

fn with_bounces(addr: RemoteAddr<Deposit>, counts: &Arc<Counts>) -> RemoteAddr<Deposit> {
    let counts = Arc::clone(counts);
    addr.on_bounce(move |undelivered| {
        *lock(&counts.bounce_reasons)
            .entry(format!("{:?}", undelivered.reason))
            .or_default() += 1;
        counts.bounced.fetch_add(1, SeqCst);
    })
}

/// Where a sender posts, and the addresses it posted through before.
struct Target {
    addr: RemoteAddr<Deposit>,
    retired: Vec<RemoteAddr<Deposit>>,
}

impl Target {
    /// Looks the account up by name; goes there if it resolves to another pid. Returns
    /// whether it moved.
    fn refresh(&mut self, node: &Node, counts: &Arc<Counts>) -> bool {
        let Some(found) = node.whereis::<Deposit>(ACCOUNT_NAME) else {
            return false;
        };
        if found.pid() == self.addr.pid() {
            return false;
        }
        *lock(&counts.pid) = Some(found.pid());
        let old = std::mem::replace(&mut self.addr, with_bounces(found, counts));
        self.retired.push(old);
        counts.switches.fetch_add(1, SeqCst);
        true
    }
}

fn run(
    node: &Node,
    spec: SenderSpec,
    counts: &Arc<Counts>,
    stop: &AtomicBool,
) -> Vec<RemoteAddr<Deposit>> {
    *lock(&counts.pid) = Some(spec.pid);
    let mut target = Target {
        addr: with_bounces(node.remote::<Deposit>(spec.pid), counts),
        retired: Vec::new(),
    };
    let started = Instant::now();
    'deposits: for seq in 0..spec.count {
        if spec.follow_name && seq % REFRESH_EVERY == 0 {
            target.refresh(node, counts);
        }
        let mut msg = Deposit { from: spec.id, seq };
        let mut rejected_since = None;
        loop {
            if stop.load(SeqCst) {
                break 'deposits;
            }
            match target.addr.post(msg) {
                Ok(()) => {
                    counts.accepted.fetch_add(1, SeqCst);
                    break;
                }
                Err(RemotePostError::Rejected(back)) => {
                    let since = *rejected_since.get_or_insert_with(Instant::now);
                    if since.elapsed() > RETRY_FOR {
                        counts.refused.fetch_add(1, SeqCst);
                        break;
                    }
                    counts.retries.fetch_add(1, SeqCst);
                    msg = back;
                    thread::sleep(RETRY_AFTER);
                }
                Err(RemotePostError::Terminated(back)) => {
                    // Its node is gone: the account may run elsewhere by now.
                    if spec.follow_name && target.refresh(node, counts) {
                        msg = back;
                        continue;
                    }
                    counts.refused.fetch_add(1, SeqCst);
                    break;
                }
                Err(_) => {
                    counts.refused.fetch_add(1, SeqCst);
                    break;
                }
            }
        }
        if (seq + 1) % PACE_BATCH == 0 {
            let due = started + Duration::from_secs_f64((seq + 1) as f64 / spec.rate.max(1) as f64);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                thread::sleep(wait);
            }
        }
    }
    counts.done.store(true, SeqCst);
    let mut kept = target.retired;
    kept.push(target.addr);
    kept
}
