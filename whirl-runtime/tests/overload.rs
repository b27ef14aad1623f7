//! A group flooded at ten times its capacity, with two principal priorities, with and without
//! per-priority admission control. Capacity is set by the test, not by a clock: the service's
//! handler waits for a permit, and the test hands out two permits per round while it offers
//! twenty requests (one high priority, nineteen low). Everything is counted in rounds, so the
//! outcome does not depend on the machine's speed.

mod common;

use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Condvar, Mutex};
use whirl_runtime::request::Sender as _;

use common::{assert_isolated, to_test, ToTest};
use whirl_runtime::admission::PriorityThresholds;
use whirl_runtime::{
    Addr, Ctx, Failure, Group, GroupBuilder, Handles, Isolated, Message, PostError, Principal,
    Process, Runtime, SharedClient,
};

const ROUNDS: u64 = 200;
const OFFERED_PER_ROUND: u64 = 20;
const SERVED_PER_ROUND: usize = 2;
const HIGH: u8 = 1;

/// Permits handed out by the test; each handled request consumes one.
#[derive(Default)]
struct Permits {
    count: Mutex<usize>,
    available: Condvar,
}

impl Permits {
    fn grant(&self, n: usize) {
        *self.count.lock().unwrap() += n;
        self.available.notify_all();
    }

    fn take(&self) {
        let mut count = self.count.lock().unwrap();
        while *count == 0 {
            count = self.available.wait(count).unwrap();
        }
        *count -= 1;
    }
}

/// A request, stamped with the round it was offered in.
struct Request(u64);

struct Service {
    priority: u8,
    permits: SharedClient<Arc<Permits>>,
    served: ToTest<(u8, u64)>,
}

const _: () = {
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<u8>;
    let _ = assert_isolated::<SharedClient<Arc<Permits>>>;
    let _ = assert_isolated::<ToTest<(u8, u64)>>;
};

// SAFETY: a number.
unsafe impl Isolated for Request {}
impl Message for Request {}

// SAFETY: every field is `Isolated` (asserted above): `priority` is a number, and `permits` and
// `served` are test instruments held as `SharedClient`s with the reason (the permits the test
// thread hands out, and a channel to it). The message is a number.
unsafe impl Process for Service {
    type Message = Request;

    fn handle(&mut self, Request(round): Request, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        self.permits.take();
        let _ = self.served.send((self.priority, round));
        Ok(())
    }
}

impl Handles<Request> for Service {
    fn into_message(msg: Request) -> Request {
        msg
    }
}

#[derive(Default)]
struct Outcome {
    offered: [u64; 2],
    rejected: [u64; 2],
    /// Rounds between offer and service, per priority.
    waits: [Vec<u64>; 2],
    max_queued: u64,
}

fn flood(admission: impl FnOnce(GroupBuilder) -> GroupBuilder) -> Outcome {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let group: Group = admission(rt.group("service").threads(1))
        .build()
        .expect("build group");
    let permits = Arc::new(Permits::default());
    let (served_tx, served) = mpsc::channel();
    let spawn = |priority: u8| -> Addr<Service> {
        let state = Service {
            priority,
            permits: SharedClient::new(
                Arc::clone(&permits),
                "test instrument: the permits the test thread hands out from outside the \
                 runtime, setting the service's capacity round by round",
            ),
            served: to_test(&served_tx),
        };
        rt.spawner()
            .group(&group)
            .principal(
                Principal::builder(u64::from(priority))
                    .priority(priority)
                    .build()
                    .expect("a valid principal"),
            )
            .spawn(state)
    };
    let (high, low) = (spawn(HIGH), spawn(0));
    rt.block_until_idle();

    let mut out = Outcome::default();
    for round in 0..ROUNDS {
        for i in 0..OFFERED_PER_ROUND {
            let (addr, p) = if i == 0 { (&high, 1) } else { (&low, 0) };
            out.offered[p] += 1;
            match addr.post(Request(round)) {
                Ok(()) => {}
                Err(PostError::Rejected(Request(r))) => {
                    assert_eq!(r, round, "the rejected request comes back");
                    out.rejected[p] += 1;
                }
                Err(other) => panic!("the services do not terminate: {other}"),
            }
        }
        out.max_queued = out.max_queued.max(group.counts().queued());
        permits.grant(SERVED_PER_ROUND);
        record(&served, SERVED_PER_ROUND, round, &mut out);
    }
    // Drain what is left, so the run ends balanced.
    let admitted: u64 = (0..2).map(|p| out.offered[p] - out.rejected[p]).sum();
    let served_so_far = out.waits.iter().map(Vec::len).sum::<usize>();
    let left = usize::try_from(admitted).unwrap_or(usize::MAX) - served_so_far;
    permits.grant(left);
    record(&served, left, ROUNDS, &mut out);
    rt.block_until_idle();
    common::assert_balanced(&rt.counts());
    rt.shutdown_graceful();
    out
}

fn record(served: &Receiver<(u8, u64)>, n: usize, now: u64, out: &mut Outcome) {
    for _ in 0..n {
        let (priority, offered_in) = common::recv(served);
        out.waits[usize::from(priority == HIGH)].push(now - offered_in);
    }
}

/// The `q`-quantile of `waits`, in rounds.
fn quantile(waits: &[u64], q: f64) -> u64 {
    let mut sorted = waits.to_vec();
    sorted.sort_unstable();
    let index = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[index]
}

#[test]
fn priority_thresholds_keep_high_priority_served_while_low_priority_is_shed() {
    let out = flood(|g| g.predicate(PriorityThresholds::new(20).at_least(HIGH, 100)));
    // Every high-priority request is admitted: the queue never reaches its threshold.
    assert_eq!(out.rejected[1], 0, "{}", summary(&out));
    // Most of the low-priority load is shed (about 17 of every 19).
    assert!(
        out.rejected[0] * 10 >= out.offered[0] * 8,
        "{}",
        summary(&out)
    );
    // The queue stays bounded by the thresholds instead of growing with the flood...
    assert!(out.max_queued <= 22, "{}", summary(&out));
    // ...and so do the waits of both priorities (the worker alternates between the two
    // principals' processes a turn at a time, hence up to about one queue's worth of rounds).
    assert!(quantile(&out.waits[1], 0.9) <= 22, "{}", summary(&out));
    assert!(quantile(&out.waits[0], 0.9) <= 22, "{}", summary(&out));
}

#[test]
fn without_admission_control_the_backlog_and_the_waits_grow_with_the_flood() {
    let out = flood(|g| g);
    assert_eq!(out.rejected, [0, 0], "{}", summary(&out));
    // 18 more requests queued every round: the queue is as long as the flood is old...
    assert!(
        out.max_queued >= (OFFERED_PER_ROUND - 2) * (ROUNDS - 1),
        "{}",
        summary(&out)
    );
    // ...and so are the low-priority waits: far beyond anything seen with the thresholds.
    assert!(quantile(&out.waits[0], 0.9) >= 100, "{}", summary(&out));
}

/// The numbers worth printing when an assertion fails (the waits themselves are long).
fn summary(out: &Outcome) -> String {
    format!(
        "offered {:?}, rejected {:?}, max queued {}, p90 wait high {} low {} (rounds)",
        out.offered,
        out.rejected,
        out.max_queued,
        quantile(&out.waits[1], 0.9),
        quantile(&out.waits[0], 0.9),
    )
}
