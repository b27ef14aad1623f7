//! `tracing` spans: one per turn (process, its type, its message type, group, principal), one
//! per message, and around spawn, supervision decisions and shutdown; ids spelt `<n>`. The cost without a subscriber is measured
//! by the benchmarks, not here.

mod common;

use std::sync::{Arc, Mutex};

use common::capture::{FieldText, Fields};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};
use whirl::prelude::*;
use whirl::supervision::{ChildSpec, Supervisor, SupervisorSpec};

/// Keeps every span created: its name and fields.
#[derive(Clone, Default)]
struct Spans {
    seen: Arc<Mutex<Vec<(&'static str, Fields)>>>,
}

impl Subscriber for Spans {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut fields = Fields::new();
        span.record(&mut FieldText(&mut fields));
        let mut seen = self.seen.lock().unwrap();
        seen.push((span.metadata().name(), fields));
        // The span's id is its place in `seen`, plus one.
        Id::from_u64(seen.len() as u64)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut seen = self.seen.lock().unwrap();
        if let Some((_, fields)) = usize::try_from(span.into_u64() - 1)
            .ok()
            .and_then(|i| seen.get_mut(i))
        {
            values.record(&mut FieldText(fields));
        }
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, _: &Event<'_>) {}

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

#[derive(Message)]
struct Work;

#[derive(Message)]
struct Crash;

#[process]
#[derive(Clone)]
struct Job;

#[process]
impl Job {
    #[handle]
    fn work(&mut self, _: Work) {}

    #[handle]
    fn crash(&mut self, _: Crash) -> Result<(), Failure> {
        Err(Failure::new("crash"))
    }
}

#[test]
fn turns_spawns_supervision_and_shutdown_have_spans() {
    let spans = Spans::default();
    tracing::subscriber::set_global_default(spans.clone()).expect("one subscriber");
    let runtime = Runtime::new();
    let group = runtime.group("jobs").threads(1).build().unwrap();
    let job = group
        .spawner()
        .principal(Principal::builder(42).build().expect("a valid principal"))
        .spawn(Job);
    job.post(Work).unwrap();
    let _sup = runtime.spawn(Supervisor::new(
        SupervisorSpec::new("sup").child(ChildSpec::worker("child", Job).named("child")),
    ));
    runtime.block_until_idle();
    let child = runtime.whereis::<Job>("child").expect("the child runs");
    child.post(Crash).unwrap();
    // The supervisor restarts it under the same name.
    while runtime
        .whereis::<Job>("child")
        .is_none_or(|c| c.id() == child.id())
    {
        std::thread::yield_now();
    }
    runtime.shutdown_graceful();

    let seen = spans.seen.lock().unwrap();
    let named = |name: &'static str| seen.iter().filter(move |(n, _)| *n == name);
    let turn = named("turn")
        .find(|(_, f)| f.get("group").map(String::as_str) == Some("jobs"))
        .expect("a turn span in the jobs group");
    assert_eq!(turn.1["process"], job.id().to_string());
    assert!(turn.1["process_type"].ends_with("Job"), "{:?}", turn.1);
    assert_eq!(turn.1["principal"], "42");
    let spawn = named("spawn")
        .find(|(_, f)| f["process"] == job.id().to_string())
        .expect("a spawn span for the job");
    assert_eq!(spawn.1["group"], "jobs");
    let decision = named("supervision").next().expect("a supervision span");
    assert_eq!(decision.1["supervisor"], "sup");
    assert_eq!(decision.1["child"], child.id().to_string());
    assert_eq!(decision.1["reason"], "failed: crash");
    assert!(named("shutdown").next().is_some());
    // A span per message (`whirl::message` at DEBUG: this subscriber wants everything),
    // naming the message's type once the handler said which it handles.
    let message = named("message")
        .find(|(_, f)| f.get("process") == Some(&job.id().to_string()))
        .expect("a message span for the job");
    assert_eq!(message.1["group"], "jobs");
    assert!(message.1["message"].ends_with("Work"), "{:?}", message.1);
}
