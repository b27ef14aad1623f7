//! Scenario 3, **timeout**: the account is migrated S → T with a time limit shorter than a
//! round trip (0, 1 µs, 200 µs or 1 ms, by run), with a queue, while senders on S and X keep
//! posting (through the pid, and on X by name too). Whatever `migrate` returns, the account
//! must not run twice: at most one restored copy handles deposits, the copies together handle
//! every accepted deposit once (total handled = accepted − bounced, per sender), and the name
//! has one holder.

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use crate::cluster::Trio;
use crate::copies::CopyReport;
use crate::sender::SenderReport;
use crate::settings::{Args, SETTLE_DEADLINE, STABLE_FOR, WARM_UP};
use crate::steps::{
    halt_senders, migrate, sender_reports, spawn_account, start_senders, wait_senders, Outcome,
    Placement,
};
use crate::util::from_json;

const SENDERS: [Placement; 2] = [
    Placement {
        node: "S",
        id: 0,
        follow: false,
    },
    Placement {
        node: "X",
        id: 1,
        follow: true,
    },
];

/// The time limits tried, one per run in turn.
const TIMEOUTS_US: [u64; 4] = [0, 1, 200, 1_000];

pub fn run(args: &Args, certs: &Path, run: u32) -> Result<Outcome, String> {
    let timeout = Duration::from_micros(TIMEOUTS_US[run as usize % TIMEOUTS_US.len()]);
    let mut trio = Trio::start(certs, args.lease_ms)?;
    let outcome = scenario(&mut trio, args, timeout)?;
    trio.finish(false)?;
    Ok(outcome)
}

/// Every copy of the account on S, T and X, with its node's label.
fn copies(trio: &mut Trio) -> Result<Vec<(&'static str, CopyReport)>, String> {
    let mut all = Vec::new();
    for label in ["S", "T", "X"] {
        let answer = trio.get(label)?.request("COPIES", "COPIES")?;
        let copies: Vec<CopyReport> = from_json("copies", &answer)?;
        all.extend(copies.into_iter().map(|c| (label, c)));
    }
    Ok(all)
}

/// Deposits of sender `id` handled, summed over the copies.
fn handled(copies: &[(&str, CopyReport)], id: u32) -> u64 {
    copies
        .iter()
        .map(|(_, c)| c.handled.get(id as usize).copied().unwrap_or(0))
        .sum()
}

fn settled(copies: &[(&str, CopyReport)], reports: &[SenderReport]) -> bool {
    SENDERS
        .iter()
        .zip(reports)
        .all(|(p, r)| handled(copies, p.id) + r.bounced == r.accepted)
}

fn scenario(trio: &mut Trio, args: &Args, timeout: Duration) -> Result<Outcome, String> {
    let pid = spawn_account(trio)?;
    start_senders(trio, &SENDERS, pid, args)?;
    thread::sleep(WARM_UP);
    let migration = migrate(trio, timeout, args)?;
    wait_senders(trio, &SENDERS)?;

    // Settled: every accepted deposit handled once; or the totals held still (a copy too
    // many handles some twice, and they never match).
    let deadline = Instant::now() + SETTLE_DEADLINE;
    let mut last: Option<(Vec<u64>, Instant)> = None;
    let (all, reports) = loop {
        let all = copies(trio)?;
        let reports = sender_reports(trio, &SENDERS)?;
        let totals: Vec<u64> = SENDERS.iter().map(|p| handled(&all, p.id)).collect();
        let still = match &last {
            Some((before, since)) if *before == totals => since.elapsed() >= STABLE_FOR,
            _ => {
                last = Some((totals, Instant::now()));
                false
            }
        };
        if settled(&all, &reports) || still || Instant::now() >= deadline {
            break (all, reports);
        }
        thread::sleep(Duration::from_millis(100));
    };
    let holders: Vec<String> = from_json("holders", &trio.x.request("WHEREIS", "WHEREIS")?)?;
    halt_senders(trio, &SENDERS)?;

    let restored: Vec<&(&str, CopyReport)> = all.iter().filter(|(_, c)| c.restored).collect();
    let handling = restored.iter().filter(|(_, c)| c.total() > 0).count();
    let live = |label: &str| all.iter().filter(|(l, c)| *l == label && c.live).count();
    let once = settled(&all, &reports);
    let pass = handling <= 1 && once && holders.len() == 1;
    let mut parts = vec![format!(
        "time limit {} µs: migrate {}{}",
        timeout.as_micros(),
        migration.outcome,
        migration
            .why
            .as_deref()
            .map(|why| format!(" ({why})"))
            .unwrap_or_default()
    )];
    parts.push(format!(
        "live copies S {} T {} X {}; restored copies that handled deposits: {handling} ({})",
        live("S"),
        live("T"),
        live("X"),
        restored
            .iter()
            .map(|(l, c)| format!("{l}: {}", c.total()))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    for (p, r) in SENDERS.iter().zip(&reports) {
        parts.push(format!(
            "{}: accepted {} bounced {} handled over copies {}",
            p.label(),
            r.accepted,
            r.bounced,
            handled(&all, p.id)
        ));
    }
    parts.push(format!("name holders {}", holders.len()));
    Ok(Outcome::judged(pass, parts.join("; ")))
}
