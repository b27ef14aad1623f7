//! Moving a live process to another group (`Addr::move_to`, `Ctx::move_to`,
//! `Group::move_process`, `Group::auto_move`): at a message boundary, nothing lost, each
//! sender's order kept, old addresses forwarding, monitors and timers following, and every
//! group's counters accounting for every message.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use whirl::prelude::*;
use whirl::{AutoMove, Group, MoveError, SharedClient};

const DEADLINE: Duration = Duration::from_secs(20);

/// Polls `check` until it holds or the deadline passes; returns whether it held.
fn eventually(mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < DEADLINE {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    check()
}

/// A message from sender `from`, its `seq`-th.
#[derive(Message)]
struct Seq {
    from: usize,
    seq: u64,
}

#[derive(Message)]
struct Report;

#[derive(Message)]
struct MoveMe(Group);

#[derive(Message)]
struct Hold(Duration);

#[derive(Isolated, Debug, Clone, Default)]
struct Seen {
    /// Messages handled.
    handled: u64,
    /// Messages that arrived out of their sender's order.
    out_of_order: u64,
    /// The groups whose workers handled messages, in the order first seen.
    groups: Vec<String>,
}

#[process]
struct Recorder {
    next: Vec<u64>,
    seen: Seen,
}

impl Recorder {
    fn new(senders: usize) -> Self {
        Recorder {
            next: vec![0; senders],
            seen: Seen::default(),
        }
    }
}

#[process]
impl Recorder {
    #[handle]
    fn seq(&mut self, Seq { from, seq }: Seq, ctx: &mut Ctx<Self>) {
        if self.next[from] != seq {
            self.seen.out_of_order += 1;
        }
        self.next[from] = seq + 1;
        self.seen.handled += 1;
        let group = ctx.group().name().to_owned();
        // The worker thread is the group's: the process really runs there.
        let thread = std::thread::current().name().unwrap_or("").to_owned();
        assert!(
            thread.starts_with(&format!("whirl-{group}-")),
            "{thread} in {group}"
        );
        if self.seen.groups.last() != Some(&group) {
            self.seen.groups.push(group);
        }
    }

    #[handle]
    fn report(&mut self, _: Report) -> Seen {
        self.seen.clone()
    }

    #[handle]
    fn move_me(&mut self, MoveMe(group): MoveMe, ctx: &mut Ctx<Self>) {
        ctx.move_to(&group).expect("move");
    }

    #[handle]
    fn hold(&mut self, Hold(d): Hold) {
        std::thread::sleep(d);
    }
}

/// Every group's identity: posted = handled + rejected + dead-lettered + moved + queued, with
/// nothing queued once the runtime is idle.
fn assert_accounted(groups: &[&Group]) {
    for group in groups {
        let c = group.counts();
        assert_eq!(
            c.posted,
            c.handled + c.rejected + c.dead_lettered + c.moved,
            "{}: {c:?}",
            group.name()
        );
    }
}

#[test]
fn a_process_moves_with_its_queue_in_order_and_old_addresses_forward() {
    let rt = Runtime::new();
    let a = rt.group("a").threads(1).build().expect("group");
    let b = rt.group("b").threads(1).build().expect("group");
    let rec = rt.spawner().group(&a).spawn(Recorder::new(1));
    // Hold the worker, queue 500, ask for the move: the queue moves with the process.
    rec.post(Hold(Duration::from_millis(50))).expect("post");
    for seq in 0..500 {
        rec.post(Seq { from: 0, seq }).expect("post");
    }
    rec.move_to(&b).expect("move");
    // The old address keeps working, before and after the move has happened.
    for seq in 500..1000 {
        rec.post(Seq { from: 0, seq }).expect("post");
    }
    assert!(eventually(|| rec.group().name() == "b"));
    assert!(!rec.is_terminated());
    assert_eq!(rec.current().id(), rec.id());
    for seq in 1000..1500 {
        rec.post(Seq { from: 0, seq }).expect("post");
    }
    let seen = rec.call(Report).expect("report");
    assert_eq!(seen.handled, 1500);
    assert_eq!(seen.out_of_order, 0, "{seen:?}");
    assert_eq!(
        seen.groups.last().map(String::as_str),
        Some("b"),
        "{seen:?}"
    );
    // The direct address skips the forwarding.
    rec.current()
        .post(Seq { from: 0, seq: 1500 })
        .expect("post");
    assert_eq!(rec.current().call(Report).expect("report").handled, 1501);
    rt.block_until_idle();
    assert_accounted(&[&a, &b]);
    // The group left counts the queue as moved and the process as gone; the one joined,
    // as posted and spawned.
    let (ca, cb) = (a.counts(), b.counts());
    assert!(ca.moved > 0, "{ca:?}");
    assert!(ca.posted <= 1001, "{ca:?}");
    assert_eq!(ca.posted + cb.posted - ca.moved, 1504, "{ca:?} {cb:?}");
    assert_eq!((ca.spawned, ca.terminated), (1, 1));
    assert_eq!((cb.spawned, cb.terminated), (1, 0));
    rt.shutdown_timeout(Duration::from_secs(5));
}

#[test]
fn senders_keep_their_order_while_the_process_moves_back_and_forth() {
    const SENDERS: usize = 4;
    const EACH: u64 = 20_000;
    let rt = Runtime::new();
    let a = rt.group("a").threads(1).build().expect("group");
    let b = rt.group("b").threads(1).build().expect("group");
    let rec = rt.spawner().group(&a).spawn(Recorder::new(SENDERS));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // The first move, and handling in both groups, are made certain (a loaded machine could
    // otherwise handle everything before the mover runs): the senders post their second half
    // only after the first move, and the mover moves on only once messages were handled in
    // both groups.
    let first_move = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let senders: Vec<_> = (0..SENDERS)
        .map(|from| {
            let rec = rec.clone();
            let first_move = Arc::clone(&first_move);
            std::thread::spawn(move || {
                for seq in 0..EACH {
                    if seq == EACH / 2 {
                        while !first_move.load(std::sync::atomic::Ordering::Acquire) {
                            std::thread::yield_now();
                        }
                    }
                    // Old and new addresses alike.
                    let target = if seq % 2 == 0 {
                        rec.clone()
                    } else {
                        rec.current()
                    };
                    target.post(Seq { from, seq }).expect("post");
                }
            })
        })
        .collect();
    let mover = {
        let (rec, a, b, done) = (rec.clone(), a.clone(), b.clone(), Arc::clone(&done));
        let first_move = Arc::clone(&first_move);
        std::thread::spawn(move || {
            // A call is handled after everything queued before it: wait until the first half
            // has started being handled in `a`, move to `b`, and wait until `b` handled some.
            while rec.call(Report).expect("report").groups.is_empty() {
                std::thread::sleep(Duration::from_micros(200));
            }
            rec.move_to(&b).expect("move");
            first_move.store(true, std::sync::atomic::Ordering::Release);
            while rec.call(Report).expect("report").groups.len() < 2 {
                std::thread::sleep(Duration::from_micros(200));
            }
            let mut moves = 1;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let to = if moves % 2 == 0 { &b } else { &a };
                rec.move_to(to).expect("move");
                moves += 1;
                std::thread::sleep(Duration::from_micros(200));
            }
            moves
        })
    };
    for sender in senders {
        sender.join().expect("sender");
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let moves = mover.join().expect("mover");
    let seen = rec.call(Report).expect("report");
    assert_eq!(seen.handled, SENDERS as u64 * EACH, "{seen:?}");
    assert_eq!(seen.out_of_order, 0, "{seen:?}");
    assert!(moves >= 1);
    assert!(
        seen.groups.len() > 1,
        "it never ran in both groups: {seen:?}"
    );
    rt.block_until_idle();
    assert_accounted(&[&a, &b]);
    rt.shutdown_timeout(Duration::from_secs(5));
}

/// An address taken before thousands of moves reaches the process through as many old cells:
/// posting, calling, asking for an exit, checking for the end and dropping the last such
/// address each walk the chain. They must do so in constant stack: this runs them on a thread
/// with a small stack, which a frame per hop overflowed (a stack overflow aborts the binary).
#[test]
fn an_address_from_before_thousands_of_moves_works_and_drops_on_a_small_stack() {
    const MOVES: u64 = 3_000;
    let rt = Runtime::new();
    let a = rt.group("a").threads(1).build().expect("group");
    let b = rt.group("b").threads(1).build().expect("group");
    let rec = rt.spawner().group(&a).spawn(Recorder::new(1));
    // Queued while the process is held, so the first cell is still the one they go to; each
    // `MoveMe` then moves it once, back and forth.
    rec.post(Hold(Duration::from_millis(20))).expect("post");
    for i in 0..MOVES {
        let to = if i % 2 == 0 { &b } else { &a };
        rec.post(MoveMe(to.clone())).expect("post");
    }
    // Handled after every move: this sender's order. (Thousands of moves take seconds on a
    // slow machine: more than a call's default timeout.)
    let report = rec.request(Report).timeout(Duration::from_secs(120)).call();
    assert_eq!(report.expect("report").handled, 0);
    let (ca, cb) = (a.counts(), b.counts());
    assert_eq!(ca.spawned + cb.spawned, MOVES + 1, "{ca:?} {cb:?}");
    let small = std::thread::Builder::new()
        .name("small-stack".into())
        .stack_size(128 * 1024)
        .spawn(move || {
            for seq in 0..100 {
                rec.post(Seq { from: 0, seq }).expect("post");
            }
            let seen = rec.call(Report).expect("report");
            assert!(!rec.is_terminated());
            rec.exit(ExitReason::Normal);
            assert!(eventually(|| rec.is_terminated()));
            // The last address to the first cell: the cells after it go with it.
            drop(rec);
            seen
        })
        .expect("spawn");
    let seen = small.join().expect("the small-stack thread");
    assert_eq!((seen.handled, seen.out_of_order), (100, 0), "{seen:?}");
    rt.block_until_idle();
    assert_accounted(&[&a, &b]);
    rt.shutdown_timeout(Duration::from_secs(5));
}

#[process(system)]
struct Watcher {
    downs: Vec<Down>,
}

#[process]
impl Watcher {
    #[handle]
    fn down(&mut self, down: Down) {
        self.downs.push(down);
    }

    #[handle]
    fn watch(&mut self, WatchIt(addr): WatchIt, ctx: &mut Ctx<Self>) -> bool {
        ctx.monitor(&addr);
        true
    }

    #[handle]
    fn downs(&mut self, _: Report) -> Vec<String> {
        self.downs.iter().map(|d| d.reason.to_string()).collect()
    }
}

#[derive(Message)]
struct WatchIt(Addr<Recorder>);

#[test]
fn monitors_follow_the_process_and_see_no_down_for_a_move() {
    let rt = Runtime::new();
    let a = rt.group("a").threads(1).build().expect("group");
    let b = rt.group("b").threads(1).build().expect("group");
    let rec = rt.spawner().group(&a).spawn(Recorder::new(1));
    let watcher = rt.spawn(Watcher { downs: Vec::new() });
    watcher.call(WatchIt(rec.clone())).expect("watch");
    let (tx, rx) = mpsc::channel();
    let _watch = rec.watch(move |down| {
        let _ = tx.send(down.reason.to_string());
    });
    rec.move_to(&b).expect("move");
    assert!(eventually(|| rec.group().name() == "b"));
    rt.block_until_idle();
    assert!(watcher.call(Report).expect("downs").is_empty());
    assert!(rx.try_recv().is_err(), "a move is not an exit");
    // A monitor placed through the old address after the move is on the process too.
    let late = rt.spawn(Watcher { downs: Vec::new() });
    late.call(WatchIt(rec.clone())).expect("watch");
    // Killed through the old address: everyone watching hears it, once.
    rec.exit(ExitReason::Shutdown);
    assert!(eventually(|| rec.is_terminated()));
    assert_eq!(
        rx.recv_timeout(DEADLINE).expect("down"),
        ExitReason::Shutdown.to_string()
    );
    assert!(eventually(
        || watcher.call(Report).expect("downs").len() == 1
    ));
    assert!(eventually(|| late.call(Report).expect("downs").len() == 1));
    assert!(matches!(
        rec.post(Seq { from: 0, seq: 0 }),
        Err(PostError::Terminated(_))
    ));
    rt.block_until_idle();
    assert_accounted(&[&a, &b]);
    rt.shutdown_timeout(Duration::from_secs(5));
}

#[derive(Message)]
struct Tick;

#[process]
struct Ticker {
    ticks: Vec<String>,
}

#[process]
impl Ticker {
    #[handle]
    fn arm(&mut self, _: Report, ctx: &mut Ctx<Self>) -> bool {
        ctx.post_after(Duration::from_millis(100), Tick);
        true
    }

    #[handle]
    fn tick(&mut self, _: Tick, ctx: &mut Ctx<Self>) {
        self.ticks.push(ctx.group().name().to_owned());
    }

    #[handle]
    fn ticks(&mut self, _: Hold) -> Vec<String> {
        self.ticks.clone()
    }
}

#[test]
fn a_timer_set_before_the_move_fires_after_it() {
    let rt = Runtime::new();
    let a = rt.group("a").threads(1).build().expect("group");
    let b = rt.group("b").threads(1).build().expect("group");
    let ticker = rt.spawner().group(&a).spawn(Ticker { ticks: Vec::new() });
    ticker.call(Report).expect("arm");
    ticker.move_to(&b).expect("move");
    // Only the new address is kept: the old cell lives on for the timer's sake.
    let ticker = ticker.current();
    assert!(eventually(|| {
        ticker.current().call(Hold(Duration::ZERO)).expect("ticks") == vec!["b".to_owned()]
    }));
    rt.shutdown_timeout(Duration::from_secs(5));
}

#[test]
fn a_process_moves_itself_and_moves_are_refused_where_they_cannot_be() {
    let rt = Runtime::new();
    let a = rt.group("a").threads(1).build().expect("group");
    let b = rt.group("b").threads(1).build().expect("group");
    let shared = rt
        .group("shared")
        .threads(1)
        .shares_state("test")
        .build()
        .expect("group");
    let rec = rt.spawner().group(&a).spawn(Recorder::new(1));
    rec.post(MoveMe(b.clone())).expect("post");
    rec.post(Seq { from: 0, seq: 0 }).expect("post");
    let seen = rec.call(Report).expect("report");
    assert_eq!(seen.groups, vec!["b".to_owned()]);
    // Moving where it is does nothing.
    rec.move_to(&b).expect("no-op");
    assert_eq!(rec.group().name(), "b");
    assert_eq!(
        rec.move_to(&shared),
        Err(MoveError::SharesState("shared".into()))
    );
    let other = Runtime::new();
    let elsewhere = other.group("elsewhere").threads(1).build().expect("group");
    assert_eq!(
        rec.move_to(&elsewhere),
        Err(MoveError::OtherRuntime("elsewhere".into()))
    );
    // By id, as a controller would.
    a.move_process(rec.id(), &a).expect("by id");
    assert!(eventually(|| rec.group().name() == "a"));
    rec.exit(ExitReason::Normal);
    assert!(eventually(|| rec.is_terminated()));
    assert_eq!(rec.move_to(&b), Err(MoveError::Ending));
    assert_eq!(a.move_process(rec.id(), &b), Err(MoveError::Ending));
    other.shutdown_timeout(Duration::from_secs(5));
    rt.block_until_idle();
    assert_accounted(&[&a, &b]);
    rt.shutdown_timeout(Duration::from_secs(5));
}

#[derive(Message)]
struct Nap(Duration);

#[process]
struct Napper {
    /// The group each nap completed in, in order.
    completed_in: Vec<String>,
    /// Told when a nap begins.
    began: SharedClient<Mutex<mpsc::Sender<Duration>>>,
}

#[process]
impl Napper {
    #[handle]
    async fn nap(&mut self, Nap(d): Nap, ctx: &mut Ctx<Self>) {
        let _ = self.began.lock().map(|tx| tx.send(d));
        whirl::time::sleep(d).await;
        self.completed_in.push(ctx.group().name().to_owned());
    }

    #[handle]
    fn completed(&mut self, _: Report) -> Vec<String> {
        self.completed_in.clone()
    }
}

#[test]
fn an_async_handler_that_waits_completes_before_the_move() {
    let rt = Runtime::new();
    let a = rt.group("a").threads(1).build().expect("group");
    let b = rt.group("b").threads(1).build().expect("group");
    let (tx, began) = mpsc::channel();
    let napper = rt.spawner().group(&a).spawn(Napper {
        completed_in: Vec::new(),
        began: SharedClient::new(Mutex::new(tx), "the test's channel"),
    });
    let long = Duration::from_millis(300);
    napper.post(Nap(long)).expect("post");
    napper.post(Nap(Duration::from_millis(1))).expect("post");
    // Asked while the first handler waits (it has begun and sleeps): it completes where it
    // began, in `a`; the second nap runs after the move, in `b`.
    assert_eq!(began.recv_timeout(DEADLINE), Ok(long));
    napper.move_to(&b).expect("move");
    let completed = napper.call(Report).expect("completed");
    assert_eq!(completed, vec!["a".to_owned(), "b".to_owned()]);
    rt.block_until_idle();
    assert_accounted(&[&a, &b]);
    rt.shutdown_timeout(Duration::from_secs(5));
}

#[test]
fn automatic_grouping_moves_a_process_that_blocks() {
    let rt = Runtime::new();
    let web = rt
        .group("web")
        .threads(1)
        .slow_turn_threshold(Some(Duration::from_millis(20)))
        .build()
        .expect("group");
    let blocking = rt.group("blocking").threads(2).build().expect("group");
    web.auto_move(AutoMove::blocking_to(&blocking).after_slow_turns(1))
        .expect("rule");
    let quick = rt.spawner().group(&web).spawn(Recorder::new(1));
    let slow = rt.spawner().group(&web).spawn(Recorder::new(1));
    // Blocks its worker for 200 ms at a time, until it is moved.
    for _ in 0..5 {
        slow.post(Hold(Duration::from_millis(200))).expect("post");
    }
    assert!(eventually(|| slow.group().name() == "blocking"));
    assert_eq!(quick.group().name(), "web");
    assert_eq!(web.stats().auto_moved, 1);
    quick.post(Seq { from: 0, seq: 0 }).expect("post");
    assert_eq!(quick.call(Report).expect("report").handled, 1);
    rt.block_until_idle();
    assert_accounted(&[&web, &blocking]);
    rt.shutdown_timeout(Duration::from_secs(5));
}
