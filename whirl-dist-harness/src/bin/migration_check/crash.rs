//! Scenario 2, **crash**: as the order scenario, but S is killed with SIGKILL around the
//! migration, at a moment drawn by the seed (printed), by turns: from 0.3 to 1.5 ms after the
//! hand-over (the hold's end), while the account is in flight; from 0 to 3 ms after `migrate`
//! returned, while S still sends back what it held for the account; anywhere from 20 ms before
//! `migrate` returns to 200 ms after. S's sender dies with it and is not judged. X's sender must lose nothing
//! silently: every deposit it had accepted is handled by the account (now on T), bounced back,
//! or counted in doubt by X (`DistCounts::in_doubt`, which only this sender's deposits can
//! raise). A run where the account died with S (the name has no holder once things settle)
//! is printed as `NO ACCOUNT` and not judged.

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use crate::child::NodeCounts;
use crate::cluster::Trio;
use crate::settings::{
    Args, CRASH_SETTLE, DOWN_DEADLINE, MIGRATE_TIMEOUT, REQUEST_TIMEOUT, RETURN_ESTIMATE,
    SETTLE_DEADLINE, WARM_UP,
};
use crate::steps::{
    begin_migration, halt_senders, migration_answer, migration_deadline, query, spawn_account,
    start_senders, wait_senders, Outcome, Placement, Verdict,
};
use crate::util::{from_json, ms, parse_pid, signed_ms, Rng};

/// S's sender (not judged) and X's.
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
const JUDGED: Placement = SENDERS[1];
/// The in-flight runs kill S this long after the hand-over, at least and at most (µs): after
/// the account left in its payload, before migrate returns (it returns 2 to 6 ms after the
/// hand-over on the 2-core development VM).
const IN_FLIGHT_US: (i64, i64) = (300, 1_500);

/// When S is killed.
#[derive(Clone, Copy, Debug)]
enum Kill {
    /// This long (ms, -20 to 200) after migrate returns; before it returns, counted back from
    /// the moment it is expected to return (the hold's end and a little more).
    AroundReturn(i64),
    /// This long (µs) after the hand-over (the hold's end): the account is in flight.
    InFlight(i64),
    /// This long (µs) after migrate returned: S is sending back the frames it held.
    JustAfterReturn(i64),
}

/// The just-after-return runs kill S this long after migrate returned, at least and at most
/// (µs).
const JUST_AFTER_US: (i64, i64) = (0, 3_000);

pub fn run(args: &Args, certs: &Path, rng: &mut Rng, run: u32) -> Result<Outcome, String> {
    // By turns: the two narrow windows where a crash can lose what is moving (a few ms of
    // 220 each), then anywhere in the range.
    let kill = match run % 3 {
        1 => Kill::InFlight(rng.between(IN_FLIGHT_US.0, IN_FLIGHT_US.1)),
        2 => Kill::JustAfterReturn(rng.between(JUST_AFTER_US.0, JUST_AFTER_US.1)),
        _ => Kill::AroundReturn(rng.between(-20, 200)),
    };
    let mut trio = Trio::start(certs, args.lease_ms)?;
    let outcome = scenario(&mut trio, args, kill)?;
    trio.finish(true)?;
    Ok(outcome)
}

fn in_doubt(trio: &mut Trio) -> Result<u64, String> {
    let counts: NodeCounts = from_json("counts", &trio.x.request("COUNTS", "COUNTS")?)?;
    Ok(counts.in_doubt)
}

/// Migrates the account S → T and kills S as `kill` says; what happened, in words.
fn migrate_and_kill(trio: &mut Trio, args: &Args, kill: Kill) -> Result<String, String> {
    let t_id = trio.t.id;
    let holding = begin_migration(&mut trio.s, t_id, MIGRATE_TIMEOUT, args)?;
    let hold_deadline = holding + Duration::from_millis(args.hold_ms) + REQUEST_TIMEOUT;
    let (migration, returned, kill_at) = match kill {
        Kill::JustAfterReturn(us) => {
            let migration = migration_answer(&trio.s, migration_deadline(args, MIGRATE_TIMEOUT))?
                .ok_or("S did not answer the migration in time")?;
            let returned = Instant::now();
            let kill_at = returned + Duration::from_micros(us.unsigned_abs());
            (Some(migration), Some(returned), kill_at)
        }
        Kill::AroundReturn(ms) if ms >= 0 => {
            let migration = migration_answer(&trio.s, migration_deadline(args, MIGRATE_TIMEOUT))?
                .ok_or("S did not answer the migration in time")?;
            let returned = Instant::now();
            let kill_at = returned + Duration::from_millis(ms.unsigned_abs());
            (Some(migration), Some(returned), kill_at)
        }
        Kill::AroundReturn(ms) => {
            let expected = holding + Duration::from_millis(args.hold_ms) + RETURN_ESTIMATE;
            let before = Duration::from_millis(ms.unsigned_abs());
            let kill_at = expected.checked_sub(before).unwrap_or(expected);
            let migration = migration_answer(&trio.s, kill_at)?;
            let returned = migration.as_ref().map(|_| Instant::now());
            (migration, returned, kill_at)
        }
        Kill::InFlight(us) => {
            trio.s.answer("HELD", hold_deadline)?;
            let kill_at = Instant::now() + Duration::from_micros(us.unsigned_abs());
            let migration = migration_answer(&trio.s, kill_at)?;
            let returned = migration.as_ref().map(|_| Instant::now());
            (migration, returned, kill_at)
        }
    };
    if let Some(wait) = kill_at.checked_duration_since(Instant::now()) {
        thread::sleep(wait);
    }
    let killed = Instant::now();
    trio.s.kill()?;
    let drawn = match kill {
        Kill::AroundReturn(ms) => format!("drawn {ms:+} ms from migrate's return"),
        Kill::InFlight(us) => format!(
            "drawn {} after the hand-over",
            ms(Duration::from_micros(us.unsigned_abs()))
        ),
        Kill::JustAfterReturn(us) => format!(
            "drawn {} after migrate's return",
            ms(Duration::from_micros(us.unsigned_abs()))
        ),
    };
    let when = match returned {
        Some(returned) => format!("{} after migrate returned", ms(killed - returned)),
        None => "before migrate returned".to_owned(),
    };
    let migrated = match &migration {
        Some(m) => format!(
            "migrate {} {} after the hold ({} queued deposits moved)",
            m.outcome,
            signed_ms(m.after_hold_us),
            m.moved
        ),
        None => "migrate unfinished".to_owned(),
    };
    Ok(format!("kill -9 S {when} ({drawn}), {migrated}"))
}

fn scenario(trio: &mut Trio, args: &Args, kill: Kill) -> Result<Outcome, String> {
    let pid = spawn_account(trio)?;
    let in_doubt_before = in_doubt(trio)?;
    start_senders(trio, &SENDERS, pid, args)?;
    thread::sleep(WARM_UP);
    let s_id = trio.s.id;
    let head = migrate_and_kill(trio, args, kill)?;
    let killed = Instant::now();
    if !trio
        .x
        .wait_event(&format!("DOWN {s_id}"), killed + DOWN_DEADLINE)
    {
        return Err(format!("X did not see S Down within {DOWN_DEADLINE:?}"));
    }
    let report = wait_senders_on_x(trio)?;
    thread::sleep(CRASH_SETTLE);

    // The account, by name, as X sees the registry.
    let holders: Vec<String> = from_json("holders", &trio.x.request("WHEREIS", "WHEREIS")?)?;
    let Some(holder) = holders.first() else {
        halt_senders(trio, &[JUDGED])?;
        return Ok(Outcome {
            verdict: Verdict::NotJudged,
            line: format!(
                "(not judged) {head}; the name has no holder after S's death; {} accepted {}",
                JUDGED.label(),
                report.accepted
            ),
        });
    };
    let account = parse_pid(holder)?;
    let deadline = Instant::now() + SETTLE_DEADLINE;
    let mut handled = None;
    // Read until the count holds still (deposits may still be in flight to T).
    loop {
        let tally = query(&mut trio.x, account)?;
        let now = tally.get(JUDGED.id as usize).map_or(0, |t| t.handled);
        if handled == Some(now) || Instant::now() >= deadline {
            break;
        }
        handled = Some(now);
        thread::sleep(Duration::from_millis(300));
    }
    let handled = handled.unwrap_or(0);
    let in_doubt = in_doubt(trio)?.saturating_sub(in_doubt_before);
    let report = halt_senders(trio, &[JUDGED])?
        .pop()
        .ok_or("no report of X's sender")?;
    let lost = i128::from(report.accepted)
        - i128::from(handled)
        - i128::from(report.bounced)
        - i128::from(in_doubt);
    Ok(Outcome::judged(
        lost <= 0,
        format!(
            "{head}; {}: accepted {} handled {handled} bounced {} in_doubt {in_doubt} lost {lost} \
             (account at {})",
            JUDGED.label(),
            report.accepted,
            report.bounced,
            if account.node() == trio.t.id {
                "T"
            } else {
                "?"
            }
        ),
    ))
}

/// Waits until X's sender posted everything; its report.
fn wait_senders_on_x(trio: &mut Trio) -> Result<crate::sender::SenderReport, String> {
    wait_senders(trio, &[JUDGED])?
        .pop()
        .ok_or_else(|| "no report of X's sender".to_owned())
}
