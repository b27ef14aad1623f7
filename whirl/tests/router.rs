//! Routers: each strategy's distribution, consistent hashing across resizes, nothing lost
//! (and the order per key kept) across member crashes, `Terminated` retried on another
//! member, bounded buffers, resizing and autoscaling.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use whirl::prelude::*;
use whirl::routing::{Autoscale, Router, Strategy};

/// A unit of work: `key` and `seq` identify it; `crash` makes the member fail instead (the
/// crashing message itself is the one a crash consumes).
#[derive(Message, Clone)]
struct Job {
    key: u64,
    seq: u64,
    crash: bool,
    /// How long the member works on it.
    work_us: u64,
    sink: Addr<Sink>,
}

/// What a member saw: which member, which job.
#[derive(Message)]
struct Seen {
    member: usize,
    key: u64,
    seq: u64,
}

#[derive(Message)]
struct Dump(ReplyTo<Vec<(usize, u64, u64)>>);

#[derive(Message)]
struct Count(ReplyTo<usize>);

#[derive(Message)]
struct Which(ReplyTo<usize>);

#[process]
struct Sink {
    seen: Vec<(usize, u64, u64)>,
}

#[process]
impl Sink {
    #[handle]
    fn seen(&mut self, Seen { member, key, seq }: Seen) {
        self.seen.push((member, key, seq));
    }

    #[handle]
    fn dump(&mut self, Dump(reply): Dump) {
        let _ = reply.send(self.seen.clone());
    }

    #[handle]
    fn count(&mut self, Count(reply): Count) {
        let _ = reply.send(self.seen.len());
    }
}

#[process]
struct Worker {
    index: usize,
}

#[process]
impl Worker {
    #[handle]
    fn job(&mut self, job: Job) -> Result<(), Failure> {
        if job.crash {
            return Err(Failure::new("injected crash"));
        }
        if job.work_us > 0 {
            std::thread::sleep(Duration::from_micros(job.work_us));
        }
        let _ = job.sink.post(Seen {
            member: self.index,
            key: job.key,
            seq: job.seq,
        });
        Ok(())
    }
}

#[process]
struct Asked {
    index: usize,
}

#[process]
impl Asked {
    #[handle]
    fn which(&mut self, Which(reply): Which) {
        let _ = reply.send(self.index);
    }
}

fn worker(index: usize, _: &()) -> Worker {
    Worker { index }
}

fn job(key: u64, seq: u64, sink: &Addr<Sink>) -> Job {
    Job {
        key,
        seq,
        crash: false,
        work_us: 0,
        sink: sink.clone(),
    }
}

const PATIENCE: Duration = Duration::from_secs(30);

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn wait_for_count(sink: &Addr<Sink>, n: usize) -> Vec<(usize, u64, u64)> {
    wait_for(&format!("{n} jobs seen"), || {
        sink.request_with(Count).call().unwrap() >= n
    });
    sink.request_with(Dump).call().unwrap()
}

fn per_member(seen: &[(usize, u64, u64)]) -> HashMap<usize, usize> {
    let mut counts = HashMap::new();
    for &(member, _, _) in seen {
        *counts.entry(member).or_default() += 1;
    }
    counts
}

#[test]
fn round_robin_gives_each_member_its_turn() {
    let rt = Runtime::new();
    let router = Router::builder(rt.default_group(), |index, _: &()| Asked { index }, ())
        .strategy(Strategy::round_robin())
        .members(4)
        .start();
    let mut counts = [0usize; 4];
    let mut order = Vec::new();
    for _ in 0..400 {
        let member = router.request_with(Which).call().unwrap();
        counts[member] += 1;
        order.push(member);
    }
    assert_eq!(counts, [100; 4]);
    // In turn: each window of 4 has every member once.
    for window in order.chunks(4) {
        let distinct: HashSet<_> = window.iter().collect();
        assert_eq!(distinct.len(), 4, "{window:?}");
    }
    rt.shutdown_graceful();
}

#[test]
fn random_spreads_over_every_member() {
    let rt = Runtime::new();
    let router = Router::builder(rt.default_group(), |index, _: &()| Asked { index }, ())
        .strategy(Strategy::random())
        .members(4)
        .start();
    let mut counts = [0usize; 4];
    let mut runs = 0;
    let mut last = usize::MAX;
    for _ in 0..2000 {
        let member = router.request_with(Which).call().unwrap();
        counts[member] += 1;
        runs += usize::from(member != last);
        last = member;
    }
    // Expected 500 each (sd ~19): far from round robin's exactness and from a stuck pick.
    assert!(
        counts.iter().all(|&c| (350..650).contains(&c)),
        "{counts:?}"
    );
    // Not in turn: round robin would change member on every message.
    assert!(runs < 1900, "{runs}");
    rt.shutdown_graceful();
}

#[test]
fn broadcast_gives_every_member_a_copy() {
    let rt = Runtime::new();
    let sink = rt.spawn(Sink { seen: vec![] });
    let router = Router::builder(rt.default_group(), worker, ())
        .strategy(Strategy::broadcast())
        .members(5)
        .start();
    for seq in 0..10 {
        router.post(job(0, seq, &sink)).unwrap();
    }
    let seen = wait_for_count(&sink, 50);
    assert_eq!(seen.len(), 50);
    let counts = per_member(&seen);
    assert_eq!(counts.len(), 5);
    assert!(counts.values().all(|&c| c == 10), "{counts:?}");
    rt.shutdown_graceful();
}

#[test]
fn custom_strategy_chooses_from_the_message() {
    let rt = Runtime::new();
    let sink = rt.spawn(Sink { seen: vec![] });
    let router = Router::builder(rt.default_group(), worker, ())
        .strategy(Strategy::custom(|job: &Job, members| {
            assert_eq!(members.len(), 3);
            (job.key % 2) as usize
        }))
        .members(3)
        .start();
    for seq in 0..60 {
        router.post(job(seq, seq, &sink)).unwrap();
    }
    let seen = wait_for_count(&sink, 60);
    for (member, key, _) in seen {
        assert_eq!(member as u64, key % 2);
    }
    rt.shutdown_graceful();
}

#[test]
fn custom_strategy_with_state_reads_it_in_every_poster() {
    let rt = Runtime::new();
    let sink = rt.spawn(Sink { seen: vec![] });
    // Keys 0..3 to members 2, 0, 1: a table the strategy reads, shared immutably.
    let router = Router::builder(rt.default_group(), worker, ())
        .strategy(Strategy::custom_with(
            vec![2usize, 0, 1],
            |table, job: &Job, _members| table[(job.key % 3) as usize],
        ))
        .members(3)
        .start();
    for seq in 0..30 {
        router.post(job(seq, seq, &sink)).unwrap();
    }
    let seen = wait_for_count(&sink, 30);
    for (member, key, _) in seen {
        assert_eq!(member, [2, 0, 1][(key % 3) as usize]);
    }
    rt.shutdown_graceful();
}

/// Which member each key went to, from a sink's record.
fn owners(seen: &[(usize, u64, u64)]) -> HashMap<u64, HashSet<usize>> {
    let mut owners: HashMap<u64, HashSet<usize>> = HashMap::new();
    for &(member, key, _) in seen {
        owners.entry(key).or_default().insert(member);
    }
    owners
}

#[test]
fn consistent_hash_keeps_keys_and_moves_about_one_in_n_on_resize() {
    let rt = Runtime::new();
    let router = Router::builder(rt.default_group(), worker, ())
        .strategy(Strategy::consistent_hash(|job: &Job| job.key))
        .members(4)
        .start();
    let keys = 1000u64;
    let before = rt.spawn(Sink { seen: vec![] });
    for round in 0..3 {
        for key in 0..keys {
            router.post(job(key, round, &before)).unwrap();
        }
    }
    let seen = wait_for_count(&before, 3 * keys as usize);
    let before_owners = owners(&seen);
    assert!(
        before_owners.values().all(|m| m.len() == 1),
        "a key on two members"
    );
    assert_eq!(per_member(&seen).len(), 4);

    router.resize(5).unwrap();
    wait_for("5 live members", || router.stats().live == 5);
    let after = rt.spawn(Sink { seen: vec![] });
    for key in 0..keys {
        router.post(job(key, 0, &after)).unwrap();
    }
    let after_owners = owners(&wait_for_count(&after, keys as usize));
    let mut moved = 0;
    for key in 0..keys {
        let old = *before_owners[&key].iter().next().unwrap();
        let new = *after_owners[&key].iter().next().unwrap();
        if old != new {
            moved += 1;
            assert_eq!(new, 4, "key {key} moved between old members");
        }
    }
    // Ideal: 1/5 of the keys move, all to the new member.
    assert!((100..=320).contains(&moved), "{moved} of {keys} keys moved");
    rt.shutdown_graceful();
}

#[test]
fn a_crash_loses_nothing_and_keeps_the_order_per_key() {
    let rt = Runtime::new();
    let sink = rt.spawn(Sink { seen: vec![] });
    // One thread, no LIFO slot and a short budget: when a member fails, the manager hears of
    // it only after the other members' turns, and posts made meanwhile bounce off the dead
    // member into its buffer, before the manager puts the dead member's old queue in front
    // of them. Each restart then waits 50 ms, so later posts wait in the buffer too.
    let group = rt
        .group("crashy")
        .threads(1)
        .lifo_slot(false)
        .budget(4)
        .build()
        .unwrap();
    let router = Router::builder(&group, worker, ())
        .strategy(Strategy::consistent_hash(|job: &Job| job.key))
        .members(3)
        .buffer(100_000)
        .restart_limit(0, Duration::from_secs(60), Duration::from_millis(50))
        .start();
    let keys = 12u64;
    let mut next_seq = 0u64;
    let mut post_batch = |router: &Router<Worker, Job>, per_key: u64| {
        for _ in 0..per_key {
            for key in 0..keys {
                let mut j = job(key, next_seq, &sink);
                j.work_us = 300;
                router.post(j).unwrap();
            }
            next_seq += 1;
        }
    };
    let crashes = 5;
    for round in 0..crashes {
        let before: Vec<_> = router.members().into_iter().flatten().collect();
        // A backlog, the crash, and more behind it: those are in the member's inbox when it
        // fails, and must reach its replacement first.
        post_batch(&router, 20);
        let mut crash = job(round % keys, u64::MAX, &sink);
        crash.crash = true;
        router.post(crash).unwrap();
        post_batch(&router, 20);
        let deadline = Instant::now() + PATIENCE;
        while !before.iter().any(Addr::is_terminated) {
            assert!(Instant::now() < deadline, "timed out waiting for the crash");
            std::thread::yield_now();
        }
        // Posted while the member is dead: they wait in its buffer, behind its old queue.
        post_batch(&router, 20);
        wait_for("the restart", || router.stats().restarts == round + 1);
    }
    let expected = (keys * next_seq) as usize;
    let seen = wait_for_count(&sink, expected);
    assert_eq!(seen.len(), expected, "a job was lost or handled twice");
    let mut last: HashMap<u64, u64> = HashMap::new();
    for &(_, key, seq) in &seen {
        if let Some(&prev) = last.get(&key) {
            assert_eq!(seq, prev + 1, "key {key}: {seq} after {prev}");
        } else {
            assert_eq!(seq, 0);
        }
        last.insert(key, seq);
    }
    let stats = router.stats();
    assert_eq!(stats.restarts, crashes);
    assert!(
        stats.salvaged > 0,
        "no queued message was carried over: {stats:?}"
    );
    assert!(
        stats.buffered > 0,
        "no message waited for a restart: {stats:?}"
    );
    assert_eq!(rt.stats().counts.dead_lettered, 0);
    // The accounting identity holds: what was salvaged counts as moved, then posted again.
    rt.block_until_idle();
    let c = group.counts();
    assert_eq!(
        c.posted,
        c.handled + c.rejected + c.dead_lettered + c.moved,
        "{c:?}"
    );
    assert!(c.moved > 0, "{c:?}");
    rt.shutdown_graceful();
}

#[test]
fn a_dead_member_bounces_to_another_member() {
    let rt = Runtime::new();
    let sink = rt.spawn(Sink { seen: vec![] });
    // Every restart waits 10 s: the dead member's slot stays dead for this test.
    let router = Router::builder(rt.default_group(), worker, ())
        .strategy(Strategy::round_robin())
        .members(3)
        .restart_limit(0, Duration::from_secs(60), Duration::from_secs(10))
        .start();
    let victim = router.members()[1].clone().unwrap();
    victim.exit(ExitReason::Failed(Failure::new("killed by the test")));
    wait_for("the member to end", || victim.is_terminated());
    for seq in 0..300 {
        router.post(job(seq, seq, &sink)).unwrap();
    }
    let seen = wait_for_count(&sink, 300);
    let counts = per_member(&seen);
    assert!(!counts.contains_key(&1), "{counts:?}");
    let stats = router.stats();
    assert!(stats.redirected >= 100, "{stats:?}");
    assert_eq!(stats.live, 2);
    rt.shutdown_graceful();
}

#[test]
fn a_restarting_member_buffers_in_order_and_overflow_comes_back() {
    let rt = Runtime::new();
    let sink = rt.spawn(Sink { seen: vec![] });
    let router = Router::builder(rt.default_group(), worker, ())
        .strategy(Strategy::consistent_hash(|job: &Job| job.key))
        .members(1)
        .buffer(5)
        .restart_limit(0, Duration::from_secs(60), Duration::from_millis(300))
        .start();
    let victim = router.members()[0].clone().unwrap();
    victim.exit(ExitReason::Failed(Failure::new("killed by the test")));
    wait_for("the member to end", || victim.is_terminated());
    for seq in 0..5 {
        router.post(job(7, seq, &sink)).unwrap();
    }
    match router.post(job(7, 5, &sink)) {
        Err(PostError::Rejected(back)) => assert_eq!(back.seq, 5),
        other => panic!("expected the sixth back, got {other:?}"),
    }
    assert_eq!(router.stats().overflowed, 1);
    // The replacement gets the five, in order.
    let seen = wait_for_count(&sink, 5);
    let seqs: Vec<u64> = seen.iter().map(|s| s.2).collect();
    assert_eq!(seqs, vec![0, 1, 2, 3, 4]);
    assert_eq!(router.stats().restarts, 1);
    rt.shutdown_graceful();
}

#[test]
fn resizing_up_and_down_loses_nothing() {
    let rt = Runtime::new();
    let sink = rt.spawn(Sink { seen: vec![] });
    let router = Router::builder(rt.default_group(), worker, ())
        .strategy(Strategy::consistent_hash(|job: &Job| job.key))
        .members(2)
        .start();
    let total = 3000u64;
    for seq in 0..total {
        let mut j = job(seq % 17, seq, &sink);
        j.work_us = 10;
        // A slot whose member is being replaced buffers up to `DEFAULT_BUFFER` messages; past
        // that the post hands the job back, and this sender tries it again.
        loop {
            match router.post(j) {
                Ok(()) => break,
                Err(PostError::Rejected(back)) => {
                    j = back;
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(other) => panic!("the router refused a job: {other:?}"),
            }
        }
        match seq {
            500 => router.resize(6).unwrap(),
            1200 => router.resize(1).unwrap(),
            2000 => router.resize(3).unwrap(),
            _ => {}
        }
    }
    let seen = wait_for_count(&sink, total as usize);
    let distinct: HashSet<u64> = seen.iter().map(|s| s.2).collect();
    assert_eq!(distinct.len(), total as usize);
    assert_eq!(seen.len(), total as usize);
    wait_for("3 members", || {
        let s = router.stats();
        s.members == 3 && s.live == 3
    });
    assert_eq!(router.size(), 3);
    assert_eq!(rt.stats().counts.dead_lettered, 0);
    rt.shutdown_graceful();
}

#[test]
fn autoscaling_follows_the_group_thread_count() {
    let rt = Runtime::new();
    let group = rt.group("pool").threads(3).build().unwrap();
    let router: Router<Worker, Job> = Router::builder(&group, worker, ())
        .members(1)
        .bounds(1..=10)
        .autoscale(Autoscale::follow_threads(2).every(Duration::from_millis(10)))
        .start();
    wait_for("6 members", || router.stats().live == 6);
    assert_eq!(router.size(), 6);
    rt.shutdown_graceful();
}

#[test]
fn autoscaling_on_queue_length_grows_then_shrinks_without_loss() {
    let rt = Runtime::new();
    let group = rt.group("jobs").threads(4).build().unwrap();
    let sink = rt.spawn(Sink { seen: vec![] });
    let router = Router::builder(&group, worker, ())
        .members(1)
        .bounds(1..=4)
        .autoscale(Autoscale::queue_length(20, 1).every(Duration::from_millis(5)))
        .start();
    let total = 2000;
    for seq in 0..total {
        let mut j = job(seq, seq, &sink);
        j.work_us = 200;
        router.post(j).unwrap();
    }
    wait_for("growth", || router.stats().members > 1);
    let seen = wait_for_count(&sink, total as usize);
    assert_eq!(seen.len(), total as usize);
    wait_for("shrink back to 1", || router.stats().members == 1);
    rt.shutdown_graceful();
}

#[test]
fn a_stopped_router_hands_posts_back() {
    let rt = Runtime::new();
    let sink = rt.spawn(Sink { seen: vec![] });
    let router = Router::builder(rt.default_group(), worker, ())
        .members(2)
        .start();
    router.post(job(1, 1, &sink)).unwrap();
    wait_for_count(&sink, 1);
    let members: Vec<_> = router.members().into_iter().flatten().collect();
    router.stop().unwrap();
    match router.post(job(1, 2, &sink)) {
        Err(PostError::Terminated(back)) => assert_eq!(back.seq, 2),
        other => panic!("expected Terminated, got {other:?}"),
    }
    wait_for("members to stop", || {
        members.iter().all(|m| m.is_terminated())
    });
    assert_eq!(router.resize(3), Err(whirl::routing::RouterError::Stopped));
    rt.shutdown_graceful();
}

#[test]
fn a_process_posts_through_a_router_it_holds() {
    #[derive(Message)]
    struct Fan(u64);

    #[process]
    struct Dispatcher {
        pool: Router<Worker, Job>,
        sink: Addr<Sink>,
    }

    #[process]
    impl Dispatcher {
        #[handle]
        fn fan(&mut self, Fan(n): Fan) {
            for seq in 0..n {
                let _ = self.pool.post(job(seq, seq, &self.sink));
            }
        }
    }

    let rt = Runtime::new();
    let sink = rt.spawn(Sink { seen: vec![] });
    let pool = Router::builder(rt.default_group(), worker, ())
        .members(3)
        .start();
    let dispatcher = rt.spawn(Dispatcher {
        pool,
        sink: sink.clone(),
    });
    dispatcher.post(Fan(90)).unwrap();
    let seen = wait_for_count(&sink, 90);
    assert_eq!(
        per_member(&seen).values().copied().collect::<Vec<_>>(),
        vec![30; 3]
    );
    rt.shutdown_graceful();
}
