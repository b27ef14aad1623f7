//! With the `serde` feature, events serialize to JSON: exit reasons, failures with their
//! causes, termination notices, dead letters, failure reports, shutdown reports. (The
//! workspace's examples turn the feature on, so `cargo test --workspace` runs this.)
#![cfg(feature = "serde")]

use std::sync::{Arc, Mutex};

use serde_json::json;
use whirl::failures::FailureReport;
use whirl::prelude::*;
use whirl::{DeadLetter, Down};

#[derive(Message)]
struct Work;

#[derive(Message)]
struct Fail;

#[process]
struct Job;

#[process]
impl Job {
    #[handle]
    fn work(&mut self, _: Work) {}

    #[handle]
    fn fail(&mut self, _: Fail) -> Result<(), Failure> {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        Err(Failure::from(Wrapped(io)))
    }
}

#[derive(Debug)]
struct Wrapped(std::io::Error);

impl std::fmt::Display for Wrapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("cannot load config")
    }
}

impl std::error::Error for Wrapped {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

#[test]
fn events_serialize_to_json() {
    assert_eq!(
        serde_json::to_value(ExitReason::Normal).unwrap(),
        json!("Normal")
    );
    let failure = Failure::new("out of disk");
    assert_eq!(
        serde_json::to_value(ExitReason::Failed(failure)).unwrap(),
        json!({"Failed": {"kind": "Error", "reason": "out of disk", "causes": []}})
    );

    let letters: Arc<Mutex<Vec<DeadLetter>>> = Arc::default();
    let sink = Arc::clone(&letters);
    let runtime = Runtime::builder()
        .threads(1)
        .dead_letters(move |letter| sink.lock().unwrap().push(letter))
        .build()
        .expect("the runtime starts");
    let job = runtime.spawn(Job);
    let (tx, rx) = std::sync::mpsc::channel();
    let _watch = job.watch(move |down| {
        let _ = tx.send(down);
    });
    job.post(Fail).unwrap();
    job.post(Work).unwrap();
    let down: Down = rx.recv().unwrap();
    runtime.block_until_idle();
    let id = job.id().as_u64();
    assert_eq!(
        serde_json::to_value(&down).unwrap(),
        json!({
            "id": id,
            "reason": {"Failed": {"kind": "Error", "reason": "cannot load config", "causes": ["no such file"]}}
        })
    );
    // The message posted after the failure was not handled: a dead letter, serialized
    // without its value.
    let letters = letters.lock().unwrap();
    let letter = serde_json::to_value(&letters[0]).unwrap();
    assert_eq!(letter["to"], json!(id));
    assert!(letter["message_type"].as_str().unwrap().ends_with("Work"));

    let report = FailureReport::ProcessFailed {
        id: job.id(),
        group: "default".into(),
        failure: Failure::new("boom"),
    };
    let value = serde_json::to_value(&report).unwrap();
    assert_eq!(value["ProcessFailed"]["group"], json!("default"));
    drop(letters);
    let shutdown = runtime.shutdown_graceful();
    let value = serde_json::to_value(&shutdown).unwrap();
    assert_eq!(value["drained"], json!(true));
    assert!(value["abandoned"].as_array().unwrap().is_empty());
}
