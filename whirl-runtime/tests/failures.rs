//! Failures reach the failure hook (stderr by default) once each: a handler's `Err`, a process
//! refused at spawn; panics (printed by std's hook) and linked failures (consequences) do not.
//! One test, because the hook is process-wide.

mod common;

use std::sync::{mpsc, Arc, Mutex};
use whirl_runtime::request::Sender as _;

use common::{assert_isolated, to_test, ToTest};
use whirl_runtime::failures::{set_failure_hook, take_failure_hook, FailureReport};
use whirl_runtime::{Ctx, ExitReason, Failure, Handles, Isolated, Message, Process, Runtime};

/// Fails or panics on request, and reports its termination.
struct Faulty {
    done: ToTest<ExitReason>,
}

enum Do {
    Fail,
    Panic,
}

const _: () = {
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<ToTest<ExitReason>>;
};

// SAFETY: no data.
unsafe impl Isolated for Do {}
impl Message for Do {}

// SAFETY: the only field is a channel to the test thread held as a `SharedClient` (a test
// instrument, see `common::to_test`), which is `Isolated` (asserted above).
unsafe impl Process for Faulty {
    type Message = Do;

    fn handle(&mut self, msg: Do, _: &mut Ctx<Self>) -> Result<(), Failure> {
        match msg {
            Do::Fail => Err(Failure::new("the disk is full")),
            Do::Panic => panic!("expected in this test"),
        }
    }

    fn terminated(&mut self, reason: &ExitReason) {
        let _ = self.done.send(reason.clone());
    }
}

impl Handles<Do> for Faulty {
    fn into_message(msg: Do) -> Do {
        msg
    }
}

#[test]
fn each_failure_reaches_the_hook_once_and_panics_do_not() {
    common::quiet_expected_panics();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    set_failure_hook(move |report: &FailureReport| sink.lock().unwrap().push(report.clone()));

    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let (tx, rx) = mpsc::channel();
    let failing = rt.spawn(Faulty { done: to_test(&tx) });
    failing.post(Do::Fail).unwrap();
    let panicking = rt.spawn(Faulty { done: to_test(&tx) });
    panicking.post(Do::Panic).unwrap();
    common::recv(&rx);
    common::recv(&rx);
    rt.block_until_idle();
    rt.shutdown_graceful();
    take_failure_hook();

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
    match &seen[0] {
        FailureReport::ProcessFailed { id, group, failure } => {
            assert_eq!(*id, failing.id());
            assert_eq!(group, "default");
            assert_eq!(failure.reason(), "the disk is full");
        }
        other => panic!("unexpected report {other:?}"),
    }
    assert!(seen[0].to_string().contains("failed: the disk is full"));
}
