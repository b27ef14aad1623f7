//! `#[started] async fn`: the hook's future is the process's first turn. It may await another
//! process and a timer, and it completes before the first message is handled, even one posted
//! while it waits; a start confirmed to a supervisor is confirmed once it completes. Its
//! failure fails the process as a plain hook's does: nothing is handled, monitors and
//! supervisors see the failure.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use whirl::prelude::*;
use whirl::supervision::SupervisorError;
use whirl::SharedClient;

const GUARD: Duration = Duration::from_secs(30);

#[derive(Message)]
struct Count;

/// Answers how many times it was asked.
#[process]
struct Source {
    count: u64,
}

#[process]
impl Source {
    #[handle]
    fn count(&mut self, _: Count) -> u64 {
        self.count += 1;
        self.count
    }
}

#[derive(Message)]
struct Note(&'static str);

#[derive(Message)]
struct Events;

/// Loads from its source in an async `started` hook, then records what it is sent.
#[process]
#[derive(Clone)]
struct Loader {
    source: Addr<Source>,
    /// What happened, in order: the hook's steps, then the messages.
    events: Vec<String>,
    /// Fail the start after awaiting, with this reason.
    fail: Option<&'static str>,
    /// Set by the hook when it completes: read by the test from outside the runtime.
    loaded: SharedClient<Arc<AtomicBool>>,
}

#[process]
impl Loader {
    #[started]
    async fn load(&mut self, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        let n = self
            .source
            .ask(Count)
            .await
            .map_err(|e| Failure::new(e.to_string()))?;
        self.events.push(format!("asked: {n}"));
        whirl::time::sleep(Duration::from_millis(20)).await;
        self.events.push(String::from("slept"));
        if let Some(reason) = self.fail {
            return Err(Failure::new(reason));
        }
        self.loaded.store(true, Ordering::SeqCst);
        let _ = ctx.id();
        Ok(())
    }

    #[handle]
    fn note(&mut self, Note(what): Note) {
        self.events.push(format!("note: {what}"));
    }

    #[handle]
    fn events(&mut self, _: Events) -> Vec<String> {
        self.events.clone()
    }
}

fn loader(source: &Addr<Source>, fail: Option<&'static str>) -> (Loader, Arc<AtomicBool>) {
    let loaded = Arc::new(AtomicBool::new(false));
    let state = Loader {
        source: source.clone(),
        events: Vec::new(),
        fail,
        loaded: SharedClient::new(
            Arc::clone(&loaded),
            "the test's flag, read from outside the runtime",
        ),
    };
    (state, loaded)
}

/// Tells the test how its target terminated.
#[process(system)]
struct Watcher {
    target: Option<Addr<Loader>>,
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

#[test]
fn the_hook_awaits_another_process_and_a_timer_before_the_first_message() {
    let rt = Runtime::new();
    let source = rt.spawn(Source { count: 0 });
    let (state, loaded) = loader(&source, None);
    let loader = rt.spawn(state);
    // Posted at once, while the hook waits: handled after it.
    loader.post(Note("first")).unwrap();
    let events = loader
        .request(Events)
        .timeout(GUARD)
        .call()
        .expect("the loader answers");
    assert_eq!(events, ["asked: 1", "slept", "note: first"]);
    assert!(loaded.load(Ordering::SeqCst));
    rt.shutdown_graceful();
}

#[test]
fn the_runtime_is_not_idle_while_the_hook_waits() {
    let rt = Runtime::new();
    let source = rt.spawn(Source { count: 0 });
    let (state, loaded) = loader(&source, None);
    let _loader = rt.spawn(state);
    rt.block_until_idle();
    assert!(
        loaded.load(Ordering::SeqCst),
        "block_until_idle returned before the start hook completed"
    );
    rt.shutdown_graceful();
}

#[test]
fn a_failing_hook_fails_the_process_before_any_message() {
    let rt = Runtime::new();
    let source = rt.spawn(Source { count: 0 });
    let (state, loaded) = loader(&source, Some("cannot load [expected]"));
    let loader = rt.spawn(state);
    let (tx, downs) = mpsc::channel();
    let _watcher = rt.spawn(Watcher {
        target: Some(loader.clone()),
        downs: SharedClient::new(Mutex::new(tx), "the test's channel"),
    });
    // Never handled: the hook fails first.
    let answer = loader.request(Events).timeout(GUARD).call();
    assert!(
        matches!(answer, Err(CallError::NoReply { .. })),
        "{answer:?}"
    );
    let reason = downs.recv_timeout(GUARD).expect("the watcher hears");
    assert_eq!(
        reason,
        ExitReason::Failed(Failure::new("cannot load [expected]"))
    );
    assert!(loader.is_terminated());
    assert!(!loaded.load(Ordering::SeqCst));
    rt.shutdown_graceful();
}

#[test]
fn a_supervisor_s_synchronous_start_waits_for_the_hook_and_sees_its_failure() {
    let rt = Runtime::new();
    let source = rt.spawn(Source { count: 0 });
    let sup = rt.spawn(Supervisor::new(SupervisorSpec::new("sup")));

    let (state, loaded) = loader(&source, None);
    sup.start_child(ChildSpec::worker("good", state))
        .expect("the child starts");
    assert!(
        loaded.load(Ordering::SeqCst),
        "start_child answered before the hook completed"
    );

    let (state, loaded) = loader(&source, Some("cannot load [expected]"));
    match sup.start_child(ChildSpec::worker("bad", state)) {
        Err(SupervisorError::StartFailed { id, reason }) => {
            assert_eq!(id, "bad");
            assert_eq!(
                reason,
                ExitReason::Failed(Failure::new("cannot load [expected]"))
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(!loaded.load(Ordering::SeqCst));
    rt.shutdown_graceful();
}
