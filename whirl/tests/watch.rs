//! `Addr::watch`: callbacks on a process's end, for code outside processes.

use std::sync::mpsc;
use std::time::Duration;

use whirl::prelude::*;

#[derive(Message)]
struct Fail;

#[derive(Message)]
struct Ping;

#[process]
struct Job;

#[process]
impl Job {
    #[handle]
    fn fail(&mut self, _: Fail) -> Result<(), Failure> {
        Err(Failure::new("out of disk"))
    }

    #[handle]
    fn ping(&mut self, _: Ping) {}
}

#[test]
fn the_callback_runs_once_with_the_reason() {
    let runtime = Runtime::new();
    let job = runtime.spawn(Job);
    let (tx, rx) = mpsc::channel();
    let _watch = job.watch(move |down| {
        let _ = tx.send((down.id, down.reason.is_failure()));
    });
    job.post(Ping).unwrap();
    job.post(Fail).unwrap();
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(10)).unwrap(),
        (job.id(), true)
    );
    // Once: the sender is gone with the callback.
    assert!(rx.recv_timeout(Duration::from_millis(100)).is_err());
    runtime.shutdown_graceful();
}

#[test]
fn watching_an_ended_process_runs_at_once() {
    let runtime = Runtime::new();
    let job = runtime.spawn(Job);
    job.exit(ExitReason::Normal);
    while !job.is_terminated() {
        std::thread::yield_now();
    }
    let (tx, rx) = mpsc::channel();
    let watch = job.watch(move |down| {
        let _ = tx.send(down.reason.is_failure());
    });
    assert_eq!(rx.try_recv(), Ok(false));
    assert!(!watch.cancel(), "already ran");
    runtime.shutdown_graceful();
}

#[test]
fn a_cancelled_or_dropped_watch_never_runs() {
    let runtime = Runtime::new();
    let job = runtime.spawn(Job);
    let (tx, rx) = mpsc::channel::<()>();
    let tx2 = tx.clone();
    let cancelled = job.watch(move |_| {
        let _ = tx.send(());
    });
    assert!(cancelled.cancel());
    drop(job.watch(move |_| {
        let _ = tx2.send(());
    }));
    job.post(Fail).unwrap();
    while !job.is_terminated() {
        std::thread::yield_now();
    }
    runtime.block_until_idle();
    assert!(rx.recv_timeout(Duration::from_millis(100)).is_err());
    runtime.shutdown_graceful();
}
