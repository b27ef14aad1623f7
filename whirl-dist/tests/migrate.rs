//! Migration between nodes in one process, on loopback: a process moves with its state and
//! its queue while two nodes keep posting to it; every message arrives once, each sender's in
//! order; asks follow it; watchers see it move and still see it end; its name follows it; a
//! refused migration restores the process where it was. And hot deployment: every process
//! moves to a new node, the old one shuts down, nothing is lost.
//!
//! No assertion is timed: each waits for a condition with a generous deadline.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use whirl::prelude::*;
use whirl_dist::{
    BounceReason, MigrateError, Node, NodeEvent, Pid, Remote, RemoteCallError, RemoteExit,
    RemotePostError, Request,
};

use common::{cluster, wait_explained, wait_for, DEADLINE};

#[derive(Message, Serialize, Deserialize, Debug, PartialEq)]
struct Deposit {
    from: u32,
    seq: u64,
    cents: i64,
}
impl Remote for Deposit {
    const TAG: &'static str = "mig.Deposit/1";
}

#[derive(Message, Serialize, Deserialize, Debug, PartialEq)]
struct Balance;
impl Remote for Balance {
    const TAG: &'static str = "mig.Balance/1";
}
impl Request for Balance {
    type Reply = (i64, u64, bool);
}

#[derive(Message)]
struct Slow(Duration);

/// Holds the account's worker until released, saying when it has started.
#[derive(Message)]
struct Hold;

/// Set by `Hold`'s handler when it starts; it returns once `RELEASE` is set.
static HOLDING: AtomicBool = AtomicBool::new(false);
static RELEASE: AtomicBool = AtomicBool::new(false);

/// An account: counts deposits and checks that each sender's arrive in order (with the
/// totals, which the tests check too, that is each exactly once and in order).
#[process]
#[derive(Serialize, Deserialize, Debug)]
struct Account {
    balance: i64,
    deposits: u64,
    /// Next sequence number expected from each sender.
    next: Vec<u64>,
    in_order: bool,
    /// The first deposit that came after a later one of its sender: (sender, seq, expected
    /// at least), what a failing order check prints.
    first_disorder: Option<(u32, u64, u64)>,
}

impl Account {
    fn new() -> Self {
        Account {
            balance: 0,
            deposits: 0,
            next: vec![0; 4],
            in_order: true,
            first_disorder: None,
        }
    }
}

#[process]
impl Account {
    #[handle]
    fn deposit(&mut self, d: Deposit) {
        self.balance += d.cents;
        self.deposits += 1;
        // Never one older than (or the same as) one already handled; a gap is a message that
        // was refused, came back or is in doubt, which the tests count.
        let next = &mut self.next[d.from as usize];
        if d.seq < *next {
            self.in_order = false;
            self.first_disorder.get_or_insert_with(|| {
                eprintln!(
                    "out of order: sender {} sent #{} after #{}",
                    d.from,
                    d.seq,
                    *next - 1
                );
                (d.from, d.seq, *next)
            });
        }
        *next = d.seq + 1;
    }

    #[handle]
    fn balance(&mut self, _: Balance) -> (i64, u64, bool) {
        (self.balance, self.deposits, self.in_order)
    }

    #[handle]
    fn slow(&mut self, Slow(d): Slow) {
        std::thread::sleep(d);
    }

    #[handle]
    fn hold(&mut self, _: Hold) {
        HOLDING.store(true, Relaxed);
        while !RELEASE.load(Relaxed) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

const KIND: &str = "mig.Account/1";

/// A node and its runtime, accepting account migrations.
struct Member {
    node: Node,
    rt: Runtime,
}

/// Taken by every test here: each runs senders posting thousands of messages, and several at
/// once on two cores (in a debug build) starve Zenoh's keep-alives.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A lease long enough that a loaded machine does not take a busy node for Down (these tests
/// shut nodes down gracefully, which peers see at once).
fn patient(config: whirl_dist::NodeConfig) -> whirl_dist::NodeConfig {
    config.lease(Duration::from_secs(10))
}

fn members(n: usize) -> Vec<Member> {
    members_with(&vec![KIND; n])
}

/// One node per kind name, each accepting account migrations under its kind.
fn members_with(kinds: &[&'static str]) -> Vec<Member> {
    let (nodes, _) = cluster(kinds.len(), patient);
    nodes
        .into_iter()
        .zip(kinds)
        .map(|(node, kind)| {
            let rt = Runtime::builder()
                .threads(1)
                .build()
                .expect("the runtime starts");
            node.accept_migrations::<Account, _>(kind, rt.default_group(), |e| {
                e.accept::<Deposit>().answer::<Balance>()
            })
            .expect("accept migrations");
            Member { node, rt }
        })
        .collect()
}

/// The account's figures; an ask refused because the way there is full (senders are
/// flooding it) is asked again.
fn balance(node: &Node, pid: Pid) -> (i64, u64, bool) {
    let give_up = std::time::Instant::now() + DEADLINE;
    loop {
        match node
            .remote::<Balance>(pid)
            .request(Balance)
            .timeout(DEADLINE)
            .call()
        {
            Ok(answer) => return answer,
            Err(
                RemoteCallError::Post(RemotePostError::Rejected(_))
                | RemoteCallError::Bounced {
                    reason: BounceReason::Rejected,
                    ..
                },
            ) if std::time::Instant::now() < give_up => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("no answer: {e}"),
        }
    }
}

#[test]
fn a_process_moves_with_its_state_and_queue_while_senders_keep_posting() {
    let _serial = one_at_a_time();
    let m = members(3);
    let (a, b, c) = (&m[0], &m[1], &m[2]);
    let account = a.rt.spawn(Account::new());
    let pid = a
        .node
        .export(&account)
        .accept::<Deposit>()
        .answer::<Balance>()
        .build()
        .expect("export");
    a.node.register("account", pid).expect("register");

    // C watches it; it must see it move, not end.
    let events = c.node.events();
    let ended = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&ended);
    c.node.monitor_with(pid, move |_: RemoteExit| {
        seen.fetch_add(1, Relaxed);
    });

    // Two senders (B and C, one thread each) post 3,000 deposits each, retrying a refusal,
    // while the account moves from A to B with deposits queued.
    const N: u64 = 3_000;
    let posted = Arc::new(AtomicU64::new(0));
    let senders: Vec<_> = [(1u32, b), (2u32, c)]
        .into_iter()
        .map(|(from, member)| {
            let addr = member.node.remote::<Deposit>(pid);
            let posted = Arc::clone(&posted);
            std::thread::spawn(move || {
                for seq in 0..N {
                    let mut msg = Deposit {
                        from,
                        seq,
                        cents: 1,
                    };
                    loop {
                        match addr.post(msg) {
                            Ok(()) => break,
                            Err(e) => {
                                msg = e.into_message();
                                std::thread::sleep(Duration::from_micros(200));
                            }
                        }
                    }
                    posted.fetch_add(1, Relaxed);
                    if seq % 64 == 0 {
                        std::thread::sleep(Duration::from_micros(300));
                    }
                }
            })
        })
        .collect();
    wait_for("some deposits", || a.rt.counts().posted > 500);
    // Hold the account's worker so deposits queue up behind it, then move it: the hand-over
    // happens when the hold ends, with the deposits queued.
    account.post(Hold).expect("post");
    wait_for("the hold", || HOLDING.load(Relaxed));
    // More than a turn's budget (64): a turn handles what it already knows is queued before
    // it looks for the hand-over request, so some stay queued whatever the timing.
    wait_for("deposits to queue", || a.rt.counts().queued() > 200);
    // Released once B has answered the migration's probe and a moment later, so that the
    // hand-over is requested while the hold still runs (B receives nothing else here).
    let b_delivered = b.node.counts().delivered;
    let moved = std::thread::scope(|s| {
        s.spawn(|| {
            wait_for("the probe", || b.node.counts().delivered > b_delivered);
            std::thread::sleep(Duration::from_millis(50));
            RELEASE.store(true, Relaxed);
        });
        a.node
            .migrate(&account, b.node.id(), DEADLINE)
            .expect("migrated")
    });
    assert_eq!(moved.node(), b.node.id());
    for sender in senders {
        sender.join().expect("sender");
    }
    wait_for("every deposit", || balance(&a.node, moved).1 == 2 * N);
    let (cents, deposits, in_order) = balance(&c.node, moved);
    assert_eq!((cents, deposits), (2 * N as i64, 2 * N));
    assert!(in_order, "each sender's deposits arrived in order");
    // Asks through the old pid follow it too.
    assert_eq!(balance(&c.node, pid).1, 2 * N);

    // The name follows it; C saw it move and its watch followed.
    wait_for("the name to follow", || {
        a.node.whereis::<Deposit>("account").map(|r| r.pid()) == Some(moved)
    });
    wait_for("C to see the move", || {
        events.try_iter().any(|e| {
            e == NodeEvent::Moved {
                from: pid,
                to: moved,
            }
        })
    });
    assert_eq!(ended.load(Relaxed), 0, "a move is not an end");
    let counts = a.rt.counts();
    assert!(
        counts.moved > 0,
        "deposits were queued when it moved: {counts:?}"
    );
    assert_eq!(counts.dead_lettered, 0, "{counts:?}");
    assert_eq!(
        counts.posted,
        counts.handled + counts.dead_lettered + counts.moved,
        "{counts:?}"
    );
    assert!(a.node.counts().migrated_out == 1 && b.node.counts().migrated_in == 1);
    // (Whether the senders were still posting when it moved, so that some deposits were
    // redirected, depends on the machine's speed: the order tests below make sure of it.)
}

/// The process asked for its type by a kind name that B does not know: B refuses before
/// anything moves, and the process goes on where it was, untouched.
#[test]
fn a_refused_migration_leaves_the_process_where_it_was() {
    let _serial = one_at_a_time();
    // B knows accounts under another kind name, so it refuses this one.
    let m = members_with(&[KIND, "mig.Account/2"]);
    let (a, b) = (&m[0], &m[1]);
    let account = a.rt.spawn(Account::new());
    let pid = a
        .node
        .export(&account)
        .accept::<Deposit>()
        .answer::<Balance>()
        .build()
        .expect("export");
    assert!(matches!(
        a.node.migrate(&account, a.node.id(), DEADLINE),
        Err(MigrateError::SameNode)
    ));
    let sender = b.node.remote::<Deposit>(pid);
    account.post(Slow(Duration::from_millis(50))).expect("post");
    for seq in 0..100 {
        let deposit = Deposit {
            from: 1,
            seq,
            cents: 2,
        };
        sender.post(deposit).expect("post");
    }
    match a.node.migrate(&account, b.node.id(), DEADLINE) {
        Err(MigrateError::Refused { why }) => assert!(why.contains("no migrations of that kind")),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(a.rt.counts().moved, 0, "nothing was handed over");
    for seq in 100..200 {
        let deposit = Deposit {
            from: 1,
            seq,
            cents: 2,
        };
        sender.post(deposit).expect("post");
    }
    wait_for("the deposits", || balance(&b.node, pid).1 == 200);
    assert_eq!(balance(&b.node, pid), (400, 200, true));
}

#[test]
fn hot_deployment_moves_every_process_and_the_old_node_leaves() {
    let _serial = one_at_a_time();
    let mut m = members(3).into_iter();
    let (old, new, client) = (
        m.next().expect("old"),
        m.next().expect("new"),
        m.next().expect("client"),
    );
    let pids: Vec<(Addr<Account>, Pid)> = (0..5)
        .map(|_| {
            let addr = old.rt.spawn(Account::new());
            let pid = old
                .node
                .export(&addr)
                .accept::<Deposit>()
                .answer::<Balance>()
                .build()
                .expect("export");
            (addr, pid)
        })
        .collect();
    let post_all = |from: u64, to: u64| {
        for (_, pid) in &pids {
            let addr = client.node.remote::<Deposit>(*pid);
            for seq in from..to {
                let deposit = Deposit {
                    from: 3,
                    seq,
                    cents: 1,
                };
                addr.post(deposit).expect("post");
            }
        }
    };
    post_all(0, 200);
    let moved: Vec<Pid> = pids
        .iter()
        .map(|(addr, _)| {
            old.node
                .migrate(addr, new.node.id(), DEADLINE)
                .expect("migrated")
        })
        .collect();
    // The client keeps using the old pids: they follow.
    post_all(200, 300);
    for pid in &moved {
        let counts = || {
            format!(
                "300 deposits to {pid}: old {:?} {:?}; client {:?}",
                old.rt.counts(),
                old.node.counts(),
                client.node.counts()
            )
        };
        wait_explained(|| balance(&client.node, *pid).1 == 300, counts);
    }
    let counts = old.rt.counts();
    assert_eq!(counts.dead_lettered, 0, "{counts:?}");
    assert_eq!(counts.posted, counts.handled + counts.moved, "{counts:?}");
    assert_eq!(old.node.counts().migrated_out, 5);

    // The old node leaves; the old pids still lead to the processes.
    let old_id = old.node.id();
    old.node.shutdown().expect("the old node leaves");
    wait_for("the client to see it down", || {
        client.node.state(old_id) == Some(whirl_dist::MemberState::Quarantined)
    });
    post_all(300, 400);
    for pid in &moved {
        wait_for("400 deposits", || balance(&client.node, *pid).1 == 400);
        assert_eq!(balance(&client.node, *pid), (400, 400, true));
    }
    drop(new);
}

/// Posts `n` numbered deposits as sender `from` through `addr`, retrying each refusal before
/// the next (so a retry never reorders), pausing 1 ms after every 32 so that posting goes on
/// through a migration; `bounced` counts what comes back.
fn post_numbered(
    addr: whirl_dist::RemoteAddr<Deposit>,
    from: u32,
    n: u64,
    bounced: Arc<AtomicU64>,
) -> std::thread::JoinHandle<()> {
    let addr = counting(addr, &bounced);
    std::thread::spawn(move || {
        for seq in 0..n {
            post_paced(&addr, from, seq);
        }
    })
}

/// `addr`, with a bounce handler that counts what comes back in `bounced`.
fn counting(
    addr: whirl_dist::RemoteAddr<Deposit>,
    bounced: &Arc<AtomicU64>,
) -> whirl_dist::RemoteAddr<Deposit> {
    let counter = Arc::clone(bounced);
    addr.on_bounce(move |_| {
        counter.fetch_add(1, Relaxed);
    })
}

/// Posts deposit `seq` of sender `from`, again until it is taken (so a retry never reorders),
/// pausing 1 ms after every 32.
fn post_paced(addr: &whirl_dist::RemoteAddr<Deposit>, from: u32, seq: u64) {
    let mut msg = Deposit {
        from,
        seq,
        cents: 1,
    };
    while let Err(e) = addr.post(msg) {
        msg = e.into_message();
        std::thread::sleep(Duration::from_micros(200));
    }
    if seq % 32 == 31 {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Regression (issue 34): with a queue built up, senders on the node the process leaves, on
/// the node it goes to and on a third node, through its old pid, and one on the third node
/// that follows its name, keep their order. The old node answered a fence while it was still
/// sending back frames it had held, a sender on the old node itself passed its fence at once,
/// and a sender that found the new pid by name overtook its own messages still coming back.
#[test]
fn senders_on_every_node_keep_their_order_through_a_move_with_a_queue() {
    let _serial = one_at_a_time();
    let m = members(3);
    let (a, b, c) = (&m[0], &m[1], &m[2]);
    for round in 0..3 {
        let account = a.rt.spawn(Account::new());
        let pid = a
            .node
            .export(&account)
            .accept::<Deposit>()
            .answer::<Balance>()
            .build()
            .expect("export");
        const N: u64 = 6_000;
        let name = format!("ordered-{round}");
        let unrouted_before: u64 = m.iter().map(|x| x.node.counts().returned_unrouted).sum();
        a.node.register(&name, pid).expect("register");
        wait_for("the name", || c.node.whereis::<Deposit>(&name).is_some());
        let bounced = Arc::new(AtomicU64::new(0));
        let senders: Vec<_> = [(0u32, a), (1, b), (2, c)]
            .into_iter()
            .map(|(from, member)| {
                post_numbered(
                    member.node.remote::<Deposit>(pid),
                    from,
                    N,
                    Arc::clone(&bounced),
                )
            })
            .collect();
        wait_for("some deposits", || balance(&c.node, pid).1 > 300);
        // A queue behind a slow message, then the move.
        account
            .post(Slow(Duration::from_millis(30 + 20 * round)))
            .expect("post");
        std::thread::sleep(Duration::from_millis(10));
        // A fourth sender, on C, looks the name up again every 32 deposits and posts to
        // whatever pid it finds: the new one as soon as the name follows the process.
        // It posts at least N, and goes on until it has posted 256 to the new pid.
        let (moved, followed) = std::thread::scope(|s| {
            let follower = s.spawn(|| {
                let found = c.node.whereis::<Deposit>(&name).expect("registered");
                let mut addr = counting(found, &bounced);
                let first = addr.pid();
                let mut switched_at = None;
                let give_up = std::time::Instant::now() + DEADLINE;
                let mut seq = 0;
                while seq < N || switched_at.is_none_or(|at| seq < at + 256) {
                    assert!(
                        std::time::Instant::now() < give_up,
                        "the name never led to the new pid"
                    );
                    if seq % 32 == 0 {
                        if let Some(found) = c.node.whereis::<Deposit>(&name) {
                            if found.pid() != first && switched_at.is_none() {
                                switched_at = Some(seq);
                            }
                            addr = counting(found, &bounced);
                        }
                    }
                    post_paced(&addr, 3, seq);
                    seq += 1;
                }
                seq
            });
            let moved = a
                .node
                .migrate(&account, b.node.id(), DEADLINE)
                .expect("migrated");
            (moved, follower.join().expect("follower"))
        });
        for sender in senders {
            sender.join().expect("sender");
        }
        // What came back is not handled (see `a_process_that_keeps_moving...`).
        let unrouted = || -> u64 { m.iter().map(|x| x.node.counts().returned_unrouted).sum() };
        let expected = 3 * N + followed - bounced.load(Relaxed);
        wait_for("every deposit", || {
            balance(&c.node, moved).1 == expected - (unrouted() - unrouted_before)
        });
        let expected = expected - (unrouted() - unrouted_before);
        let (_, deposits, in_order) = balance(&a.node, moved);
        assert_eq!(deposits, expected, "round {round}");
        assert!(
            in_order,
            "round {round}: each sender's deposits arrived in order"
        );
    }
}

/// Regression (issue 34): a migration whose time limit is shorter than a round trip leaves
/// the process here, and the target never starts a second copy: the time limit covers only
/// the question whether the target takes it, before anything is sent. (The target restored
/// the process it had been sent while the source, timed out, restored it too.)
#[test]
fn a_migration_that_times_out_leaves_one_copy() {
    let _serial = one_at_a_time();
    let m = members(2);
    let (a, b) = (&m[0], &m[1]);
    for timeout in [
        Duration::ZERO,
        Duration::from_micros(1),
        Duration::from_micros(200),
    ] {
        let account = a.rt.spawn(Account::new());
        let pid = a
            .node
            .export(&account)
            .accept::<Deposit>()
            .answer::<Balance>()
            .build()
            .expect("export");
        let sender = b.node.remote::<Deposit>(pid);
        for seq in 0..100 {
            sender
                .post(Deposit {
                    from: 1,
                    seq,
                    cents: 1,
                })
                .expect("post");
        }
        let spawned_before = b.rt.counts().spawned;
        let now_at = match a.node.migrate(&account, b.node.id(), timeout) {
            Ok(moved) => moved,
            Err(MigrateError::Refused { .. }) => pid,
            Err(other) => panic!("unexpected {other:?}"),
        };
        for seq in 100..200 {
            sender
                .post(Deposit {
                    from: 1,
                    seq,
                    cents: 1,
                })
                .expect("post");
        }
        wait_for("the deposits", || balance(&b.node, now_at).1 == 200);
        assert_eq!(balance(&b.node, now_at), (200, 200, true));
        // Long after any frame of the attempt arrived, the other node runs no copy.
        std::thread::sleep(Duration::from_millis(300));
        let copies_on_b = b.rt.counts().spawned - spawned_before;
        match now_at.node() == b.node.id() {
            true => assert_eq!(copies_on_b, 1, "one copy, on the target"),
            false => assert_eq!(copies_on_b, 0, "no copy on the target"),
        }
    }
}

/// Regression (issue 34): the node a process leaves stops at once after `migrate` returned,
/// dropping what it had not sent yet. No message its sender counted as delivered is lost: the
/// node acknowledges the frames it held for the moving process only after sending them back,
/// so what it had not sent back is in doubt at the sender, and the rest reached the process.
/// (It acknowledged them while holding them, so they were lost silently with it.)
#[test]
fn the_old_node_stopping_right_after_a_move_loses_nothing_silently() {
    let _serial = one_at_a_time();
    for round in 0..4 {
        stop_right_after_a_move(round);
    }
}

fn stop_right_after_a_move(round: u32) {
    let mut m = members(3).into_iter();
    let (a, b, c) = (
        m.next().expect("a"),
        m.next().expect("b"),
        m.next().expect("c"),
    );
    let account = a.rt.spawn(Account::new());
    let pid = a
        .node
        .export(&account)
        .accept::<Deposit>()
        .answer::<Balance>()
        .build()
        .expect("export");
    let bounced = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&bounced);
    let addr = c.node.remote::<Deposit>(pid).on_bounce(move |_| {
        counter.fetch_add(1, Relaxed);
    });
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = Arc::clone(&stop);
    // Accepted posts; a refusal is not retried (after the old node is Down, posts to its pid
    // are refused at once).
    let sender = std::thread::spawn(move || {
        let mut accepted = 0u64;
        let mut seq = 0;
        while !stopping.load(Relaxed) {
            let deposit = Deposit {
                from: 1,
                seq,
                cents: 1,
            };
            seq += 1;
            if addr.post(deposit).is_ok() {
                accepted += 1;
            }
            if seq % 16 == 0 {
                std::thread::sleep(Duration::from_micros(500));
            }
        }
        accepted
    });
    wait_for("some deposits", || a.rt.counts().handled > 300);
    // Frames are held while it moves: a queue behind a slow message makes that take a while.
    account.post(Slow(Duration::from_millis(50))).expect("post");
    let moved = a
        .node
        .migrate(&account, b.node.id(), DEADLINE)
        .expect("migrated");
    let in_doubt_before = c.node.counts().in_doubt;
    let a_id = a.node.id();
    a.node.shutdown().expect("the old node leaves");
    wait_for("c to see a down", || {
        c.node.state(a_id) == Some(whirl_dist::MemberState::Quarantined)
    });
    std::thread::sleep(Duration::from_millis(100));
    stop.store(true, Relaxed);
    let accepted = sender.join().expect("sender");
    let in_doubt = c.node.counts().in_doubt - in_doubt_before;
    // Settled: what reached the process is handled.
    let mut handled = 0;
    wait_for("the deposits to settle", || {
        let now = balance(&c.node, moved).1;
        let settled = now == handled;
        handled = now;
        std::thread::sleep(Duration::from_millis(100));
        settled
    });
    let (_, deposits, in_order) = balance(&c.node, moved);
    let bounced = bounced.load(Relaxed);
    assert!(in_order, "round {round}: in order");
    // In doubt is what the sender cannot know about: each such message was handled (it
    // reached the process, but its acknowledgement was lost with the node) or lost with the
    // node; nothing else is lost, and nothing is handled twice.
    assert!(
        deposits + bounced + in_doubt >= accepted,
        "round {round}: lost silently: accepted {accepted}, handled {deposits}, bounced {bounced}, in doubt {in_doubt}"
    );
    assert!(
        deposits + bounced <= accepted,
        "round {round}: handled twice: accepted {accepted}, handled {deposits}, bounced {bounced}"
    );
    drop(a.rt);
}

/// A process whose state is nothing: an account's state does not decode as one.
#[process]
#[derive(Serialize, Deserialize, Debug)]
struct Unit;

#[process]
impl Unit {
    #[handle]
    fn deposit(&mut self, _: Deposit) {}
}

/// B takes processes of the account's kind name but restores them as another type, which
/// cannot read the state: it says it did not start it, and the account runs where it was
/// again, with its queue, under a new local id; B runs no copy.
#[test]
fn a_process_the_target_cannot_restore_runs_here_again() {
    let _serial = one_at_a_time();
    let (nodes, _) = cluster(2, patient);
    let (a, b) = (&nodes[0], &nodes[1]);
    let (ra, rb) = (Runtime::new(), Runtime::new());
    a.accept_migrations::<Account, _>(KIND, ra.default_group(), |e| {
        e.accept::<Deposit>().answer::<Balance>()
    })
    .expect("accept");
    b.accept_migrations::<Unit, _>(KIND, rb.default_group(), |e| e.accept::<Deposit>())
        .expect("accept");
    let account = ra.spawn(Account::new());
    let pid = a
        .export(&account)
        .accept::<Deposit>()
        .answer::<Balance>()
        .build()
        .expect("export");
    let sender = b.remote::<Deposit>(pid);
    account.post(Slow(Duration::from_millis(50))).expect("post");
    for seq in 0..100 {
        let deposit = Deposit {
            from: 1,
            seq,
            cents: 2,
        };
        sender.post(deposit).expect("post");
    }
    let restored_as = match a.migrate(&account, b.id(), DEADLINE) {
        Err(MigrateError::Failed { restored_as, why }) => {
            assert!(why.contains("did not start it"), "{why}");
            restored_as
        }
        other => panic!("expected a failure, got {other:?}"),
    };
    assert_eq!(restored_as.node(), a.id());
    assert_ne!(restored_as, pid);
    for seq in 100..200 {
        let deposit = Deposit {
            from: 1,
            seq,
            cents: 2,
        };
        sender.post(deposit).expect("post");
    }
    wait_for("the deposits", || balance(b, pid).1 == 200);
    assert_eq!(balance(b, restored_as), (400, 200, true));
    assert_eq!(rb.counts().spawned, 0, "no copy on the target");
}

/// A process moves around three nodes, A → B → C → A → B, one move right after the other,
/// while a sender on each node posts through its first pid and one follows its name: every
/// deposit arrives once, each sender's in order, and the name ends with one holder, where the
/// process runs.
#[test]
fn a_process_that_keeps_moving_keeps_every_senders_order() {
    let _serial = one_at_a_time();
    let m = members(3);
    let account = m[0].rt.spawn(Account::new());
    let pid = m[0]
        .node
        .export(&account)
        .accept::<Deposit>()
        .answer::<Balance>()
        .build()
        .expect("export");
    m[0].node.register("wanderer", pid).expect("register");
    wait_for("the name", || {
        m.iter()
            .all(|member| member.node.whereis::<Deposit>("wanderer").is_some())
    });
    const N: u64 = 8_000;
    let bounced = Arc::new(AtomicU64::new(0));
    let senders: Vec<_> = m
        .iter()
        .enumerate()
        .map(|(from, member)| {
            post_numbered(
                member.node.remote::<Deposit>(pid),
                from as u32,
                N,
                Arc::clone(&bounced),
            )
        })
        .collect();
    wait_for("some deposits", || balance(&m[1].node, pid).1 > 200);
    let (now, moves) = std::thread::scope(|s| {
        let follower = s.spawn(|| {
            let node = &m[2].node;
            let found = node.whereis::<Deposit>("wanderer").expect("registered");
            let mut addr = counting(found, &bounced);
            for seq in 0..N {
                if seq % 16 == 0 {
                    if let Some(found) = node.whereis::<Deposit>("wanderer") {
                        addr = counting(found, &bounced);
                    }
                }
                post_paced(&addr, 3, seq);
            }
        });
        // Each move is made by the node the process is on, with a handle to it there.
        let mut here = 0usize;
        let mut local: Addr<Account> = account.clone();
        let mut moves = 0;
        for next in [1usize, 2, 0, 1] {
            let moved = m[here]
                .node
                .migrate(&local, m[next].node.id(), DEADLINE)
                .expect("migrated");
            moves += 1;
            here = next;
            local = m[here]
                .node
                .local::<Account>(moved)
                .expect("the moved process runs there");
        }
        follower.join().expect("follower");
        (Pid::new(m[here].node.id(), local.id().as_u64()), moves)
    });
    for sender in senders {
        sender.join().expect("sender");
    }
    assert_eq!(moves, 4);
    let expected = 4 * N - bounced.load(Relaxed);
    wait_for("every deposit", || {
        let unrouted: u64 = m.iter().map(|x| x.node.counts().returned_unrouted).sum();
        balance(&m[2].node, now).1 == expected - unrouted
    });
    let unrouted: u64 = m.iter().map(|x| x.node.counts().returned_unrouted).sum();
    let expected = expected - unrouted;
    let (_, deposits, in_order) = balance(&m[0].node, now);
    // What came back (a resend that found the window to the new node full is given back,
    // Rejected, to its bounce handler, or counted unrouted once the address that sent it is
    // gone) is not handled; everything else is, once each and in order.
    assert_eq!((deposits, in_order), (expected, true));
    let views = || -> Vec<Vec<Pid>> {
        m.iter()
            .map(|member| member.node.whereis_all("wanderer"))
            .collect()
    };
    let converged = (0..6_000).any(|_| {
        let converged = views().iter().all(|view| *view == vec![now]);
        if !converged {
            std::thread::sleep(Duration::from_millis(5));
        }
        converged
    });
    let ids: Vec<_> = m.iter().map(|member| member.node.id()).collect();
    assert!(
        converged,
        "one holder of the name, where it runs ({now}), on every node {ids:?}: the nodes see {:?}",
        views()
    );
}
