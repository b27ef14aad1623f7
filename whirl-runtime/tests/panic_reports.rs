//! Handler panics are reported through `tracing` (process, group, message type, location,
//! message), and a storm of them reaches the previous panic hook (stderr, backtraces) only a
//! few times. Panics outside handlers reach the previous hook as before.
//!
//! One test in this binary: the panic hook and the tracing subscriber are process-wide.

mod common;

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::capture::{capture, Fields};
use whirl::prelude::*;

#[derive(Message)]
struct Boom;

#[process]
struct Fragile;

#[process]
impl Fragile {
    #[handle]
    fn boom(&mut self, _: Boom) {
        panic!("[storm] fragile gave way");
    }
}

const STORM: usize = 300;

#[test]
fn a_storm_of_handler_panics_is_traced_and_printed_a_few_times() {
    let capture = capture();
    // The hook in place before the runtime: counts what reaches it, prints nothing.
    let reached = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&reached);
    std::panic::set_hook(Box::new(move |_| {
        counter.fetch_add(1, SeqCst);
    }));

    let started = Instant::now();
    let runtime = Runtime::new();
    let group = runtime.group("fragile").threads(2).build().unwrap();
    let processes: Vec<_> = (0..STORM).map(|_| group.spawn(Fragile)).collect();
    for p in &processes {
        p.post(Boom).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while !processes.iter().all(Addr::is_terminated) {
        assert!(Instant::now() < deadline, "the processes never failed");
        std::thread::sleep(Duration::from_millis(5));
    }
    let elapsed = started.elapsed();

    let events = capture.events.lock().unwrap().clone();
    let panics: Vec<&Fields> = events
        .iter()
        .filter(|f| {
            f.get("message").map(String::as_str) == Some("handler panicked; its process fails")
        })
        .collect();
    assert_eq!(panics.len(), STORM, "one event per panic");
    let ids: std::collections::HashSet<String> =
        processes.iter().map(|p| p.id().to_string()).collect();
    for event in &panics {
        assert_eq!(event.get("group").map(String::as_str), Some("fragile"));
        assert!(ids.contains(&event["process"]), "{event:?}");
        assert!(event["message_type"].ends_with("Boom"), "{event:?}");
        assert_eq!(event["panic"], "[storm] fragile gave way");
        assert!(event["location"].contains("panic_reports.rs"), "{event:?}");
    }
    // The first five reach the previous hook, then at most one per 10 s.
    let allowed = 5 + elapsed.as_secs() / 10 + 1;
    let reached_hook = reached.load(SeqCst);
    assert!(
        (5..=allowed).contains(&reached_hook),
        "{reached_hook} panics reached the previous hook (allowed 5..={allowed})"
    );

    // A panic outside any handler reaches the previous hook and is not reported as one.
    let before = reached.load(SeqCst);
    let _ = std::thread::spawn(|| panic!("not a handler")).join();
    assert_eq!(reached.load(SeqCst), before + 1);
    let after = capture.events.lock().unwrap().len();
    assert_eq!(after, events.len());
    runtime.shutdown_graceful();
}
