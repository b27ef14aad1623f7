//! `Addr::hand_over`: a process leaves the runtime at a message boundary with its state and its
//! queue, in order, and the counters account for every message.

use std::sync::mpsc;
use std::time::Duration;

use whirl::prelude::*;
use whirl::{HandOverError, HandedOver};

#[derive(Message, Debug, PartialEq)]
struct Add(u64);

#[derive(Message)]
struct Hold(Duration);

#[process]
#[derive(Debug)]
struct Sum {
    total: u64,
    seen: Vec<u64>,
}

#[process]
impl Sum {
    #[handle]
    fn add(&mut self, Add(n): Add) {
        self.total += n;
        self.seen.push(n);
    }

    #[handle]
    fn hold(&mut self, Hold(d): Hold) {
        std::thread::sleep(d);
    }
}

#[test]
fn state_and_queue_are_handed_over_in_order() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let sum = rt.spawn(Sum {
        total: 0,
        seen: Vec::new(),
    });
    for n in 1..=3 {
        sum.post(Add(n)).expect("post");
    }
    rt.block_until_idle();
    // The worker is held (or about to be) while 100 more are queued, then the hand-over is
    // asked for: it takes effect at a message boundary.
    sum.post(Hold(Duration::from_millis(100))).expect("post");
    for n in 4..104 {
        sum.post(Add(n)).expect("post");
    }
    let (tx, rx) = mpsc::channel::<HandedOver<Sum>>();
    sum.hand_over(move |handed| {
        let _ = tx.send(handed);
    })
    .expect("hand over");
    assert_eq!(
        sum.hand_over(|_| {}),
        Err(HandOverError::Ending),
        "the first request wins"
    );
    let handed = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("handed over");
    assert_eq!(handed.id, sum.id());
    // A turn handles what it already knows is queued before it looks for the request, so the
    // split between handled and handed over varies; together they are every `Add`, once, in
    // order, and the state is the sum of those handled.
    let mut queued = handed.queued.into_iter().peekable();
    if queued.peek().is_some_and(|m| m.is::<Hold>()) {
        queued.next();
    }
    let queued: Vec<u64> = queued
        .map(|m| m.downcast::<Add>().expect("an Add").0)
        .collect();
    assert!(handed.state.seen.starts_with(&[1, 2, 3]));
    assert_eq!(handed.state.total, handed.state.seen.iter().sum::<u64>());
    let all: Vec<u64> = handed.state.seen.iter().copied().chain(queued).collect();
    assert_eq!(all, (1..104).collect::<Vec<_>>());

    assert!(matches!(
        sum.post(Add(0)),
        Err(PostError::Terminated(Add(0)))
    ));
    rt.block_until_idle();
    let counts = rt.counts();
    assert!(counts.moved <= 101, "{counts:?}");
    assert_eq!(counts.dead_lettered, 0);
    assert_eq!(
        counts.posted,
        counts.handled + counts.rejected + counts.dead_lettered + counts.moved
    );
    assert!(counts.is_quiescent());
}

#[test]
fn a_process_that_is_ending_is_not_handed_over() {
    let rt = Runtime::new();
    let sum = rt.spawn(Sum {
        total: 0,
        seen: Vec::new(),
    });
    sum.exit(ExitReason::Shutdown);
    assert_eq!(sum.hand_over(|_| {}), Err(HandOverError::Ending));
    rt.block_until_idle();
    assert!(sum.is_terminated());
}
