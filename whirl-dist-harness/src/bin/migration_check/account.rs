//! The migratable account: its messages (a numbered deposit, posted; a query of its counters,
//! asked; a hold, posted locally) and its state, which carries per sender the next sequence
//! number expected and what arrived out of order, so those counters travel with the process.

use std::thread;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use whirl::prelude::*;
use whirl_dist::{Remote, Request};

use crate::copies::CopyTag;
use crate::settings::MAX_SENDERS;

/// Deposit number `seq` of sender `from`. Posted.
#[derive(Message, Serialize, Deserialize, Debug, Clone, Copy)]
pub struct Deposit {
    pub from: u32,
    pub seq: u64,
}

impl Remote for Deposit {
    const TAG: &'static str = "migration_check.Deposit/1";
}

/// The account's counters, one entry per sender. Asked.
#[derive(Message, Serialize, Deserialize, Debug)]
pub struct Query;

impl Remote for Query {
    const TAG: &'static str = "migration_check.Query/1";
}

impl Request for Query {
    type Reply = Vec<Tally>;
}

/// Blocks the account's handler for the given milliseconds, so that deposits queue up behind
/// it and the migration carries a queue. Posted on the account's own node only (through its
/// `Addr`), so it never has to cross the network.
#[derive(Message, Debug)]
pub struct Hold(pub u64);

/// What the account counted of one sender.
#[derive(Isolated, Serialize, Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Deposits handled.
    pub handled: u64,
    /// Deposits whose number was not the one expected next (the one after the last handled).
    pub out_of_order: u64,
    /// Of those, deposits numbered below the one expected (they came after a later one).
    pub behind: u64,
    /// Deposits whose number had been handled before: handled twice.
    pub repeats: u64,
}

/// One sender as the account tracks it: the next number expected, the tally, and which
/// numbers were handled (a bitmap, to tell a repeat from a late arrival).
#[derive(Isolated, Serialize, Deserialize, Debug, Clone, Default)]
pub struct Track {
    pub next: u64,
    pub tally: Tally,
    pub seen: Vec<u64>,
}

impl Track {
    fn handle(&mut self, seq: u64) {
        let t = &mut self.tally;
        t.handled += 1;
        if seq != self.next {
            t.out_of_order += 1;
        }
        if seq < self.next {
            t.behind += 1;
        }
        self.next = seq + 1;
        let (word, bit) = (usize::try_from(seq / 64).unwrap_or(usize::MAX), seq % 64);
        if word >= self.seen.len() {
            // Numbers are small (a run's deposits); an absurd one is only counted.
            if word > 1 << 20 {
                return;
            }
            self.seen.resize(word + 1, 0);
        }
        if self.seen[word] & (1 << bit) != 0 {
            t.repeats += 1;
        }
        self.seen[word] |= 1 << bit;
    }
}

/// The account. Its state is what a migration moves; `copy` is not part of it (each copy of
/// the state that runs somewhere gets its own, see [`crate::copies`]).
#[process]
#[derive(Serialize, Deserialize, Debug)]
pub struct Account {
    pub senders: Vec<Track>,
    #[serde(skip, default = "CopyTag::restored")]
    pub copy: CopyTag,
}

impl Default for Account {
    fn default() -> Account {
        Account {
            senders: vec![Track::default(); MAX_SENDERS],
            copy: CopyTag::spawned(),
        }
    }
}

#[process]
impl Account {
    #[handle]
    pub fn deposit(&mut self, d: Deposit) {
        let Some(track) = self.senders.get_mut(d.from as usize) else {
            return;
        };
        track.handle(d.seq);
        self.copy.handled(d.from as usize);
    }

    #[handle]
    pub fn query(&mut self, _: Query) -> Vec<Tally> {
        self.senders.iter().map(|t| t.tally).collect()
    }

    #[handle]
    pub fn hold(&mut self, Hold(ms): Hold) {
        crate::copies::holding();
        thread::sleep(Duration::from_millis(ms));
        crate::copies::held();
    }
}
