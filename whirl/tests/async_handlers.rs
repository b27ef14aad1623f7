//! `async fn` handlers and typed replies: a handler's return value answers `ask` and `call`; an
//! async handler parks its process (not its worker) until its future completes, handles
//! nothing else meanwhile, and is cancelled — future dropped, inbox dead-lettered, monitors
//! told — when the process is killed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use whirl::failures::FailureReport;
use whirl::prelude::*;
use whirl::{DeadLetter, SharedClient};

const GUARD: Duration = Duration::from_secs(30);

#[derive(Message)]
struct Get;

#[derive(Message)]
struct Add(u64);

#[derive(Message)]
struct Divide(u64);

#[derive(Message)]
struct Nap(u64);

#[derive(Message)]
struct Relay(u64);

#[derive(Message)]
struct Explode;

#[derive(Message)]
struct Finish;

#[derive(Message)]
struct Detonate;

#[derive(Message, Clone, Debug, PartialEq)]
struct Totals {
    sum: u64,
    seen: Vec<u64>,
}

/// Sync and async handlers, answering and not.
#[process]
struct Counter {
    sum: u64,
    seen: Vec<u64>,
    peer: Option<Addr<Counter>>,
    hooks: SharedClient<Arc<AtomicUsize>>,
    /// Told when a nap begins.
    began: Option<SharedClient<Mutex<mpsc::Sender<u64>>>>,
}

#[process]
impl Counter {
    #[handle]
    fn get(&mut self, _: Get) -> Totals {
        Totals {
            sum: self.sum,
            seen: self.seen.clone(),
        }
    }

    #[handle]
    fn add(&mut self, Add(n): Add) {
        self.sum += n;
        self.seen.push(n);
    }

    #[handle]
    fn divide(&mut self, Divide(by): Divide) -> Result<u64, Failure> {
        if by == 0 {
            return Err(Failure::new("division by zero"));
        }
        Ok(self.sum / by)
    }

    /// Sleeps, then records `n`: nothing else is handled meanwhile.
    #[handle]
    async fn nap(&mut self, Nap(n): Nap) -> u64 {
        if let Some(began) = &self.began {
            let _ = began.lock().map(|tx| tx.send(n));
        }
        whirl::time::sleep(Duration::from_millis(n)).await;
        self.seen.push(n);
        n
    }

    /// Asks the peer for its totals and adds `n` to its sum.
    #[handle]
    async fn relay(&mut self, Relay(n): Relay, ctx: &mut Ctx<Self>) -> Result<u64, Failure> {
        let peer = self.peer.clone().ok_or_else(|| Failure::new("no peer"))?;
        let totals = peer
            .ask(Get)
            .await
            .map_err(|e| Failure::new(format!("peer did not answer: {e}")))?;
        self.sum += totals.sum + n;
        self.seen.push(n);
        let _ = ctx.id();
        Ok(self.sum)
    }

    #[handle]
    async fn explode(&mut self, _: Explode) {
        whirl::time::sleep(Duration::from_millis(1)).await;
        panic!("exploded after an await");
    }

    /// Panics after an await, while a caller waits for its answer.
    #[handle]
    async fn detonate(&mut self, _: Detonate) -> u64 {
        whirl::time::sleep(Duration::from_millis(1)).await;
        panic!("detonated while answering");
    }

    #[handle]
    async fn finish(&mut self, _: Finish, ctx: &mut Ctx<Self>) {
        whirl::time::sleep(Duration::from_millis(1)).await;
        ctx.complete();
    }

    #[terminated]
    fn terminated(&mut self) {
        self.hooks.fetch_add(1, Ordering::SeqCst);
    }
}

fn counter(sum: u64, hooks: &Arc<AtomicUsize>) -> Counter {
    Counter {
        sum,
        seen: Vec::new(),
        peer: None,
        hooks: SharedClient::new(Arc::clone(hooks), "the test's count of terminated hooks"),
        began: None,
    }
}

/// Runs `future` to completion on a small executor of its own (tokio's current-thread one).
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread tokio runtime")
        .block_on(future)
}

fn totals(addr: &Addr<Counter>) -> Totals {
    addr.request(Get)
        .timeout(GUARD)
        .call()
        .expect("the counter answers")
}

#[test]
fn a_handler_s_return_value_answers_call_and_ask() {
    let rt = Runtime::new();
    let hooks = Arc::new(AtomicUsize::new(0));
    let c = rt.spawn(counter(10, &hooks));
    c.post(Add(5)).unwrap();
    assert_eq!(totals(&c).sum, 15);
    // A message whose handler answers can still be posted: the answer goes nowhere.
    c.post(Get).unwrap();
    assert_eq!(c.call(Divide(3)).unwrap(), 5);
    let asked = block_on(c.ask(Get)).unwrap();
    assert_eq!(asked.seen, vec![5]);
    rt.block_until_idle();
    let counts = rt.counts();
    assert_eq!(counts.posted, counts.handled);
    rt.shutdown_graceful();
}

#[test]
fn a_caller_is_told_why_an_async_handler_did_not_answer() {
    let rt = Runtime::new();
    let hooks = Arc::new(AtomicUsize::new(0));
    // An `Err` after an await (no peer to relay to).
    let lonely = rt.spawn(counter(1, &hooks));
    let relayed = lonely.call(Relay(1));
    assert!(
        matches!(relayed, Err(CallError::NoReply(Unanswered::HandlerFailed))),
        "{relayed:?}"
    );
    // A panic after an await.
    let doomed = rt.spawn(counter(1, &hooks));
    let detonated = doomed.call(Detonate);
    assert!(
        matches!(
            detonated,
            Err(CallError::NoReply(Unanswered::HandlerFailed))
        ),
        "{detonated:?}"
    );
    rt.block_until_idle();
    assert!(lonely.is_terminated() && doomed.is_terminated());
    rt.shutdown_graceful();
}

#[test]
fn an_err_fails_the_process_and_the_caller_gets_no_reply() {
    let rt = Runtime::new();
    let hooks = Arc::new(AtomicUsize::new(0));
    let c = rt.spawn(counter(10, &hooks));
    assert!(matches!(
        c.call(Divide(0)),
        Err(CallError::NoReply(Unanswered::HandlerFailed))
    ));
    rt.block_until_idle();
    assert!(c.is_terminated());
    assert_eq!(hooks.load(Ordering::SeqCst), 1);
}

#[test]
fn an_async_handler_answers_after_awaiting_and_keeps_the_process_sequential() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let hooks = Arc::new(AtomicUsize::new(0));
    let c = rt.spawn(counter(0, &hooks));
    // Posted while the first nap is pending: handled after it, in order.
    let first = c.ask(Nap(30));
    c.post(Add(1)).unwrap();
    c.post(Nap(1)).unwrap();
    c.post(Add(2)).unwrap();
    assert_eq!(block_on(first).unwrap(), 20 + 10);
    assert_eq!(totals(&c).seen, vec![30, 1, 1, 2]);
    rt.block_until_idle();
    let counts = rt.counts();
    assert_eq!(counts.posted, counts.handled);
    rt.shutdown_graceful();
}

#[test]
fn a_pending_handler_gives_its_worker_back() {
    // One worker: the relay's `ask` can only be answered if the worker runs the peer while
    // the relay waits.
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let hooks = Arc::new(AtomicUsize::new(0));
    let peer = rt.spawn(counter(100, &hooks));
    let mut relay = counter(1, &hooks);
    relay.peer = Some(peer.clone());
    let relay = rt.spawn(relay);
    assert_eq!(relay.request(Relay(5)).timeout(GUARD).call().unwrap(), 106);
    // Many processes sleeping at once on one worker overlap.
    let sleepers: Vec<_> = (0..200).map(|_| rt.spawn(counter(0, &hooks))).collect();
    let answers: Vec<_> = sleepers.iter().map(|s| s.ask(Nap(20))).collect();
    for answer in answers {
        assert_eq!(block_on(answer).unwrap(), 20);
    }
    rt.shutdown_graceful();
}

#[test]
fn a_panic_after_an_await_is_an_ordinary_failure() {
    let rt = Runtime::new();
    let hooks = Arc::new(AtomicUsize::new(0));
    let c = rt.spawn(counter(0, &hooks));
    let (tx, rx) = mpsc::channel();
    let _watch = rt.spawn(Watcher {
        target: Some(c.clone()),
        downs: SharedClient::new(Mutex::new(tx), "the test's channel"),
    });
    rt.block_until_idle();
    c.post(Explode).unwrap();
    let reason = rx.recv_timeout(GUARD).expect("the watcher is told");
    assert!(reason.is_failure(), "{reason}");
    assert!(
        reason.to_string().contains("exploded after an await"),
        "{reason}"
    );
    rt.block_until_idle();
    assert_eq!(hooks.load(Ordering::SeqCst), 1);
    let counts = rt.counts();
    assert_eq!(counts.posted, counts.handled + counts.dead_lettered);
}

#[test]
fn complete_in_an_async_handler_ends_the_process_when_it_returns() {
    let rt = Runtime::new();
    let hooks = Arc::new(AtomicUsize::new(0));
    let c = rt.spawn(counter(0, &hooks));
    c.post(Finish).unwrap();
    rt.block_until_idle();
    assert!(c.is_terminated());
    assert_eq!(hooks.load(Ordering::SeqCst), 1);
}

#[test]
fn killing_a_process_with_a_pending_handler_cancels_it_and_dead_letters_its_inbox() {
    let (dead_tx, dead_rx) = mpsc::channel();
    let rt = Runtime::builder()
        .dead_letters(move |letter: DeadLetter| {
            let _ = dead_tx.send(letter.type_name().to_owned());
        })
        .build()
        .expect("the runtime starts");
    let hooks = Arc::new(AtomicUsize::new(0));
    let (began_tx, began) = mpsc::channel();
    let mut napper = counter(0, &hooks);
    napper.began = Some(SharedClient::new(
        Mutex::new(began_tx),
        "the test's channel",
    ));
    let c = rt.spawn(napper);
    let (tx, rx) = mpsc::channel();
    let _watch = rt.spawn(Watcher {
        target: Some(c.clone()),
        downs: SharedClient::new(Mutex::new(tx), "the test's channel"),
    });
    rt.block_until_idle();
    let pending = c.ask(Nap(3_600_000));
    began.recv_timeout(GUARD).expect("the nap begins");
    c.post(Add(1)).unwrap();
    c.post(Add(2)).unwrap();
    c.exit(ExitReason::Failed(Failure::new("killed while waiting")));
    let reason = rx.recv_timeout(GUARD).expect("the watcher is told");
    assert!(
        reason.to_string().contains("killed while waiting"),
        "{reason}"
    );
    assert!(matches!(
        block_on(pending),
        Err(CallError::NoReply(Unanswered::Terminated))
    ));
    rt.block_until_idle();
    assert_eq!(hooks.load(Ordering::SeqCst), 1, "the terminated hook ran");
    let dead: Vec<String> = dead_rx.try_iter().collect();
    assert_eq!(dead.len(), 2, "{dead:?}");
    let counts = rt.counts();
    assert_eq!(counts.posted, counts.handled + counts.dead_lettered);
}

#[test]
fn a_shutdown_does_not_wait_for_a_handler_that_never_completes() {
    let reports = Arc::new(Mutex::new(Vec::new()));
    {
        let reports = Arc::clone(&reports);
        whirl::failures::set_failure_hook(move |report: &FailureReport| {
            if let FailureReport::HandlerCancelled { id, .. } = report {
                reports.lock().unwrap().push(*id);
            }
        });
    }
    let rt = Runtime::new();
    let hooks = Arc::new(AtomicUsize::new(0));
    let (began_tx, began) = mpsc::channel();
    let mut napper = counter(0, &hooks);
    napper.began = Some(SharedClient::new(
        Mutex::new(began_tx),
        "the test's channel",
    ));
    let c = rt.spawn(napper);
    let id = c.id();
    let _pending = c.ask(Nap(3_600_000));
    c.post(Add(1)).unwrap();
    began.recv_timeout(GUARD).expect("the nap begins");
    let report = rt.shutdown_timeout(Duration::from_millis(50));
    assert!(report.abandoned.is_empty(), "{report}");
    assert_eq!(report.cancelled_handlers, 1, "{report}");
    assert_eq!(hooks.load(Ordering::SeqCst), 1);
    assert_eq!(report.dead_lettered, 1, "{report}");
    // Counted in the report, not reported one by one.
    assert!(!reports.lock().unwrap().contains(&id));
    let _ = whirl::failures::take_failure_hook();
}

#[test]
fn tokio_tasks_post_and_ask_without_blocking_their_workers() {
    let rt = Runtime::new();
    let hooks = Arc::new(AtomicUsize::new(0));
    let c = rt.spawn(counter(0, &hooks));
    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let total = tokio_rt.block_on(async {
        let tasks: Vec<_> = (0..100u64)
            .map(|i| {
                let c = c.clone();
                tokio::spawn(async move {
                    c.post(Add(i)).unwrap();
                    c.ask(Nap(1)).await.unwrap()
                })
            })
            .collect();
        let mut naps = 0;
        for t in tasks {
            naps += t.await.unwrap();
        }
        assert_eq!(naps, 100);
        c.ask(Get).await.unwrap().sum
    });
    assert_eq!(total, (0..100).sum::<u64>());
    rt.shutdown_graceful();
}

/// Tells the test how its target terminated.
#[process(system)]
struct Watcher {
    target: Option<Addr<Counter>>,
    downs: SharedClient<Mutex<mpsc::Sender<ExitReason>>>,
}

#[process]
impl Watcher {
    #[started]
    fn started(&mut self, ctx: &mut Ctx<Self>) {
        if let Some(t) = self.target.take() {
            ctx.monitor(&t);
        }
    }

    #[handle]
    fn down(&mut self, down: Down) {
        let _ = self.downs.lock().map(|tx| tx.send(down.reason));
    }
}
