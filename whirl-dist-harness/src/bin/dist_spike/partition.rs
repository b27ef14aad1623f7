//! Gate 2: a partition, then a heal. Both sides must see each other Down while the proxy cuts
//! the link; once it forwards again, the child's session reconnects under the same
//! incarnation, and both sides must refuse it (`ResurrectionRefused`), never mark it Up again.

use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use whirl_dist::{MemberState, Node, NodeEvent, NodeId};

use crate::child::{ChildLine, ChildProc};
use crate::figures::{describe, ms, Row};
use crate::nodes::{parent_node, random_below, random_cluster, wait_event, SETUP_DEADLINE};
use crate::proxy::{PartitionMode, Proxy};

pub fn gate2(trials: u64, lease: Duration, mode: PartitionMode) -> Result<Row, String> {
    let name = match mode {
        PartitionMode::Drop => "gate 2 (drop): Down both sides, no resurrection",
        PartitionMode::Blackhole => "gate 2 (blackhole): Down both sides, no resurrection",
    };
    println!();
    println!("== {name}: {trials} trials ==");
    let cluster = random_cluster()?;
    let (parent, port) = parent_node(&cluster, lease)?;
    let parent_id = parent.id();
    let events = parent.events();
    let mut passed = 0;
    let mut parent_down_times = Vec::new();
    let mut child_down_times = Vec::new();
    let mut heal_to_refused = Vec::new();
    let started = Instant::now();
    for trial in 1..=trials {
        let proxy = Proxy::start(port)?;
        let child = ChildProc::spawn(&format!("tcp/127.0.0.1:{}", proxy.port), &cluster, lease)?;
        let outcome = partition_trial(&parent, &events, parent_id, &child, &proxy, lease, mode);
        proxy.stop();
        child.finish(Duration::from_secs(5));
        match outcome {
            Ok(t) => {
                passed += 1;
                parent_down_times.push(t.parent_down);
                child_down_times.push(t.child_down);
                heal_to_refused.push(t.refused_after_heal);
                println!(
                    "  trial {trial}: PASS  Down seen by parent after {} ms, by child after {} ms; \
                     reconnected and refused on both sides {} ms after heal \
                     (proxy: {} connections forwarded, {} refused while partitioned)",
                    ms(t.parent_down),
                    ms(t.child_down),
                    ms(t.refused_after_heal),
                    t.forwarded,
                    t.refused
                );
            }
            Err(why) => println!("  trial {trial}: FAIL  {why}"),
        }
    }
    let figures = format!(
        "parent Down: {}; child Down: {}; heal->both refused: {}",
        describe(&mut parent_down_times),
        describe(&mut child_down_times),
        describe(&mut heal_to_refused)
    );
    println!(
        "  {trials} trials in {:.1} s: {passed} passed; {figures}",
        started.elapsed().as_secs_f64()
    );
    let _ = parent.shutdown();
    Ok(Row {
        name: name.into(),
        trials,
        passed,
        figures,
    })
}

pub struct TrialTimes {
    parent_down: Duration,
    child_down: Duration,
    refused_after_heal: Duration,
    forwarded: u64,
    refused: u64,
}

pub fn partition_trial(
    parent: &Node,
    events: &Receiver<NodeEvent>,
    parent_id: NodeId,
    child: &ChildProc,
    proxy: &Proxy,
    lease: Duration,
    mode: PartitionMode,
) -> Result<TrialTimes, String> {
    let child_id = child.ready()?;
    let setup = Instant::now() + SETUP_DEADLINE;
    // Both sides see each other Up.
    wait_event(events, setup, |e| *e == NodeEvent::Up(child_id), |_| {})
        .ok_or("parent never saw the child Up")?;
    child
        .wait_line(setup, |l| *l == ChildLine::Up(parent_id))
        .ok_or("child never saw the parent Up")?;

    // Partition (at a random point of the keep-alive cycle), and hold it until both sides have
    // seen Down, then one more lease.
    thread::sleep(random_below(lease));
    let mut ups_again = 0;
    let mut child_ups_early = 0;
    let cut = Instant::now();
    proxy.partition(mode);
    let detect = cut + lease * 3 + Duration::from_secs(10);
    let parent_down = wait_event(
        events,
        detect,
        |e| matches!(e, NodeEvent::Down { node, .. } if *node == child_id),
        |e| {
            if e == NodeEvent::Up(child_id) {
                ups_again += 1;
            }
        },
    )
    .ok_or_else(|| {
        format!(
            "parent did not see the child Down within {} ms of the partition",
            detect.duration_since(cut).as_millis()
        )
    })?
    .duration_since(cut);
    let child_down = child
        .wait_line_or(
            detect,
            |l| *l == ChildLine::Down(parent_id),
            |l| {
                if *l == ChildLine::Up(parent_id) {
                    child_ups_early += 1;
                }
            },
        )
        .ok_or_else(|| {
            format!(
                "child did not report the parent Down within {} ms of the partition",
                detect.duration_since(cut).as_millis()
            )
        })?
        .duration_since(cut);
    thread::sleep(lease);

    // Heal; the child's session reconnects to the proxy with the same incarnation.
    let healed = Instant::now();
    proxy.heal();
    let refuse_deadline = healed + SETUP_DEADLINE;
    let parent_refused = wait_event(
        events,
        refuse_deadline,
        |e| *e == NodeEvent::ResurrectionRefused(child_id),
        |e| {
            if e == NodeEvent::Up(child_id) {
                ups_again += 1;
            }
        },
    );
    let mut child_ups_again = child_ups_early;
    let child_refused = child.wait_line_or(
        refuse_deadline,
        |l| *l == ChildLine::Refused(parent_id),
        |l| {
            if *l == ChildLine::Up(parent_id) {
                child_ups_again += 1;
            }
        },
    );
    let forwarded = proxy.shared.forwarded.load(Ordering::SeqCst);
    let refused = proxy.shared.refused.load(Ordering::SeqCst);
    if ups_again > 0 {
        return Err(format!(
            "the parent marked the child Up again {ups_again} times"
        ));
    }
    if child_ups_again > 0 {
        return Err(format!(
            "the child marked the parent Up again {child_ups_again} times"
        ));
    }
    if parent.state(child_id) != Some(MemberState::Quarantined) {
        return Err(format!(
            "the child is {:?} at the parent, not quarantined",
            parent.state(child_id)
        ));
    }
    match (parent_refused, child_refused) {
        (Some(p), Some(c)) => Ok(TrialTimes {
            parent_down,
            child_down,
            refused_after_heal: p.max(c).duration_since(healed),
            forwarded,
            refused,
        }),
        (p, c) => Err(format!(
            "after heal (within {} s): parent refused the child: {}, child refused the parent: {} \
             (proxy: {forwarded} connections forwarded in all, {refused} refused while partitioned{})",
            SETUP_DEADLINE.as_secs(),
            p.is_some(),
            c.is_some(),
            if forwarded < 2 {
                "; the child never reconnected"
            } else {
                ""
            }
        )),
    }
}
