//! Scenario 1, **order**: the account moves S → T with a queue while three senders keep
//! posting: one on S (through the account's pid, on S itself), and two on X, one through the
//! pid and then by the registered name once it resolves elsewhere (as real clients do), one
//! through the pid only (following the library's redirects). Every sender's deposits must be
//! handled once each, in the order sent: none out of order, none twice, and handled =
//! accepted − bounced.

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use crate::account::Tally;
use crate::cluster::Trio;
use crate::settings::{Args, MIGRATE_TIMEOUT, SETTLE_DEADLINE, WARM_UP};
use crate::steps::{
    figures, halt_senders, migrate, query, sender_reports, spawn_account, start_senders,
    wait_senders, Outcome, Placement,
};
use crate::util::{ms, parse_pid, signed_ms};

const SENDERS: [Placement; 3] = [
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
    Placement {
        node: "X",
        id: 2,
        follow: false,
    },
];

pub fn run(args: &Args, certs: &Path) -> Result<Outcome, String> {
    let mut trio = Trio::start(certs, args.lease_ms)?;
    let outcome = scenario(&mut trio, args)?;
    trio.finish(false)?;
    Ok(outcome)
}

fn scenario(trio: &mut Trio, args: &Args) -> Result<Outcome, String> {
    let pid = spawn_account(trio)?;
    start_senders(trio, &SENDERS, pid, args)?;
    thread::sleep(WARM_UP);
    let migration = migrate(trio, MIGRATE_TIMEOUT, args)?;
    let moved = format!(
        "migrate {} in {}, {} after the hold ({} queued deposits moved)",
        migration.outcome,
        ms(Duration::from_micros(migration.took_us)),
        signed_ms(migration.after_hold_us),
        migration.moved
    );
    let Some(new_pid) = migration
        .pid
        .as_deref()
        .filter(|_| migration.outcome == "ok")
    else {
        halt_senders(trio, &SENDERS)?;
        return Ok(Outcome::judged(
            false,
            format!("{moved}: {}", migration.why.unwrap_or_default()),
        ));
    };
    let new_pid = parse_pid(new_pid)?;
    wait_senders(trio, &SENDERS)?;

    // Every accepted deposit handled (or the deadline): the bounces may come late.
    let deadline = Instant::now() + SETTLE_DEADLINE;
    let (reports, tallies) = loop {
        let reports = sender_reports(trio, &SENDERS)?;
        let tallies = query(&mut trio.x, new_pid)?;
        let settled = SENDERS.iter().zip(&reports).all(|(p, r)| {
            tallies
                .get(p.id as usize)
                .is_some_and(|t| t.handled + r.bounced == r.accepted)
        });
        if settled || Instant::now() >= deadline {
            break (reports, tallies);
        }
        thread::sleep(Duration::from_millis(50));
    };
    halt_senders(trio, &SENDERS)?;

    let mut pass = true;
    let mut parts = vec![moved];
    for (p, r) in SENDERS.iter().zip(&reports) {
        let t = tallies
            .get(p.id as usize)
            .copied()
            .unwrap_or(Tally::default());
        pass &= t.out_of_order == 0
            && t.behind == 0
            && t.repeats == 0
            && t.handled + r.bounced == r.accepted;
        parts.push(figures(p, r, &t));
    }
    Ok(Outcome::judged(pass, parts.join("; ")))
}
