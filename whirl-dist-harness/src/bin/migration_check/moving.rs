//! S's side of a migration: the account held (its handler blocks, so deposits queue behind
//! it), `Node::migrate` called half-way through the hold, and what it returned, with when.
//! Says `HOLDING` once the hold started and `HELD` once it ended (the hand-over comes next).

use std::thread;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use whirl::prelude::*;
use whirl_dist::{MigrateError, Node, NodeId};

use crate::account::{Account, Hold};
use crate::copies;
use crate::settings::SETUP_DEADLINE;
use crate::util::say;

/// How a migration went, as the source node reports it.
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct MigrationReport {
    /// `ok` (moved), `refused` (not touched: the target did not take it or answer in time),
    /// `failed` (restored on the source), or `error` (another `MigrateError`).
    pub outcome: String,
    /// The account's pid now, if it changed: where it moved, or where it was restored.
    pub pid: Option<String>,
    /// The error, if any.
    pub why: Option<String>,
    /// Messages that left with the queue (the runtime's `moved` count).
    pub moved: u64,
    /// How long `migrate` took (it waits for the hold to end).
    pub took_us: u64,
    /// When `migrate` returned, after the hold ended (negative: before).
    pub after_hold_us: i64,
}

/// Holds `account` for `hold.0` ms (says `HOLDING` once the hold started, `HELD` once it
/// ended), waits `hold.1` ms for deposits to queue behind it, and migrates it to `to` with
/// time limit `timeout`.
pub fn hold_and_migrate(
    node: &Node,
    runtime: &Runtime,
    account: &Addr<Account>,
    to: NodeId,
    timeout: Duration,
    (hold_ms, lead_ms): (u64, u64),
) -> Result<MigrationReport, String> {
    copies::clear_hold();
    account
        .post(Hold(hold_ms))
        .map_err(|e| format!("cannot hold the account: {e:?}"))?;
    let deadline = Instant::now() + SETUP_DEADLINE;
    let held = loop {
        if let Some(at) = copies::hold_started() {
            break at;
        }
        if Instant::now() >= deadline {
            return Err("the account's hold did not start in time".to_owned());
        }
        thread::sleep(Duration::from_micros(200));
    };
    say("HOLDING");
    // `HELD` once the hold ends, that is at the hand-over (the crash scenario times its kill
    // from it).
    thread::spawn(move || {
        while Instant::now() < deadline {
            if copies::hold_ended().is_some() {
                say("HELD");
                return;
            }
            thread::sleep(Duration::from_micros(50));
        }
    });
    thread::sleep(Duration::from_millis(lead_ms));
    let moved_before = runtime.counts().moved;
    let began = Instant::now();
    let result = node.migrate(account, to, timeout);
    let returned = Instant::now();
    let hold_end = copies::hold_ended().unwrap_or(held + Duration::from_millis(hold_ms));
    let after_hold_us = match returned.checked_duration_since(hold_end) {
        Some(after) => i64::try_from(after.as_micros()).unwrap_or(i64::MAX),
        None => -i64::try_from((hold_end - returned).as_micros()).unwrap_or(i64::MAX),
    };
    let mut report = MigrationReport {
        moved: runtime.counts().moved - moved_before,
        took_us: u64::try_from((returned - began).as_micros()).unwrap_or(u64::MAX),
        after_hold_us,
        ..MigrationReport::default()
    };
    match result {
        Ok(pid) => {
            report.outcome = "ok".to_owned();
            report.pid = Some(pid.to_string());
        }
        Err(MigrateError::Refused { why }) => {
            // Not touched: it runs on the source as before.
            report.outcome = "refused".to_owned();
            report.why = Some(why);
        }
        Err(MigrateError::Failed { why, restored_as }) => {
            report.outcome = "failed".to_owned();
            report.pid = Some(restored_as.to_string());
            report.why = Some(why);
        }
        Err(other) => {
            report.outcome = "error".to_owned();
            report.why = Some(other.to_string());
        }
    }
    Ok(report)
}
