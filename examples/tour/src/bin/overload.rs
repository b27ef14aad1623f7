//! Overload with and without admission control.
//!
//! One worker serves two processes, each for its own principal: a high-priority one (5% of
//! the requests, half the group's capacity) and a low-priority one (95%). Each request takes 100 µs of work, so the
//! group can serve about 10,000 requests per second; the load generator offers about ten times
//! that for two seconds. The run is done twice:
//!
//! * without a predicate, every request is queued and latency grows with the backlog;
//! * with per-priority queue thresholds sized from a 10 ms latency target (high-priority
//!   requests admitted while fewer than 100 are queued, low-priority ones while fewer than
//!   20), the low-priority load is shed and the high-priority latency stays near the target;
//! * with SEDA's 90th-percentile response-time controller, one token bucket per principal
//!   class (class = priority), which learns the admission rate from the response times the
//!   group reports, cutting the lower class first.
//!
//! ```text
//! cargo run --release -p tour --bin overload
//! ```

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use whirl::admission::{ClassResponseTime, PriorityThresholds};
use whirl::prelude::*;
use whirl::{GroupBuilder, Principal};

const WORK: Duration = Duration::from_micros(100);
const OFFERED_PER_SECOND: u64 = 100_000;
const RUN: Duration = Duration::from_secs(2);
const HIGH: u8 = 1;
const LOW: u8 = 0;

#[derive(Message)]
struct Request {
    sent: Instant,
}

#[derive(Message)]
struct Sample {
    priority: u8,
    micros: u64,
}

#[derive(Message)]
struct Report(ReplyTo<[Vec<u64>; 2]>);

/// Does the work, then reports the request's latency (queueing + service).
#[process]
struct Service {
    priority: u8,
    collector: Addr<Collector>,
}

#[process]
impl Service {
    #[handle]
    fn request(&mut self, request: Request) {
        let start = Instant::now();
        while start.elapsed() < WORK {
            std::hint::spin_loop();
        }
        let micros = u64::try_from(request.sent.elapsed().as_micros()).unwrap_or(u64::MAX);
        let _ = self.collector.post(Sample {
            priority: self.priority,
            micros,
        });
    }
}

/// Gathers latencies, in a group of its own so that reading them never waits behind the
/// service's backlog.
#[process]
struct Collector {
    micros: [Vec<u64>; 2],
}

#[process]
impl Collector {
    #[handle]
    fn sample(&mut self, s: Sample) {
        self.micros[usize::from(s.priority == HIGH)].push(s.micros);
    }

    #[handle]
    fn report(&mut self, Report(reply): Report) {
        let _ = reply.send(std::mem::take(&mut self.micros));
    }
}

#[derive(Default)]
struct Tally {
    offered: u64,
    admitted: u64,
    rejected: u64,
}

/// One run; `admission` configures the service group (adds a predicate, or not).
fn run(title: &str, admission: impl FnOnce(GroupBuilder) -> GroupBuilder) {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let service = admission(rt.group("service").threads(1))
        .build()
        .expect("build group");
    let stats = rt.group("stats").threads(1).build().expect("build group");
    let collector = rt.spawner().group(&stats).spawn(Collector {
        micros: [Vec::new(), Vec::new()],
    });
    let spawn = |priority: u8, id: u64| {
        let principal = Principal::builder(id)
            .priority(priority)
            .class(u16::from(priority))
            .build()
            .expect("a valid principal");
        let state = Service {
            priority,
            collector: collector.clone(),
        };
        rt.spawner()
            .group(&service)
            .principal(principal)
            .spawn(state)
    };
    let (high, low) = (spawn(HIGH, 1), spawn(LOW, 2));
    rt.block_until_idle();

    // Offer a batch every millisecond: OFFERED_PER_SECOND / 1000 requests, one in twenty high.
    let mut tally = [Tally::default(), Tally::default()];
    let per_tick = OFFERED_PER_SECOND / 1000;
    let start = Instant::now();
    let mut tick = 0u32;
    while start.elapsed() < RUN {
        for i in 0..per_tick {
            let (addr, t) = if i % 20 == 0 {
                (&high, &mut tally[1])
            } else {
                (&low, &mut tally[0])
            };
            t.offered += 1;
            match addr.post(Request {
                sent: Instant::now(),
            }) {
                Ok(()) => t.admitted += 1,
                Err(PostError::Rejected(_)) => t.rejected += 1,
                Err(other) => unreachable!("services do not terminate: {other}"),
            }
        }
        tick += 1;
        let next = start + Duration::from_millis(u64::from(tick));
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    let micros = collector.request_with(Report).call().unwrap_or_default();
    let backlog = service.counts().queued();

    println!("{title}");
    println!(
        "  {:<9} {:>8} {:>9} {:>9} {:>8} {:>9} {:>9} {:>9} {:>9}",
        "priority", "offered", "admitted", "rejected", "served", "p50", "p90", "p99", "max"
    );
    for (name, index) in [("high", 1), ("low", 0)] {
        let t = &tally[index];
        let h = histogram(&micros[index]);
        println!(
            "  {name:<9} {:>8} {:>9} {:>9} {:>8} {:>9} {:>9} {:>9} {:>9}",
            t.offered,
            t.admitted,
            t.rejected,
            micros[index].len(),
            ms(h.value_at_quantile(0.5)),
            ms(h.value_at_quantile(0.9)),
            ms(h.value_at_quantile(0.99)),
            ms(h.max()),
        );
    }
    println!("  still queued when the load stopped: {backlog} (dropped to dead letters)\n");
    rt.shutdown_timeout(Duration::ZERO);
}

fn histogram(samples: &[u64]) -> Histogram<u64> {
    // From 1 µs to 10 minutes, 3 significant digits: valid bounds, so this cannot fail.
    let mut h = Histogram::<u64>::new_with_bounds(1, 600_000_000, 3).expect("valid bounds");
    for &s in samples {
        h.saturating_record(s);
    }
    h
}

fn ms(micros: u64) -> String {
    format!("{:.1} ms", micros as f64 / 1000.0)
}

fn main() {
    println!(
        "one worker, {} µs of work per request (capacity about {}/s), offered {}/s for {:?}, \
         5% high priority\n",
        WORK.as_micros(),
        1_000_000 / WORK.as_micros(),
        OFFERED_PER_SECOND,
        RUN
    );
    run("without admission control:", |group| group);
    run(
        "with PriorityThresholds (high admitted while < 100 queued, low while < 20):",
        |group| group.predicate(PriorityThresholds::new(20).at_least(HIGH, 100)),
    );
    run(
        "with ClassResponseTime (SEDA's 90th-percentile controller, 10 ms target, per class):",
        |group| group.predicate(ClassResponseTime::new(2, Duration::from_millis(10))),
    );
}
