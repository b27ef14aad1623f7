//! A process that blocks (sleeps, waits on I/O) belongs in a group of its own, as the paper
//! says: its workers block, and other groups keep running on theirs.

mod common;

use std::sync::mpsc;

use common::{Gate, Plain};
use whirl_runtime::Runtime;

#[test]
fn a_blocked_group_does_not_stall_other_groups() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let blocking = rt
        .group("blocking")
        .threads(1)
        .build()
        .expect("build group");
    let (tx, _events) = common::events();

    // Block the blocking group's only worker.
    let stuck = rt
        .spawner()
        .group(&blocking)
        .spawn(Plain::new("stuck", &tx));
    let gate = Gate::new();
    let held = gate.clone();
    let (entered_tx, entered) = mpsc::channel();
    common::post_job(&stuck, move |_, _| {
        let _ = entered_tx.send(());
        held.wait();
        Ok(())
    })
    .unwrap();
    common::recv(&entered);

    // Meanwhile the default group answers a thousand requests, alternating two processes.
    let a = rt.spawn(Plain::new("a", &tx));
    let b = rt.spawn(Plain::new("b", &tx));
    for i in 0..1_000u64 {
        let to = if i % 2 == 0 { &a } else { &b };
        assert_eq!(common::run(to, move |_, _| i), i);
    }
    // A message to the blocked group waits its turn; it is not lost.
    common::post_job(&stuck, |node, _| {
        node.log.push(7);
        Ok(())
    })
    .unwrap();
    assert_eq!(
        blocking.counts().queued(),
        2,
        "the held message and the waiting one"
    );

    gate.open();
    assert_eq!(common::run(&stuck, |node, _| node.log.clone()), vec![7]);
    rt.block_until_idle();
    common::assert_balanced(&rt.counts());
    rt.shutdown_graceful();
}
