//! Goodput of SEDA's response-time controller alone, against a queue-length threshold, at ten
//! times a group's capacity (issue 13).
//!
//! One worker serves one process whose handler does 100 µs of busy work, so the group can
//! serve about 10,000 requests per second; a pacer (the main thread) offers 100,000 per second,
//! 100 every millisecond. The same run is made twice, each on a fresh runtime:
//!
//! * `QueueLength::max(500)`: 500 queued is 50 ms of work;
//! * `ResponseTime::new(50 ms)`: SEDA's 90th-percentile controller, alone, with its defaults.
//!
//! For each it prints the goodput (requests admitted per second after the warm-up; every
//! admitted request is served), the 90th percentile of the response times (sent to handled)
//! of the requests admitted after the warm-up, and the resident memory (`VmRSS`) at the start,
//! after the warm-up, at the end and at its peak (sampled every 100 ms); then the ratio of the
//! two goodputs. The warm-up (5 s by default) covers the controller's start: it starts wide
//! open, and the backlog that builds before the first response times reveal the overload
//! takes two to three seconds to drain (see `whirl::admission::ControllerParams`).
//!
//! ```text
//! cargo run --release -p bench --bin response_time_goodput [-- --secs 10 --warm-up 5]
//! cargo run --release -p bench --bin response_time_goodput -- --quick   # 3 s measured
//! cargo run --release -p bench --bin response_time_goodput -- --trace   # the controller
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use whirl::admission::{QueueLength, ResponseTime};
use whirl::prelude::*;
use whirl::GroupBuilder;

const WORK: Duration = Duration::from_micros(100);
const OFFERED_PER_SECOND: u64 = 100_000;
const TARGET: Duration = Duration::from_millis(50);
/// The queue threshold worth the target: 50 ms of 100 µs requests.
const QUEUE_MAX: u64 = 500;
/// Latency buckets of 100 µs up to 10 s, the last one for everything slower.
const BUCKET_MICROS: u64 = 100;
const BUCKETS: usize = 100_001;

#[derive(Message)]
struct Request {
    sent: Instant,
}

/// Asks for the latencies of the requests sent after the warm-up. Never refused: it must
/// reach the service whatever the predicate says.
#[derive(Message)]
#[message(bypass_admission)]
struct Report(ReplyTo<Latencies>);

/// A histogram of response times, fixed in size (allocated once, so recording never grows
/// the heap).
#[derive(Message)]
struct Latencies {
    counts: Vec<u64>,
}

impl Latencies {
    fn new() -> Self {
        Latencies {
            counts: vec![0; BUCKETS],
        }
    }

    fn record(&mut self, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        let bucket = usize::try_from(micros / BUCKET_MICROS).map_or(BUCKETS - 1, |b| b);
        self.counts[bucket.min(BUCKETS - 1)] += 1;
    }

    fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The upper bound of the bucket holding the `q` quantile.
    fn quantile(&self, q: f64) -> Duration {
        let rank = (self.total() as f64 * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (bucket, &count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Duration::from_micros((bucket as u64 + 1) * BUCKET_MICROS);
            }
        }
        Duration::ZERO
    }
}

/// Does 100 µs of work per request, and records the latency of the requests sent from `from`
/// on (queueing + service).
#[process]
struct Service {
    from: Instant,
    latencies: Latencies,
}

#[process]
impl Service {
    #[handle]
    fn request(&mut self, request: Request) {
        let start = Instant::now();
        while start.elapsed() < WORK {
            std::hint::spin_loop();
        }
        if request.sent >= self.from {
            self.latencies.record(request.sent.elapsed());
        }
    }

    #[handle]
    fn report(&mut self, Report(reply): Report) {
        let _ = reply.send(std::mem::replace(&mut self.latencies, Latencies::new()));
    }
}

/// The process's resident set size in KiB, from `/proc/self/status` (0 where there is none).
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .unwrap_or(0)
}

/// The run's shape, from the command line.
struct Settings {
    warm_up: Duration,
    measure: Duration,
    /// Print the queue and the controller's state every half second.
    trace: bool,
}

impl Settings {
    /// `--secs N` (measured seconds, default 10), `--warm-up N` (default 5), `--quick` (3 s
    /// measured), `--trace`.
    fn from_args() -> Self {
        let (mut secs, mut warm_up, mut trace) = (10.0, 5.0, false);
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            let mut value = |name: &str| -> f64 {
                args.next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| panic!("{name} takes a number of seconds"))
            };
            match arg.as_str() {
                "--quick" => secs = 3.0,
                "--secs" => secs = value("--secs"),
                "--warm-up" => warm_up = value("--warm-up"),
                "--trace" => trace = true,
                other => {
                    panic!("unknown argument {other}: --secs N, --warm-up N, --quick, --trace")
                }
            }
        }
        Settings {
            warm_up: Duration::from_secs_f64(warm_up),
            measure: Duration::from_secs_f64(secs),
            trace,
        }
    }
}

/// One run: a fresh runtime, the service group configured by `admission`, the warm-up, then
/// the measured load. Returns the goodput (admitted per second after the warm-up).
fn run(
    title: &str,
    settings: &Settings,
    admission: impl FnOnce(GroupBuilder) -> GroupBuilder,
    probe: &dyn Fn() -> String,
) -> f64 {
    let rss_start = rss_kib();
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let group = admission(rt.group("service").threads(1))
        .build()
        .expect("build group");
    let start = Instant::now();
    let from = start + settings.warm_up;
    let end = from + settings.measure;
    let service = rt.spawner().group(&group).spawn(Service {
        from,
        latencies: Latencies::new(),
    });

    // Offer a batch every millisecond; count what is offered after the warm-up.
    let per_tick = OFFERED_PER_SECOND / 1000;
    let (mut offered, mut admitted, mut rejected) = (0u64, 0u64, 0u64);
    let (mut rss_warm, mut rss_peak) = (None, rss_start);
    let mut tick = 0u64;
    while Instant::now() < end {
        for _ in 0..per_tick {
            let sent = Instant::now();
            let counted = u64::from(sent >= from);
            offered += counted;
            match service.post(Request { sent }) {
                Ok(()) => admitted += counted,
                Err(PostError::Rejected(_)) => rejected += counted,
                Err(other) => unreachable!("the service does not terminate: {other}"),
            }
        }
        tick += 1;
        if tick.is_multiple_of(100) {
            let rss = rss_kib();
            rss_peak = rss_peak.max(rss);
            if rss_warm.is_none() && Instant::now() >= from {
                rss_warm = Some(rss);
            }
            if settings.trace && tick.is_multiple_of(500) {
                let queued = group.counts().queued();
                eprintln!(
                    "  {:5.1} s  queued {queued:6}  {}",
                    tick as f64 / 1000.0,
                    probe()
                );
            }
        }
        let next = start + Duration::from_millis(tick);
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    // The report queues behind every admitted request (same sender, FIFO): when it comes
    // back, all of them have been served.
    let latencies = service
        .request_with(Report)
        .call()
        .unwrap_or_else(|_| Latencies::new());
    let rss_end = rss_kib();
    rss_peak = rss_peak.max(rss_end);
    let goodput = admitted as f64 / settings.measure.as_secs_f64();

    println!("{title}");
    println!(
        "  offered {offered}, admitted {admitted} ({goodput:.0}/s), rejected {rejected}, \
         served {}",
        latencies.total()
    );
    println!(
        "  response time of admitted requests: p50 {}, p90 {}, p99 {} (target {} ms)",
        ms(latencies.quantile(0.5)),
        ms(latencies.quantile(0.9)),
        ms(latencies.quantile(0.99)),
        TARGET.as_millis()
    );
    println!(
        "  VmRSS: start {}, after warm-up {}, end {}, peak {}",
        mib(rss_start),
        mib(rss_warm.unwrap_or(rss_end)),
        mib(rss_end),
        mib(rss_peak)
    );
    println!("  {}", probe());
    rt.shutdown_timeout(Duration::ZERO);
    goodput
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// The controller's state.
fn describe(c: &ResponseTime) -> String {
    format!(
        "controller: rate {:.0}/s, smoothed p90 {}, throughput {:.0}/s",
        c.rate(),
        c.estimate().map_or_else(|| "-".into(), ms),
        c.throughput().unwrap_or(0.0)
    )
}

fn main() {
    let settings = Settings::from_args();
    println!(
        "one worker, {} µs of work per request (capacity about {}/s), offered {}/s; \
         {:?} warm-up, then {:?} measured\n",
        WORK.as_micros(),
        1_000_000 / WORK.as_micros(),
        OFFERED_PER_SECOND,
        settings.warm_up,
        settings.measure
    );
    let queue = run(
        &format!("QueueLength::max({QUEUE_MAX}):"),
        &settings,
        |group| group.predicate(QueueLength::max(QUEUE_MAX)),
        &|| "no controller".into(),
    );
    let controller = Arc::new(ResponseTime::new(TARGET));
    let seda = run(
        &format!(
            "ResponseTime::new({} ms) alone (SEDA's 90th-percentile controller):",
            TARGET.as_millis()
        ),
        &settings,
        |group| group.predicate(Arc::clone(&controller)),
        &|| describe(&controller),
    );
    println!("\ngoodput ResponseTime / QueueLength: {:.3}", seda / queue);
}
