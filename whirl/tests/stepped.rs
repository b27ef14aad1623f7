//! A stepped runtime (`RuntimeBuilder::stepped`): no worker threads; the caller runs one turn
//! at a time and picks the group. Two runs making the same picks handle the same messages in
//! the same order; different picks can interleave groups differently.

use std::sync::{Arc, Mutex};

use whirl::prelude::*;
use whirl::SharedClient;

#[derive(Message)]
struct Hop(u32);

#[process]
struct Relay {
    name: &'static str,
    next: Option<Addr<Relay>>,
    log: SharedClient<Arc<Mutex<Vec<String>>>>,
}

#[process]
impl Relay {
    #[handle]
    fn hop(&mut self, Hop(n): Hop) {
        if let Ok(mut log) = self.log.lock() {
            log.push(format!("{}:{n}", self.name));
        }
        if let (Some(next), true) = (&self.next, n > 0) {
            let _ = next.post(Hop(n - 1));
        }
    }
}

/// Runs two chains of relays in two groups, picking the group to run by `pick`; returns the
/// order of the hops and the turns run.
fn run(mut pick: impl FnMut(usize) -> usize) -> (Vec<String>, usize) {
    let rt = Runtime::builder().stepped().build().expect("runtime");
    let other = rt.group("other").threads(1).build().expect("group");
    let log = Arc::new(Mutex::new(Vec::new()));
    let relay = |name, next, group: Option<&Group>| {
        let state = Relay {
            name,
            next,
            log: SharedClient::new(Arc::clone(&log), "the test's log"),
        };
        match group {
            Some(group) => rt.spawner().group(group).spawn(state),
            None => rt.spawn(state),
        }
    };
    let b = relay("b", None, Some(&other));
    let a = relay("a", Some(b.clone()), None);
    let d = relay("d", Some(a.clone()), Some(&other));
    let c = relay("c", Some(d), None);
    a.post(Hop(3)).expect("posted");
    c.post(Hop(4)).expect("posted");
    let mut turns = 0;
    while rt.run_one(&mut pick).is_some() {
        turns += 1;
        assert!(turns < 1_000, "the relays never went quiet");
    }
    let hops = log.lock().expect("log").clone();
    (hops, turns)
}

#[test]
fn nothing_runs_until_the_caller_runs_it() {
    let rt = Runtime::builder().stepped().build().expect("runtime");
    let log = Arc::new(Mutex::new(Vec::new()));
    let a = rt.spawn(Relay {
        name: "a",
        next: None,
        log: SharedClient::new(Arc::clone(&log), "the test's log"),
    });
    a.post(Hop(0)).expect("posted");
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(log.lock().expect("log").is_empty(), "a turn ran on its own");
    while rt.run_one(|_| 0).is_some() {}
    assert_eq!(*log.lock().expect("log"), ["a:0"]);
}

#[test]
fn the_same_picks_replay_the_same_run() {
    let seeded = |seed: u64| {
        let mut x = seed;
        move |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        }
    };
    let first = run(seeded(7));
    assert_eq!(first, run(seeded(7)));
    // Every hop of both chains is handled, whatever the picks.
    assert_eq!(first.0.len(), 6);
    let orders: std::collections::BTreeSet<Vec<String>> =
        (1..40).map(|seed| run(seeded(seed)).0).collect();
    assert!(orders.len() > 1, "the picks never changed the interleaving");
}

#[test]
fn a_runtime_with_workers_is_not_stepped() {
    let rt = Runtime::builder().threads(1).build().expect("runtime");
    assert_eq!(rt.run_one(|_| 0), None);
}

/// Logs each message; ends its turn after each if `yields`.
#[process]
struct Worker {
    name: &'static str,
    yields: bool,
    log: SharedClient<Arc<Mutex<Vec<String>>>>,
}

#[process]
impl Worker {
    #[handle]
    fn hop(&mut self, Hop(n): Hop, ctx: &mut Ctx<Self>) {
        if let Ok(mut log) = self.log.lock() {
            log.push(format!("{}:{n}", self.name));
        }
        if self.yields {
            ctx.end_turn();
        }
    }
}

/// Three messages for `a`, then one for `b`, in one group; the order they are handled in and
/// the turns it took.
fn three_and_one(yields: bool) -> (Vec<String>, usize) {
    let rt = Runtime::builder().stepped().build().expect("runtime");
    let log = Arc::new(Mutex::new(Vec::new()));
    let worker = |name| {
        rt.spawn(Worker {
            name,
            yields,
            log: SharedClient::new(Arc::clone(&log), "the test's log"),
        })
    };
    let (a, b) = (worker("a"), worker("b"));
    for n in 1..=3 {
        a.post(Hop(n)).expect("posted");
    }
    b.post(Hop(1)).expect("posted");
    let mut turns = 0;
    while rt.run_one(|_| 0).is_some() {
        turns += 1;
        assert!(turns < 100, "the workers never went quiet");
    }
    let hops = log.lock().expect("log").clone();
    (hops, turns)
}

#[test]
fn a_handler_that_ends_its_turn_lets_the_next_ready_process_run() {
    // A turn takes every queued message (within the group's budget)...
    let (hops, turns) = three_and_one(false);
    assert_eq!(hops, ["a:1", "a:2", "a:3", "b:1"]);
    assert_eq!(turns, 2);
    // ...unless its handler ends it: `a` goes behind `b`, and nothing is lost.
    let (hops, turns) = three_and_one(true);
    assert_eq!(hops, ["a:1", "b:1", "a:2", "a:3"]);
    assert_eq!(turns, 4);
}
