//! Groups that share state fail together (`GroupBuilder::shares_state`, the Whirlwind paper's
//! section VI-C): one member failing takes every other member of the group with it, their
//! watchers and supervisors see failures, and nothing outside the group is touched.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use whirl::prelude::*;
use whirl::{FailureKind, SharedClient};

const DEADLINE: Duration = Duration::from_secs(20);

/// Polls `check` until it holds or the deadline passes; returns whether it held.
fn eventually(mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < DEADLINE {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    check()
}

#[derive(Message)]
struct Write(u64);

#[derive(Message)]
struct Crash;

#[derive(Message)]
struct Quit;

#[derive(Message)]
struct Count(ReplyTo<usize>);

/// A shard in front of a row store it shares with the other shards of its group.
#[process(
    group = "db",
    unsafe(shares_state = "the shards append to one log, which locks for itself")
)]
#[derive(Clone)]
struct Shard {
    #[shared]
    log: Arc<Mutex<Vec<u64>>>,
}

#[process]
impl Shard {
    #[handle]
    fn write(&mut self, Write(v): Write) {
        if let Ok(mut log) = self.log.lock() {
            log.push(v);
        }
    }

    #[handle]
    fn crash(&mut self, _: Crash) -> Result<(), Failure> {
        Err(Failure::new("torn write"))
    }

    #[handle]
    fn quit(&mut self, _: Quit, ctx: &mut Ctx<Self>) {
        ctx.complete();
    }

    #[handle]
    fn count(&mut self, Count(reply): Count) {
        let _ = reply.send(self.log.lock().map(|l| l.len()).unwrap_or(0));
    }
}

/// An ordinary process outside the group.
#[process]
struct Bystander;

#[process]
impl Bystander {
    #[handle]
    fn crash(&mut self, _: Crash) -> Result<(), Failure> {
        Err(Failure::new("unrelated"))
    }

    #[handle]
    fn count(&mut self, Count(reply): Count) {
        let _ = reply.send(0);
    }
}

fn runtime_with_db() -> Runtime {
    let rt = Runtime::new();
    rt.group("db")
        .threads(2)
        .shares_state("the shards append to one log")
        .build()
        .expect("build the db group");
    rt
}

/// Watches `addr`, sending its `Down` to `tx`.
fn watch<P: Process>(addr: &Addr<P>, tx: &mpsc::Sender<Down>) -> whirl::Watch {
    let tx = tx.clone();
    addr.watch(move |down| {
        let _ = tx.send(down);
    })
}

#[test]
fn one_member_failing_fails_every_member_and_nobody_else() {
    let rt = runtime_with_db();
    let log = Arc::new(Mutex::new(Vec::new()));
    let shards: Vec<Addr<Shard>> = (0..3)
        .map(|_| {
            rt.spawn(Shard {
                log: Arc::clone(&log),
            })
        })
        .collect();
    let bystander = rt.spawn(Bystander);
    let (tx, rx) = mpsc::channel();
    let _watches: Vec<_> = shards.iter().map(|s| watch(s, &tx)).collect();
    for (i, shard) in shards.iter().enumerate() {
        shard.post(Write(i as u64)).expect("posted");
        // Handled before the crash: a shard killed with writes still queued dead-letters them.
        assert_eq!(shard.request_with(Count).call().expect("serves"), i + 1);
    }
    shards[1].post(Crash).expect("posted");

    let mut downs: Vec<Down> = (0..3)
        .map(|_| rx.recv_timeout(DEADLINE).expect("every shard ends"))
        .collect();
    downs.sort_by_key(|d| d.id);
    for (down, shard) in downs.iter().zip(&shards) {
        assert_eq!(down.id, shard.id());
        let ExitReason::Failed(failure) = &down.reason else {
            panic!("{} ended {}", shard.id(), down.reason);
        };
        if shard.id() == shards[1].id() {
            assert_eq!(*failure.kind(), FailureKind::Error);
        } else {
            assert_eq!(*failure.kind(), FailureKind::SharedState(shards[1].id()));
            assert_eq!(failure.reason(), "torn write");
            assert!(failure.to_string().contains("shares state"), "{failure}");
        }
    }
    // Nobody outside the group, and the kills are not repeated.
    assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
    assert_eq!(
        bystander
            .request_with(Count)
            .call()
            .expect("the bystander lives"),
        0
    );
    assert_eq!(
        log.lock().expect("log").len(),
        3,
        "the writes before the crash ran"
    );

    // A shard spawned after the failure is a new member: it lives, and it fails with the next
    // failure of the group.
    let a = rt.spawn(Shard {
        log: Arc::clone(&log),
    });
    let b = rt.spawn(Shard {
        log: Arc::clone(&log),
    });
    assert_eq!(a.request_with(Count).call().expect("a new member lives"), 3);
    let _wa = watch(&a, &tx);
    let _wb = watch(&b, &tx);
    a.post(Crash).expect("posted");
    let mut ids: Vec<_> = (0..2)
        .map(|_| rx.recv_timeout(DEADLINE).expect("both end").id)
        .collect();
    ids.sort();
    assert_eq!(ids, [a.id(), b.id()]);
    rt.shutdown_graceful();
}

#[test]
fn a_member_ending_normally_or_a_failure_elsewhere_takes_nobody() {
    let rt = runtime_with_db();
    let log = Arc::new(Mutex::new(Vec::new()));
    let quitter = rt.spawn(Shard {
        log: Arc::clone(&log),
    });
    let stayer = rt.spawn(Shard {
        log: Arc::clone(&log),
    });
    let bystander = rt.spawn(Bystander);
    quitter.post(Quit).expect("posted");
    bystander.post(Crash).expect("posted");
    assert!(eventually(
        || quitter.is_terminated() && bystander.is_terminated()
    ));
    stayer.post(Write(7)).expect("posted");
    assert_eq!(
        stayer
            .request_with(Count)
            .call()
            .expect("the other shard lives"),
        1
    );
    rt.shutdown_graceful();
}

#[test]
fn a_supervisor_sees_every_member_fail_and_restarts_them() {
    let rt = runtime_with_db();
    let log = Arc::new(Mutex::new(Vec::new()));
    // The store reaches every incarnation as a start argument: a supervisor's specs hold only
    // isolated data, so the shared store travels as a `SharedClient`, which says why.
    fn shard(log: SharedClient<Arc<Mutex<Vec<u64>>>>) -> Shard {
        Shard {
            log: Arc::clone(&log),
        }
    }
    let store = SharedClient::new(Arc::clone(&log), "the shards' log locks for itself");
    let spec = (0..3).fold(
        SupervisorSpec::new("db").intensity(10, Duration::from_secs(60)),
        |spec, i| {
            spec.child(
                ChildSpec::worker_with(format!("shard{i}"), store.clone(), shard)
                    .named(format!("shard{i}")),
            )
        },
    );
    let sup = rt.spawn(Supervisor::new(spec));
    rt.block_until_idle();
    let first: Vec<Addr<Shard>> = (0..3)
        .map(|i| rt.whereis::<Shard>(&format!("shard{i}")).expect("started"))
        .collect();
    first[2].post(Crash).expect("posted");
    // Every member failed (a failure each, not a shutdown): three restarts.
    assert!(eventually(|| sup
        .count_children()
        .is_ok_and(|c| c.restarts == 3 && c.active == 3)));
    for (i, old) in first.iter().enumerate() {
        assert!(old.is_terminated());
        let new = rt
            .whereis::<Shard>(&format!("shard{i}"))
            .expect("restarted");
        assert_ne!(new.id(), old.id());
        assert_eq!(new.request_with(Count).call().expect("serves"), 0);
    }
    rt.shutdown_graceful();
}
