//! A supervision tree survives injected failures, and prints what its supervisors did.
//!
//! ```text
//! root (one-for-one, 3 restarts in 10 s)
//! ├── registry   a key-value worker, registered by name
//! ├── sessions   simple-one-for-one: one transient session per user, started on demand
//! └── pipeline   rest-for-one, 2 restarts in 10 s
//!     ├── reader
//!     └── writer
//! ```
//!
//! The registry crashes and comes back under the same name (a client holding the old address
//! gets its message back and re-resolves the name); a session crashes and is restarted with
//! its user, another logs out and is gone; the reader crashes and takes the writer with it
//! (rest-for-one); the writer crashes twice, one restart too many for the pipeline within
//! its period, so the pipeline supervisor gives up and the root restarts the whole pipeline
//! (escalation). Finally the tree shuts down in reverse start order: every child exits
//! `shutdown`, the reason a supervisor stops its children with.
//!
//! ```text
//! cargo run -p tour --bin supervision_tree
//! ```

use std::collections::HashMap;
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use whirl::prelude::*;
use whirl::supervision::{ChildTemplate, EventKind, SupervisorEvent};

/// Makes a process fail, as a bug would.
#[derive(Message)]
struct Crash(&'static str);

/// Stores a value in the registry.
#[derive(Message)]
struct Put(String, u64);

/// Reads a value from the registry.
#[derive(Message)]
struct Get(String, ReplyTo<Option<u64>>);

/// Ends a session normally.
#[derive(Message)]
struct Logout;

#[process]
struct Registry {
    entries: HashMap<String, u64>,
}

#[process]
impl Registry {
    #[handle]
    fn put(&mut self, Put(key, value): Put) {
        self.entries.insert(key, value);
    }

    #[handle]
    fn get(&mut self, Get(key, reply): Get) {
        let _ = reply.send(self.entries.get(&key).copied());
    }

    #[handle]
    fn crash(&mut self, Crash(why): Crash) -> Result<(), Failure> {
        Err(Failure::new(why))
    }
}

#[process]
#[derive(Clone)]
struct Session {
    user: String,
}

#[process]
impl Session {
    #[handle]
    fn crash(&mut self, Crash(why): Crash) -> Result<(), Failure> {
        Err(Failure::new(format!("{}'s session: {why}", self.user)))
    }

    #[handle]
    fn logout(&mut self, _: Logout, ctx: &mut Ctx<Self>) {
        ctx.complete();
    }
}

#[process]
#[derive(Clone)]
struct Stage {
    name: &'static str,
}

#[process]
impl Stage {
    #[handle]
    fn crash(&mut self, Crash(why): Crash) -> Result<(), Failure> {
        Err(Failure::new(format!("{}: {why}", self.name)))
    }
}

/// A pipeline stage: every restart starts from a clone of `Stage { name }`.
fn stage(name: &'static str) -> ChildSpec {
    ChildSpec::worker(name, Stage { name }).named(name)
}

/// The template of the `sessions` supervisor: a user's name becomes the initial state of
/// their session, which restarts from it.
fn session(user: String) -> ChildSpec {
    let name = format!("session:{user}");
    ChildSpec::worker("session", Session { user })
        .restart(Restart::Transient)
        .named(name)
}

/// The whole tree, as data: child specs hold initial states, or a function and its arguments,
/// never a closure that could share state with the caller. Only the event sink, an observer,
/// does (it sends copies of the events to `main`).
fn tree(events: mpsc::Sender<SupervisorEvent>) -> SupervisorSpec {
    let sessions = ChildSpec::supervisor(
        "sessions",
        SupervisorSpec::new("sessions")
            .strategy(RestartStrategy::SimpleOneForOne)
            .intensity(5, Duration::from_secs(10))
            .template(ChildTemplate::new(session)),
    )
    .named("sessions");
    let pipeline = ChildSpec::supervisor(
        "pipeline",
        SupervisorSpec::new("pipeline")
            .strategy(RestartStrategy::RestForOne)
            .intensity(2, Duration::from_secs(10))
            .child(stage("reader"))
            .child(stage("writer")),
    )
    .named("pipeline");
    // OTP's {Module, Function, Arguments}: every (re)start calls the function on a clone of
    // the arguments (here, the initial capacity of an empty registry).
    let registry = ChildSpec::worker_with("registry", 64, |capacity| Registry {
        entries: HashMap::with_capacity(capacity),
    })
    .named("registry");
    SupervisorSpec::new("root")
        .intensity(3, Duration::from_secs(10))
        .on_event(move |e| {
            let _ = events.send(e.clone());
        })
        .child(registry)
        .child(sessions)
        .child(pipeline)
}

/// Prints the events seen since the last call (the child supervisors inherit the root's sink).
fn report(rt: &Runtime, events: &Receiver<SupervisorEvent>) {
    rt.block_until_idle();
    for e in events.try_iter() {
        let what = match e.kind {
            EventKind::ChildStarted { id, pid } => format!("started {id} {pid}"),
            EventKind::ChildExited { id, pid, reason } => format!("{id} {pid} exited: {reason}"),
            EventKind::ChildRestarted { id, pid, restarts } => {
                format!("restarted {id} as {pid} (restart #{restarts} of this child)")
            }
            EventKind::ShutdownTimedOut { id, pid } => {
                format!("{id} {pid} did not stop in time")
            }
            EventKind::IntensityExceeded {
                max_restarts,
                period,
            } => format!("more than {max_restarts} restarts in {period:?}: giving up"),
            EventKind::RestartDelayed { id, attempt, delay } => {
                format!("{id} restarts in {delay:?} (failure #{attempt} in a row)")
            }
            EventKind::BackoffExhausted { id, attempts } => {
                format!("{id} failed again after {attempts} delayed restarts: giving up")
            }
            EventKind::Terminated { reason } => format!("terminated: {reason}"),
        };
        println!("    [{}] {what}", e.supervisor);
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rt = Runtime::new();
    let (tx, events) = mpsc::channel();
    println!("starting the tree:");
    let root = rt.spawn(Supervisor::new(tree(tx)));
    report(&rt, &events);

    let registry = rt.whereis::<Registry>("registry").ok_or("no registry")?;
    registry.post(Put("answer".into(), 42))?;
    println!("the registry crashes:");
    registry.post(Crash("corrupted index"))?;
    report(&rt, &events);
    match registry.post(Put("answer".into(), 43)) {
        Err(PostError::Terminated(Put(key, _))) => {
            println!("  a put to the old address comes back ({key}); re-resolving the name")
        }
        other => println!("  unexpected: {other:?}"),
    }
    // The supervisor hands out typed addresses too, checked against the child's type.
    let registry = root
        .which_child("registry")?
        .addr::<Registry>()
        .ok_or("no registry")?;
    let answer = registry.request_with(|r| Get("answer".into(), r)).call()?;
    println!("  the new registry starts from a known good state (empty): answer = {answer:?}");
    registry.post(Put("answer".into(), 43))?;
    let answer = registry.request_with(|r| Get("answer".into(), r)).call()?;
    println!("  and takes the put again: answer = {answer:?}");

    println!("two users log in; alice's session crashes, bob logs out:");
    // The sessions supervisor's type says what its template takes (`String`), so
    // `start_dynamic` is checked by the compiler; a lookup with another type finds nothing.
    let sessions = rt
        .whereis::<Supervisor<String>>("sessions")
        .ok_or("no sessions")?;
    sessions.start_dynamic(String::from("alice"))?;
    sessions.start_dynamic(String::from("bob"))?;
    rt.block_until_idle();
    let alice = rt.whereis::<Session>("session:alice").ok_or("no alice")?;
    alice.post(Crash("stale token"))?;
    let bob = rt.whereis::<Session>("session:bob").ok_or("no bob")?;
    bob.post(Logout)?;
    report(&rt, &events);
    println!(
        "  sessions now: {} (bob's transient session finished normally and is gone)",
        sessions.count_children()?.active
    );

    println!("the reader crashes; rest-for-one restarts it and the writer after it:");
    let reader = rt.whereis::<Stage>("reader").ok_or("no reader")?;
    reader.post(Crash("malformed record"))?;
    report(&rt, &events);

    println!("the writer crashes twice: 3 restarts in 10 s, one too many for the pipeline;");
    println!("it gives up and the root restarts the whole pipeline:");
    for _ in 0..2 {
        let writer = rt.whereis::<Stage>("writer").ok_or("no writer")?;
        writer.post(Crash("disk full"))?;
        rt.block_until_idle();
    }
    report(&rt, &events);

    println!("the tree after all that:");
    for child in root.which_children()? {
        let state = child
            .pid
            .map_or("stopped".to_owned(), |pid| format!("running as {pid}"));
        println!(
            "  {:<9} {:?} {:<10} {state}, restarted {} time(s)",
            child.id,
            child.restart,
            format!("{:?}", child.kind),
            child.restarts
        );
    }
    println!("  root restarts: {}", root.count_children()?.restarts);

    println!("shutting the tree down (reverse start order, subtrees first):");
    root.shutdown()?;
    report(&rt, &events);
    println!("live processes left: {}", rt.live_processes());
    rt.shutdown_graceful();
    Ok(())
}
