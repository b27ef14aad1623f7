//! The steps the scenarios share, driven from the parent through the children: the account
//! spawned on S, senders started and read, the migration with a queue, the account's
//! counters asked; and what a run ends with (its verdict and its line).

use std::thread;
use std::time::{Duration, Instant};

use whirl_dist::{NodeId, Pid};

use crate::account::Tally;
use crate::child_proc::ChildProc;
use crate::cluster::Trio;
use crate::moving::MigrationReport;
use crate::sender::SenderReport;
use crate::settings::{Args, MIGRATE_TIMEOUT, REQUEST_TIMEOUT, SEND_DEADLINE};
use crate::util::{from_json, parse_pid};

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    /// Nothing to judge (the crash scenario's account died with S).
    NotJudged,
}

/// A run's verdict and the figures behind it.
pub struct Outcome {
    pub verdict: Verdict,
    pub line: String,
}

impl Outcome {
    pub fn judged(pass: bool, line: String) -> Outcome {
        let verdict = match pass {
            true => Verdict::Pass,
            false => Verdict::Fail,
        };
        Outcome { verdict, line }
    }
}

/// A sender: the node it runs on, its id (its index in the account's counters), and whether
/// it follows the registered name.
#[derive(Clone, Copy, Debug)]
pub struct Placement {
    pub node: &'static str,
    pub id: u32,
    pub follow: bool,
}

impl Placement {
    pub fn label(&self) -> String {
        let how = match self.follow {
            true => "pid+name",
            false => "pid",
        };
        format!("{}#{} ({how})", self.node, self.id)
    }
}

/// Spawns the account on S, exported and registered; its pid.
pub fn spawn_account(trio: &mut Trio) -> Result<Pid, String> {
    parse_pid(&trio.s.request("SPAWN", "SPAWNED")?)
}

/// Starts each sender, posting `args.deposits` deposits to `pid` at `args.rate` a second.
pub fn start_senders(
    trio: &mut Trio,
    senders: &[Placement],
    pid: Pid,
    args: &Args,
) -> Result<(), String> {
    for p in senders {
        let follow = match p.follow {
            true => "follow",
            false => "pid",
        };
        let command = format!(
            "SEND {} {pid} {} {} {follow}",
            p.id, args.deposits, args.rate
        );
        trio.get(p.node)?.request(&command, "SENDING")?;
    }
    Ok(())
}

/// Each sender's report now.
pub fn sender_reports(trio: &mut Trio, senders: &[Placement]) -> Result<Vec<SenderReport>, String> {
    senders
        .iter()
        .map(|p| {
            let answer = trio
                .get(p.node)?
                .request(&format!("SENDER {}", p.id), "SENDER")?;
            from_json("sender report", &answer)
        })
        .collect()
}

/// Waits until every sender posted all its deposits; their reports.
pub fn wait_senders(trio: &mut Trio, senders: &[Placement]) -> Result<Vec<SenderReport>, String> {
    let deadline = Instant::now() + SEND_DEADLINE;
    loop {
        let reports = sender_reports(trio, senders)?;
        if reports.iter().all(|r| r.done) {
            return Ok(reports);
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the senders did not finish within {SEND_DEADLINE:?}"
            ));
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// Stops each sender; their final reports.
pub fn halt_senders(trio: &mut Trio, senders: &[Placement]) -> Result<Vec<SenderReport>, String> {
    senders
        .iter()
        .map(|p| {
            let answer = trio
                .get(p.node)?
                .request(&format!("HALT {}", p.id), "HALTED")?;
            from_json("sender report", &answer)
        })
        .collect()
}

/// Tells S to hold the account for `args.hold_ms` and to migrate it to `to` half-way through
/// the hold (the deposits posted meanwhile queue behind the hold), with time limit `timeout`.
/// Returns when S says the hold started; then see [`migration_answer`].
pub fn begin_migration(
    s: &mut ChildProc,
    to: NodeId,
    timeout: Duration,
    args: &Args,
) -> Result<Instant, String> {
    let command = format!(
        "MIGRATE {to} {} {} {}",
        timeout.as_micros(),
        args.hold_ms,
        args.hold_ms / 2
    );
    s.send(&command)?;
    s.answer("HOLDING", Instant::now() + REQUEST_TIMEOUT)?;
    Ok(Instant::now())
}

/// The deadline for S's answer to a migration begun now.
pub fn migration_deadline(args: &Args, timeout: Duration) -> Instant {
    Instant::now()
        + Duration::from_millis(args.hold_ms)
        + timeout.max(MIGRATE_TIMEOUT)
        + REQUEST_TIMEOUT
}

/// Reads S's answer to the migration, if it comes by `deadline`.
pub fn migration_answer(
    s: &ChildProc,
    deadline: Instant,
) -> Result<Option<MigrationReport>, String> {
    match s.answer_by("MIGRATION", deadline)? {
        Some(json) => from_json("migration report", &json).map(Some),
        None => Ok(None),
    }
}

/// Migrates the account from S to T with a queue; S's report.
pub fn migrate(trio: &mut Trio, timeout: Duration, args: &Args) -> Result<MigrationReport, String> {
    let to = trio.t.id;
    begin_migration(&mut trio.s, to, timeout, args)?;
    migration_answer(&trio.s, migration_deadline(args, timeout))?
        .ok_or_else(|| "S did not answer the migration in time".to_owned())
}

/// The account's counters at `pid`, asked from node `from`.
pub fn query(from: &mut ChildProc, pid: Pid) -> Result<Vec<Tally>, String> {
    from_json(
        "counters",
        &from.request(&format!("QUERY {pid}"), "COUNTERS")?,
    )
}

/// One sender's figures: what it counted and what the account counted of it.
pub fn figures(p: &Placement, r: &SenderReport, t: &Tally) -> String {
    let mut line = format!(
        "{}: accepted {} handled {} bounced {} out-of-order {} behind {} repeats {}",
        p.label(),
        r.accepted,
        t.handled,
        r.bounced,
        t.out_of_order,
        t.behind,
        t.repeats
    );
    if r.refused > 0 {
        line.push_str(&format!(" refused {}", r.refused));
    }
    if p.follow {
        line.push_str(&format!(" name-switches {}", r.switches));
    }
    line
}
