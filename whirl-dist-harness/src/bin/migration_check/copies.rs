//! The account copies this OS process (this node) runs: a process-wide registry, so that a
//! node can say how many copies of the account it holds and what each handled, whichever
//! migration made them. A copy is one running instance of the account's state: the one first
//! spawned, or one restored from a migration payload (on the target, or back on the source
//! after a failed migration). Also when the account's hold started.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Mutex;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use whirl::prelude::*;

use crate::settings::MAX_SENDERS;
use crate::util::lock;

/// One copy, as its node reports it.
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct CopyReport {
    /// Its number on this node (1, 2, ... in the order they were made).
    pub id: u64,
    /// Restored from a migration payload (`false`: spawned here).
    pub restored: bool,
    /// Still running (its state has not been dropped: not handed over, not ended).
    pub live: bool,
    /// Deposits it handled, per sender.
    pub handled: Vec<u64>,
}

impl CopyReport {
    pub fn total(&self) -> u64 {
        self.handled.iter().sum()
    }
}

#[whirl::allow_shared(
    reason = "a statistic of this OS process read by the check's child, not by any process: \
              each account copy adds to its own entry"
)]
static COPIES: Mutex<BTreeMap<u64, CopyReport>> = Mutex::new(BTreeMap::new());

#[whirl::allow_shared(reason = "numbers the copies of this OS process")]
static NEXT_COPY: AtomicU64 = AtomicU64::new(1);

#[whirl::allow_shared(
    reason = "when the account's hold started and ended, read by the check's child to time the \
              migration"
)]
static HOLD: Mutex<(Option<Instant>, Option<Instant>)> = Mutex::new((None, None));

/// A copy's entry in the registry, held in the account's state (never serialized: a restored
/// state gets a new one). Dropping it marks the copy ended.
#[derive(Isolated, Debug)]
pub struct CopyTag {
    id: u64,
}

impl CopyTag {
    fn new(restored: bool) -> CopyTag {
        let id = NEXT_COPY.fetch_add(1, SeqCst);
        lock(&COPIES).insert(
            id,
            CopyReport {
                id,
                restored,
                live: true,
                handled: vec![0; MAX_SENDERS],
            },
        );
        CopyTag { id }
    }

    /// The tag of the account first spawned on this node.
    pub fn spawned() -> CopyTag {
        CopyTag::new(false)
    }

    /// The tag of an account restored from a migration payload (serde's default for the
    /// skipped field, so it is made when the state is decoded).
    pub fn restored() -> CopyTag {
        CopyTag::new(true)
    }

    /// Counts a deposit of sender `from` handled by this copy.
    pub fn handled(&self, from: usize) {
        if let Some(count) = lock(&COPIES)
            .get_mut(&self.id)
            .and_then(|c| c.handled.get_mut(from))
        {
            *count += 1;
        }
    }
}

impl Drop for CopyTag {
    fn drop(&mut self) {
        if let Some(copy) = lock(&COPIES).get_mut(&self.id) {
            copy.live = false;
        }
    }
}

/// Every copy this node has run, live or not.
pub fn report() -> Vec<CopyReport> {
    lock(&COPIES).values().cloned().collect()
}

/// The account's hold handler has started.
pub fn holding() {
    lock(&HOLD).0 = Some(Instant::now());
}

/// The account's hold handler is returning: the hand-over comes next.
pub fn held() {
    lock(&HOLD).1 = Some(Instant::now());
}

/// When the last hold started, if one did.
pub fn hold_started() -> Option<Instant> {
    lock(&HOLD).0
}

/// When the last hold ended, if it did.
pub fn hold_ended() -> Option<Instant> {
    lock(&HOLD).1
}

/// Forgets the last hold (before starting another).
pub fn clear_hold() {
    *lock(&HOLD) = (None, None);
}
