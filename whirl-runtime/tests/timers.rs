//! Timers: `post_after` delivers once, `post_every` repeats until cancelled, and a timer whose
//! process has terminated delivers nothing (not even a dead letter).
//!
//! No assertion depends on how long anything took. Where a test must know that a timer has
//! had its chance to fire, it waits for a *marker* timer scheduled later: one timer thread
//! fires timers in deadline order, so everything due earlier has been dealt with by then.

mod common;

use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;
use whirl_runtime::request::Sender as _;

use common::{assert_isolated, to_test, ToTest};
use whirl_runtime::time::TimerHandle;
use whirl_runtime::{Ctx, Failure, Handles, Isolated, Message, Process, Runtime};

#[derive(Clone, Debug)]
struct Tick(&'static str);
// SAFETY: a `&'static str`.
unsafe impl Isolated for Tick {}
impl Message for Tick {}

/// Code for a ticker to run, in a handler or at start: data plus a function pointer, never a
/// closure (the compiler cannot check what a closure captures; it checks `Isolated` data).
trait Code: Isolated {
    fn run(self: Box<Self>, ticker: &mut Ticker, ctx: &mut Ctx<Ticker>);
}

type Setup = Box<dyn Code>;

/// `code` called with `data`.
struct WithData<D> {
    data: D,
    code: fn(D, &mut Ticker, &mut Ctx<Ticker>),
}

// SAFETY: `data` is `Isolated` (the bound), and `code` is a function pointer, which holds no
// data.
unsafe impl<D: Isolated> Isolated for WithData<D> {}

impl<D: Isolated> Code for WithData<D> {
    fn run(self: Box<Self>, ticker: &mut Ticker, ctx: &mut Ctx<Ticker>) {
        (self.code)(self.data, ticker, ctx)
    }
}

/// `code` called without data.
struct Plain(fn(&mut Ticker, &mut Ctx<Ticker>));

// SAFETY: a function pointer, which holds no data.
unsafe impl Isolated for Plain {}

impl Code for Plain {
    fn run(self: Box<Self>, ticker: &mut Ticker, ctx: &mut Ctx<Ticker>) {
        (self.0)(ticker, ctx)
    }
}

enum TickerMsg {
    Tick(&'static str),
    Setup(Setup),
}

const _: () = {
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<&'static str>;
    let _ = assert_isolated::<Setup>;
    let _ = assert_isolated::<Option<Setup>>;
    let _ = assert_isolated::<ToTest<Seen>>;
    let _ = assert_isolated::<Option<TimerHandle>>;
    let _ = assert_isolated::<Option<u64>>;
    let _ = assert_isolated::<Option<&'static str>>;
};

// SAFETY: every field is `Isolated` (asserted above): a `&'static str`, or a `Setup`, data and
// a function pointer (`Code` requires `Isolated`).
unsafe impl Isolated for TickerMsg {}
impl Message for TickerMsg {}

/// What a ticker saw: (its name, the tick's tag, periodic ticks so far).
type Seen = (&'static str, &'static str, u64);

/// Reports every tick. Periodic ticks are tagged "t"; after `cancel_after` of them it cancels
/// its periodic timer and schedules marker "m1", which schedules "m2". Markers are always
/// scheduled after the event they follow, so they are due after any timer due before it.
struct Ticker {
    name: &'static str,
    seen: ToTest<Seen>,
    ticks: u64,
    every: Option<TimerHandle>,
    cancel_after: Option<u64>,
    fail_after: Option<u64>,
    /// Run at start (for processes nobody holds an address to).
    on_start: Option<Setup>,
    /// When a tick with this tag arrives, schedule a "marker" tick.
    marker_after: Option<&'static str>,
}

const MARKER_DELAY: Duration = Duration::from_millis(20);

impl Ticker {
    fn new(name: &'static str, seen: &Sender<Seen>) -> Self {
        Ticker {
            name,
            seen: to_test(seen),
            ticks: 0,
            every: None,
            cancel_after: None,
            fail_after: None,
            on_start: None,
            marker_after: None,
        }
    }
}

// SAFETY: every field is `Isolated` (asserted above): names, numbers, the ticker's own
// `TimerHandle` (a handle on the runtime's timer service, like an address), a start-up `Setup`
// (data and a function pointer), and `seen`, a channel to the test thread held as a
// `SharedClient` (a test instrument, see `common::to_test`). The messages are `Isolated`
// (above).
unsafe impl Process for Ticker {
    type Message = TickerMsg;

    fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        if let Some(setup) = self.on_start.take() {
            setup.run(self, ctx);
        }
        Ok(())
    }

    fn handle(&mut self, msg: TickerMsg, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        match msg {
            TickerMsg::Setup(setup) => setup.run(self, ctx),
            TickerMsg::Tick(tag) => {
                if tag == "t" {
                    self.ticks += 1;
                    if self.cancel_after == Some(self.ticks) {
                        let every = self.every.as_ref().expect("a periodic timer");
                        every.cancel();
                        assert!(every.is_cancelled());
                        ctx.post_after(MARKER_DELAY, Tick("m1"));
                    }
                }
                if tag == "m1" {
                    ctx.post_after(MARKER_DELAY, Tick("m2"));
                }
                if self.marker_after == Some(tag) {
                    ctx.post_after(4 * MARKER_DELAY, Tick("marker"));
                }
                let _ = self.seen.send((self.name, tag, self.ticks));
                if self.fail_after == Some(self.ticks) {
                    return Err(Failure::new("enough"));
                }
            }
        }
        Ok(())
    }
}

impl whirl_runtime::Handles<TickerMsg> for Ticker {
    fn into_message(msg: TickerMsg) -> TickerMsg {
        msg
    }
}

impl Handles<Tick> for Ticker {
    fn into_message(Tick(tag): Tick) -> TickerMsg {
        TickerMsg::Tick(tag)
    }
}

/// Runs `code` in the ticker's handler.
fn setup(code: fn(&mut Ticker, &mut Ctx<Ticker>)) -> TickerMsg {
    TickerMsg::Setup(Box::new(Plain(code)))
}

/// Runs `code` with `data` in the ticker's handler.
fn setup_with<D: Isolated>(data: D, code: fn(D, &mut Ticker, &mut Ctx<Ticker>)) -> TickerMsg {
    TickerMsg::Setup(Box::new(WithData { data, code }))
}

/// Waits for `name` to report `tag`; returns everything it reported before that.
#[track_caller]
fn until(seen: &Receiver<Seen>, name: &str, tag: &str) -> Vec<Seen> {
    let mut before = Vec::new();
    loop {
        let s = common::recv(seen);
        if s.0 == name && s.1 == tag {
            before.push(s);
            return before;
        }
        before.push(s);
    }
}

#[test]
fn post_after_delivers_once() {
    let (rt, dead) = common::runtime_with_dead_letters(2);
    let (tx, seen) = mpsc::channel();
    let p = rt.spawn(Ticker {
        marker_after: Some("once"),
        ..Ticker::new("p", &tx)
    });
    p.post(setup(|_, ctx| {
        ctx.post_after(Duration::from_millis(1), Tick("once"));
        ctx.post_after(Duration::ZERO, Tick("now"));
    }))
    .unwrap();
    let mut log: Vec<&str> = until(&seen, "p", "marker").iter().map(|s| s.1).collect();
    assert_eq!(log.pop(), Some("marker"));
    log.sort_unstable();
    assert_eq!(log, vec!["now", "once"]);
    rt.block_until_idle();
    assert!(seen.try_recv().is_err());
    let counts = rt.counts();
    common::assert_balanced(&counts);
    assert_eq!(counts.posted, 4, "the setup and three timer messages");
    assert_eq!(dead.len(), 0);
    rt.shutdown_graceful();
}

#[test]
fn post_every_repeats_until_cancelled() {
    let rt = Runtime::builder()
        .threads(2)
        .build()
        .expect("the runtime starts");
    let (tx, seen) = mpsc::channel();
    let p = rt.spawn(Ticker {
        cancel_after: Some(5),
        ..Ticker::new("p", &tx)
    });
    p.post(setup(|t, ctx| {
        t.every = Some(ctx.post_every(Duration::from_millis(1), Tick("t")));
    }))
    .unwrap();
    let to_m1 = until(&seen, "p", "m1");
    let at_m1 = to_m1.last().unwrap().2;
    assert!(at_m1 >= 5, "it repeated");
    // Ticks already fired when the handle was cancelled are in the inbox (or one is being
    // fired); "m1" was scheduled after the cancel, so it comes after all of them. From then
    // on, nothing: "m2" sees the same count.
    let to_m2 = until(&seen, "p", "m2");
    assert_eq!(
        to_m2,
        vec![("p", "m2", at_m1)],
        "a tick arrived after cancel"
    );
    rt.shutdown_graceful();
}

#[test]
fn a_timer_cancelled_from_outside_never_fires() {
    let rt = Runtime::builder()
        .threads(2)
        .build()
        .expect("the runtime starts");
    let (tx, seen) = mpsc::channel();
    let p = rt.spawn(Ticker::new("p", &tx));
    let (handle_tx, handle_rx) = mpsc::channel();
    p.post(setup_with(to_test(&handle_tx), |handle_tx, _, ctx| {
        handle_tx
            .send(ctx.post_after(2 * MARKER_DELAY, Tick("never")))
            .unwrap();
    }))
    .unwrap();
    let handle: TimerHandle = common::recv(&handle_rx);
    assert!(!handle.is_cancelled());
    handle.clone().cancel();
    assert!(handle.is_cancelled());
    p.post(setup(|_, ctx| {
        ctx.post_after(4 * MARKER_DELAY, Tick("marker"));
    }))
    .unwrap();
    let log = until(&seen, "p", "marker");
    assert_eq!(log, vec![("p", "marker", 0)]);
    rt.shutdown_graceful();
}

#[test]
fn a_timer_for_a_terminated_process_is_not_delivered() {
    let (rt, dead) = common::runtime_with_dead_letters(2);
    let (tx, seen) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel();
    let doomed = rt.spawn(Ticker::new("doomed", &tx));
    let marker = rt.spawn(Ticker::new("marker", &tx));
    doomed
        .post(setup_with(to_test(&done_tx), |done_tx, _, ctx| {
            ctx.post_after(MARKER_DELAY, Tick("late"));
            ctx.complete();
            done_tx.send(()).unwrap();
        }))
        .unwrap();
    common::recv(&done_rx);
    rt.block_until_idle();
    assert!(doomed.is_terminated());
    let before = rt.counts();
    marker
        .post(setup(|_, ctx| {
            ctx.post_after(4 * MARKER_DELAY, Tick("marker"));
        }))
        .unwrap();
    let log = until(&seen, "marker", "marker");
    assert_eq!(
        log,
        vec![("marker", "marker", 0)],
        "the late tick was delivered"
    );
    rt.block_until_idle();
    let after = rt.counts();
    common::assert_balanced(&after);
    assert_eq!(
        after.posted,
        before.posted + 2,
        "only the marker's setup and tick were posted"
    );
    assert_eq!(
        dead.len(),
        0,
        "a timer of a dead process is dropped, not posted"
    );
    rt.shutdown_graceful();
}

#[test]
fn a_periodic_timer_stops_when_its_process_fails() {
    let (rt, dead) = common::runtime_with_dead_letters(2);
    let (tx, seen) = mpsc::channel();
    let p = rt.spawn(Ticker {
        fail_after: Some(3),
        ..Ticker::new("p", &tx)
    });
    let marker = rt.spawn(Ticker::new("marker", &tx));
    p.post(setup(|t, ctx| {
        t.every = Some(ctx.post_every(Duration::from_millis(1), Tick("t")));
    }))
    .unwrap();
    let log = until(&seen, "p", "t");
    assert_eq!(log.len(), 1);
    until(&seen, "p", "t");
    until(&seen, "p", "t");
    rt.block_until_idle();
    assert!(p.is_terminated());
    // Ticks fired before it failed were dead-lettered; after two markers, no more came.
    let dead_at_failure = dead.len();
    for _ in 0..2 {
        marker
            .post(setup(|_, ctx| {
                ctx.post_after(4 * MARKER_DELAY, Tick("marker"));
            }))
            .unwrap();
        until(&seen, "marker", "marker");
    }
    rt.block_until_idle();
    assert_eq!(dead.len(), dead_at_failure);
    assert!(seen.try_recv().is_err());
    common::assert_balanced(&rt.counts());
    rt.shutdown_graceful();
}

#[test]
fn a_process_driven_only_by_its_own_timer_keeps_ticking() {
    // Nobody keeps the address: the process lives on its periodic timer alone.
    let rt = Runtime::builder()
        .threads(2)
        .build()
        .expect("the runtime starts");
    let (tx, seen) = mpsc::channel();
    drop(rt.spawn(Ticker {
        cancel_after: Some(3),
        on_start: Some(Box::new(Plain(|t, ctx| {
            t.every = Some(ctx.post_every(Duration::from_millis(1), Tick("t")));
        }))),
        ..Ticker::new("orphan", &tx)
    }));
    let log = until(&seen, "orphan", "m2");
    assert!(log.iter().filter(|s| s.1 == "t").count() >= 3);
    rt.shutdown_graceful();
}

#[test]
fn pending_timers_do_not_keep_the_runtime_busy_or_delay_shutdown() {
    let rt = Runtime::builder()
        .threads(2)
        .build()
        .expect("the runtime starts");
    let (tx, seen) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel();
    let p = rt.spawn(Ticker::new("p", &tx));
    p.post(setup_with(to_test(&done_tx), |done_tx, _, ctx| {
        ctx.post_after(Duration::from_secs(3_600), Tick("in an hour"));
        ctx.post_every(Duration::from_secs(3_600), Tick("t"));
        done_tx.send(()).unwrap();
    }))
    .unwrap();
    common::recv(&done_rx);
    let rt = common::within_guard("block_until_idle", move || {
        rt.block_until_idle();
        rt
    });
    common::within_guard("shutdown_graceful", move || rt.shutdown_graceful());
    assert!(seen.try_recv().is_err());
    assert!(p.is_terminated());
}
