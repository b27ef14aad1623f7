//! Request/reply between code outside the runtime and processes: the blocking `call` and
//! `request(msg).timeout(d).call()`, the executor-agnostic `ask` (awaited from tokio and from a hand-rolled
//! executor), and every way a request can go unanswered.

mod common;

use std::future::Future;
use std::pin::pin;
use std::sync::mpsc;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::Duration;
use whirl_runtime::request::Sender as _;

use common::{assert_isolated, to_test, Gate, ToTest};
use whirl_runtime::admission::Offer;
use whirl_runtime::{
    Addr, CallError, Ctx, Failure, Isolated, Message, PostError, Process, ReplyTo, Runtime,
    SharedClient, Unanswered,
};

#[derive(Debug)]
enum Req {
    Double(u64, ReplyTo<u64>),
    /// Drops the reply handle without answering.
    Ignore(ReplyTo<u64>),
    /// Keeps the reply handle; `Answer` uses it later.
    Keep(ReplyTo<u64>),
    /// Answers the kept handle and reports what `send` returned.
    Answer(u64, ToTest<Result<(), u64>>),
    /// Panics while holding the reply handle.
    Panic(ReplyTo<u64>),
    /// Blocks on the gate, then fails.
    HoldThenFail(SharedClient<Gate>),
    /// Tries blocking calls from inside the handler and reports what they returned.
    CallFromInside(Addr<Server>, ReplyTo<Vec<String>>),
}

const _: () = {
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<(u64, ReplyTo<u64>)>;
    let _ = assert_isolated::<ToTest<Result<(), u64>>>;
    let _ = assert_isolated::<SharedClient<Gate>>;
    let _ = assert_isolated::<(Addr<Server>, ReplyTo<Vec<String>>)>;
    let _ = assert_isolated::<Option<ReplyTo<u64>>>;
};

// SAFETY: every field is `Isolated` (asserted above): numbers, reply handles for isolated values
// and a process address, and test instruments held as `SharedClient`s with the reason (a
// channel to the test thread, see `common::to_test`, and a gate it opens, `common::gate`).
unsafe impl Isolated for Req {}
impl Message for Req {}

#[derive(Default)]
struct Server {
    kept: Option<ReplyTo<u64>>,
}

// SAFETY: the state is an optional reply handle for a `u64`; the messages are `Req`s (above).
unsafe impl Process for Server {
    type Message = Req;

    fn handle(&mut self, msg: Req, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        match msg {
            Req::Double(n, reply) => {
                let _ = reply.send(2 * n);
            }
            Req::Ignore(reply) => drop(reply),
            Req::Keep(reply) => self.kept = Some(reply),
            Req::Answer(n, report) => {
                let kept = self.kept.take().expect("a kept request");
                report.send(kept.send(n)).unwrap();
            }
            Req::Panic(_reply) => panic!("[expected] server panicked"),
            Req::HoldThenFail(gate) => {
                gate.wait();
                return Err(Failure::new("held"));
            }
            Req::CallFromInside(peer, reply) => {
                let describe = |r: Result<u64, CallError<Req>>| match r {
                    Err(CallError::WouldBlockWorker(Req::Double(n, _))) => {
                        format!("would block: Double({n})")
                    }
                    other => format!("unexpected: {other:?}"),
                };
                let me = ctx.myself();
                let _ = reply.send(vec![
                    describe(peer.request_with(|r| Req::Double(1, r)).call()),
                    describe(
                        peer.request_with(|r| Req::Double(2, r))
                            .timeout(common::HANG_GUARD)
                            .call(),
                    ),
                    describe(me.request_with(|r| Req::Double(3, r)).call()),
                ]);
            }
        }
        Ok(())
    }
}

impl whirl_runtime::Handles<Req> for Server {
    fn into_message(msg: Req) -> Req {
        msg
    }
}

/// The answer, or a test failure that says what came back instead.
#[track_caller]
fn answer<T, M>(r: Result<T, CallError<M>>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("expected an answer, got {e:?}"),
    }
}

#[track_caller]
fn assert_no_reply<T: std::fmt::Debug, M>(r: Result<T, CallError<M>>, why: Unanswered) {
    assert!(
        matches!(r, Err(CallError::NoReply(w)) if w == why),
        "{r:?}, expected {why:?}"
    );
}

#[track_caller]
fn assert_timeout<T: std::fmt::Debug, M>(r: Result<T, CallError<M>>) {
    assert!(matches!(r, Err(CallError::Timeout)), "{r:?}");
}

fn runtime() -> Runtime {
    common::quiet_expected_panics();
    Runtime::builder()
        .threads(2)
        .build()
        .expect("the runtime starts")
}

#[test]
fn call_from_outside_returns_the_answer() {
    let rt = runtime();
    let server = rt.spawn(Server::default());
    assert_eq!(
        answer(server.request_with(|r| Req::Double(21, r)).call()),
        42
    );
    assert_eq!(
        answer(
            server
                .request_with(|r| Req::Double(5, r))
                .timeout(common::HANG_GUARD)
                .call()
        ),
        10
    );
    rt.shutdown_graceful();
}

#[test]
fn concurrent_calls_from_many_threads_each_get_their_own_answer() {
    let rt = runtime();
    let servers: Vec<_> = (0..3).map(|_| rt.spawn(Server::default())).collect();
    thread::scope(|s| {
        for t in 0..8_u64 {
            let servers = &servers;
            s.spawn(move || {
                for i in 0..1_000 {
                    let n = t * 1_000_000 + i;
                    let server = &servers[(n % 3) as usize];
                    assert_eq!(
                        answer(server.request_with(|r| Req::Double(n, r)).call()),
                        2 * n
                    );
                }
            });
        }
    });
    rt.block_until_idle();
    common::assert_balanced(&rt.counts());
    rt.shutdown_graceful();
}

#[test]
fn call_reports_no_reply_when_the_reply_handle_is_dropped() {
    let rt = runtime();
    let server = rt.spawn(Server::default());
    assert_no_reply(server.request_with(Req::Ignore).call(), Unanswered::Dropped);
    assert_no_reply(
        server
            .request_with(Req::Ignore)
            .timeout(common::HANG_GUARD)
            .call(),
        Unanswered::Dropped,
    );
    // The server is fine.
    assert_eq!(answer(server.request_with(|r| Req::Double(1, r)).call()), 2);
    rt.shutdown_graceful();
}

#[test]
fn call_reports_no_reply_when_the_process_panics_on_the_request() {
    let rt = runtime();
    let server = rt.spawn(Server::default());
    assert_no_reply(
        server.request_with(Req::Panic).call(),
        Unanswered::HandlerFailed,
    );
    rt.block_until_idle();
    assert!(server.is_terminated());
    rt.shutdown_graceful();
}

#[test]
fn call_to_a_terminated_process_returns_the_request() {
    let rt = runtime();
    let server = rt.spawn(Server::default());
    assert_no_reply(
        server.request_with(Req::Panic).call(),
        Unanswered::HandlerFailed,
    );
    rt.block_until_idle();
    match server.request_with(|r| Req::Double(7, r)).call() {
        Err(CallError::Post(PostError::Terminated(Req::Double(7, _)))) => {}
        other => panic!("{other:?}"),
    }
    match server
        .request_with(|r| Req::Double(8, r))
        .timeout(common::HANG_GUARD)
        .call()
    {
        Err(CallError::Post(PostError::Terminated(Req::Double(8, _)))) => {}
        other => panic!("{other:?}"),
    }
    rt.shutdown_graceful();
}

#[test]
fn call_rejected_by_the_group_predicate_returns_the_request() {
    let rt = runtime();
    let closed = rt
        .group("closed")
        .threads(1)
        .predicate(|_: &Offer<'_>| false)
        .build()
        .expect("build group");
    let server = rt.spawner().group(&closed).spawn(Server::default());
    match server.request_with(|r| Req::Double(7, r)).call() {
        Err(CallError::Post(PostError::Rejected(Req::Double(7, _)))) => {}
        other => panic!("{other:?}"),
    }
    rt.shutdown_graceful();
}

#[test]
fn a_call_with_a_timeout_gives_up_when_no_answer_comes() {
    let rt = runtime();
    let server = rt.spawn(Server::default());
    assert_timeout(
        server
            .request_with(Req::Keep)
            .timeout(Duration::from_millis(20))
            .call(),
    );
    rt.shutdown_graceful();
}

#[test]
fn call_and_ask_give_up_after_the_runtime_s_default_timeout_unless_told_otherwise() {
    let rt = Runtime::builder()
        .threads(2)
        .ask_timeout(Some(Duration::from_millis(30)))
        .build()
        .expect("the runtime starts");
    let server = rt.spawn(Server::default());
    // No timeout given: the runtime's.
    assert_timeout(server.request_with(Req::Keep).call());
    assert_timeout(block_on(server.request_with(Req::Keep).ask()));
    // A timeout given wins over the runtime's; so does `no_timeout`, answered later.
    let (report, answered) = mpsc::channel();
    let patient = server
        .request_with(Req::Keep)
        .timeout(common::HANG_GUARD)
        .ask();
    server.post(Req::Answer(9, to_test(&report))).unwrap();
    assert_eq!(answer(block_on(patient)), 9);
    assert_eq!(common::recv(&answered), Ok(()));
    let forever = server.request_with(Req::Keep).no_timeout().ask();
    server.post(Req::Answer(10, to_test(&report))).unwrap();
    assert_eq!(
        answer(common::within_guard("ask", move || block_on(forever))),
        10
    );
    rt.shutdown_graceful();
}

#[test]
fn answering_after_the_caller_gave_up_gives_the_value_back() {
    // `ReplyTo::send` is documented to give the value back "if the caller has stopped
    // waiting": after a `call` with a timeout timed out, or when the `ask` future was dropped.
    let rt = runtime();
    let server = rt.spawn(Server::default());
    assert_timeout(
        server
            .request_with(Req::Keep)
            .timeout(Duration::from_millis(20))
            .call(),
    );
    let (report, answered) = mpsc::channel();
    server.post(Req::Answer(5, to_test(&report))).unwrap();
    assert_eq!(common::recv(&answered), Err(5));

    drop(server.request_with(Req::Keep).ask());
    server.post(Req::Answer(6, to_test(&report))).unwrap();
    assert_eq!(common::recv(&answered), Err(6));
    rt.shutdown_graceful();
}

#[test]
fn a_late_answer_after_a_timeout_does_not_disturb_the_next_call() {
    let rt = runtime();
    let server = rt.spawn(Server::default());
    assert_timeout(
        server
            .request_with(Req::Keep)
            .timeout(Duration::from_millis(20))
            .call(),
    );
    let (report, answered) = mpsc::channel();
    server.post(Req::Answer(5, to_test(&report))).unwrap();
    let _ = common::recv(&answered);
    assert_eq!(answer(server.request_with(|r| Req::Double(4, r)).call()), 8);
    rt.shutdown_graceful();
}

#[test]
fn blocking_calls_inside_a_handler_return_would_block_worker() {
    let rt = runtime();
    let server = rt.spawn(Server::default());
    let peer = rt.spawn(Server::default());
    let answers = server
        .request_with(|r| Req::CallFromInside(peer.clone(), r))
        .call()
        .unwrap();
    assert_eq!(
        answers,
        vec![
            "would block: Double(1)",
            "would block: Double(2)",
            "would block: Double(3)"
        ]
    );
    rt.block_until_idle();
    // Nothing was posted by the refused calls.
    let counts = rt.counts();
    common::assert_balanced(&counts);
    assert_eq!(counts.posted, 1);
    rt.shutdown_graceful();
}

// --- ask ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "current_thread")]
async fn ask_is_awaitable_from_a_current_thread_tokio_runtime() {
    let rt = runtime();
    let server = rt.spawn(Server::default());
    assert_eq!(
        answer(server.request_with(|r| Req::Double(21, r)).ask().await),
        42
    );
    assert_no_reply(
        server.request_with(Req::Ignore).ask().await,
        Unanswered::Dropped,
    );
    assert_no_reply(
        server.request_with(Req::Panic).ask().await,
        Unanswered::HandlerFailed,
    );
    // The reply handle is dropped while the handler unwinds, a moment before the process is
    // closed: wait for the termination to finish before expecting posts to bounce.
    rt.block_until_idle();
    match server.request_with(|r| Req::Double(1, r)).ask().await {
        Err(CallError::Post(PostError::Terminated(Req::Double(1, _)))) => {}
        other => panic!("{other:?}"),
    }
    rt.shutdown_graceful();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_asks_from_tokio_tasks() {
    let rt = runtime();
    let servers: Vec<_> = (0..4).map(|_| rt.spawn(Server::default())).collect();
    let tasks: Vec<_> = (0..1_000_u64)
        .map(|n| {
            let server = servers[(n % 4) as usize].clone();
            tokio::spawn(async move { (n, server.request_with(|r| Req::Double(n, r)).ask().await) })
        })
        .collect();
    for task in tasks {
        let (n, reply) = task.await.unwrap();
        assert_eq!(answer(reply), 2 * n);
    }
    rt.shutdown_graceful();
}

/// The smallest executor: polls on the current thread, parks until woken.
fn block_on<F: Future>(fut: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    loop {
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(v) => return v,
            Poll::Pending => thread::park(),
        }
    }
}

#[test]
fn ask_works_on_a_hand_rolled_executor_and_posts_before_it_is_polled() {
    let rt = runtime();
    let server = rt.spawn(Server::default());
    assert_eq!(
        answer(block_on(server.request_with(|r| Req::Double(3, r)).ask())),
        6
    );

    // `ask` posts at once: the request is queued behind a blocked handler before anyone polls
    // the future; when the server fails, the request is dead-lettered (its reply handle
    // dropped) and the future resolves to NoReply instead of hanging.
    let gate = Gate::new();
    server.post(Req::HoldThenFail(common::gate(&gate))).unwrap();
    let pending = server.request_with(|r| Req::Double(4, r)).ask();
    let unpolled = server.request_with(|r| Req::Double(5, r)).ask();
    gate.open();
    assert_no_reply(
        common::within_guard("ask", move || block_on(pending)),
        Unanswered::Terminated,
    );
    drop(unpolled);
    rt.block_until_idle();
    let counts = rt.counts();
    common::assert_balanced(&counts);
    assert_eq!(counts.dead_lettered, 2, "both asks were posted when made");
    rt.shutdown_graceful();
}
