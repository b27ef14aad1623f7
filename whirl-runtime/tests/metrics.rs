//! Metrics through the `metrics` facade (feature `metrics`): `Runtime::record_metrics` records
//! a snapshot's counters, gauges and recent latency quantiles, labelled by group and by class
//! of principal;
//! supervisors count their restarts; `Runtime::export_metrics` records on its own thread until
//! its exporter is dropped or the runtime goes away.
//!
//! A small capturing recorder keeps every value by name and labels. `record_metrics` is
//! checked through a recorder local to the test thread, so its values are exact whatever else
//! runs; restarts and the exporter record from other threads, into the global recorder, so
//! those checks read only the series of their own supervisor or group and the tests may run
//! in parallel. Every wait is for something to happen within a generous deadline.
#![cfg(feature = "metrics")]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use metrics::{
    Counter, Gauge, GaugeFn, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};
use whirl::admission::QueueLength;
use whirl::prelude::*;
use whirl::supervision::{ChildSpec, EventKind, Supervisor, SupervisorSpec};
use whirl::{Principal, Runtime, SharedClient};

use common::{gate, recv, wait_until, Gate, HANG_GUARD};

// ---------------------------------------------------------------------------------------------
// A capturing recorder.
// ---------------------------------------------------------------------------------------------

/// A metric's name and its labels, in label order.
type Series = (String, BTreeMap<String, String>);

fn series(name: &str, labels: &[(&str, &str)]) -> Series {
    let labels = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    (name.to_owned(), labels)
}

fn series_of(key: &Key) -> Series {
    let labels = key
        .labels()
        .map(|l| (l.key().to_owned(), l.value().to_owned()))
        .collect();
    (key.name().to_owned(), labels)
}

/// A gauge's value (as `f64` bits) and how many times it was set.
#[derive(Default)]
struct GaugeCell {
    bits: AtomicU64,
    sets: AtomicU64,
}

impl GaugeFn for GaugeCell {
    fn increment(&self, value: f64) {
        let _ = self
            .bits
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| {
                Some((f64::from_bits(b) + value).to_bits())
            });
    }

    fn decrement(&self, value: f64) {
        self.increment(-value);
    }

    fn set(&self, value: f64) {
        self.bits.store(value.to_bits(), Ordering::Release);
        self.sets.fetch_add(1, Ordering::AcqRel);
    }
}

/// Keeps every counter and gauge registered with it; histograms are not used by whirl.
#[derive(Default)]
struct Capture {
    counters: Mutex<HashMap<Series, Arc<AtomicU64>>>,
    gauges: Mutex<HashMap<Series, Arc<GaugeCell>>>,
}

impl Capture {
    fn counter(&self, name: &str, labels: &[(&str, &str)]) -> Option<u64> {
        let counters = self.counters.lock().unwrap();
        let c = counters.get(&series(name, labels))?;
        Some(c.load(Ordering::Acquire))
    }

    fn gauge(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let gauges = self.gauges.lock().unwrap();
        let g = gauges.get(&series(name, labels))?;
        Some(f64::from_bits(g.bits.load(Ordering::Acquire)))
    }

    /// How many times the gauge was set.
    fn gauge_sets(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        let gauges = self.gauges.lock().unwrap();
        gauges
            .get(&series(name, labels))
            .map_or(0, |g| g.sets.load(Ordering::Acquire))
    }

    /// Every series recorded under `name`.
    fn names(&self, name: &str) -> usize {
        let counters = self.counters.lock().unwrap();
        let gauges = self.gauges.lock().unwrap();
        counters
            .keys()
            .chain(gauges.keys())
            .filter(|s| s.0 == name)
            .count()
    }
}

impl Recorder for Capture {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let mut counters = self.counters.lock().unwrap();
        let c = counters.entry(series_of(key)).or_default();
        Counter::from_arc(Arc::clone(c))
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        let mut gauges = self.gauges.lock().unwrap();
        let g = gauges.entry(series_of(key)).or_default();
        Gauge::from_arc(Arc::clone(g))
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

/// The recorder installed globally for this test binary, for what other threads record.
fn global() -> &'static Capture {
    static GLOBAL: OnceLock<&'static Capture> = OnceLock::new();
    GLOBAL.get_or_init(|| {
        let capture: &'static Capture = Box::leak(Box::default());
        metrics::set_global_recorder(capture).expect("no other global recorder in this binary");
        capture
    })
}

// ---------------------------------------------------------------------------------------------
// Processes.
// ---------------------------------------------------------------------------------------------

#[derive(Message)]
enum Job {
    Nothing,
    /// Waits in the handler until the gate opens.
    Hold(SharedClient<Gate>),
}

#[process]
struct Worker;

#[process]
impl Worker {
    #[handle]
    fn job(&mut self, job: Job) {
        match job {
            Job::Nothing => {}
            Job::Hold(gate) => gate.wait(),
        }
    }
}

/// Fails the child that handles it.
#[derive(Message)]
struct Crash;

#[process]
#[derive(Clone)]
struct Crashy;

#[process]
impl Crashy {
    #[handle]
    fn crash(&mut self, _: Crash) -> Result<(), Failure> {
        Err(Failure::new("asked to fail"))
    }
}

// ---------------------------------------------------------------------------------------------
// Tests.
// ---------------------------------------------------------------------------------------------

#[test]
fn a_snapshot_is_recorded_with_exact_counts_and_supervisors_count_restarts() {
    let global = global();
    let rt = Runtime::builder()
        .threads(2)
        .build()
        .expect("the runtime starts");

    // A group whose predicate rejects: its one worker held on a gate, the queue fills.
    let admission = rt
        .group("metrics-admission")
        .threads(1)
        .predicate(QueueLength::max(3))
        .build()
        .expect("build group");
    let held = rt.spawner().group(&admission).spawn(Worker);
    let opened = Gate::new();
    held.post(Job::Hold(gate(&opened))).expect("admitted");
    let (mut admitted, mut rejected) = (1u64, 0u64);
    for _ in 0..10 {
        match held.post(Job::Nothing) {
            Ok(()) => admitted += 1,
            Err(PostError::Rejected(_)) => rejected += 1,
            Err(_) => panic!("the process is alive"),
        }
    }
    assert!(rejected > 0, "the queue should have reached the threshold");
    opened.open();

    // A principal's process, in a group of its own.
    let tenants = rt
        .group("metrics-tenants")
        .threads(1)
        .build()
        .expect("build group");
    let principal = Principal::builder(42)
        .class(3)
        .build()
        .expect("a valid principal");
    let tenant = rt
        .spawner()
        .group(&tenants)
        .principal(principal.clone())
        .spawn(Worker);
    for _ in 0..5 {
        tenant.post(Job::Nothing).expect("no predicate");
    }

    // A supervisor whose child fails once and is restarted.
    let (events_tx, events) = mpsc::channel();
    let spec = SupervisorSpec::new("metrics-sup")
        .child(ChildSpec::worker("crashy", Crashy).named("metrics-crashy"))
        .on_event(move |e| {
            let _ = events_tx.send(e.kind.clone());
        });
    let _sup = rt.spawn(Supervisor::new(spec));
    rt.block_until_idle();
    let crashy = rt
        .whereis::<Crashy>("metrics-crashy")
        .expect("the supervisor started its child");
    crashy.post(Crash).expect("alive");
    loop {
        if let EventKind::ChildRestarted { restarts, .. } = recv(&events) {
            assert_eq!(restarts, 1);
            break;
        }
    }
    // The sink runs after the counter is incremented.
    assert_eq!(
        global.counter(
            "whirl_supervisor_restarts_total",
            &[("supervisor", "metrics-sup")]
        ),
        Some(1)
    );

    rt.block_until_idle();
    // Workers publish latencies and per-principal counts when they run out of work, which
    // may be just after the runtime looks idle.
    let start = std::time::Instant::now();
    loop {
        let stats = rt.stats();
        let of = |name: &str| stats.groups.iter().find(|g| g.name == name).cloned();
        let tenants = of("metrics-tenants").map(|g| g.principals);
        let samples = of("metrics-admission").map(|g| g.handling_time.samples);
        if tenants
            .as_ref()
            .is_some_and(|p| p.first().is_some_and(|p| p.handled == 5))
            && samples.is_some_and(|n| n > 0)
        {
            break;
        }
        assert!(
            start.elapsed() < HANG_GUARD,
            "the statistics were not published within {HANG_GUARD:?}: tenants' principals \
             {tenants:?}, admission's handling samples {samples:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }

    let capture = Capture::default();
    metrics::with_local_recorder(&capture, || rt.record_metrics());

    let group = [("group", "metrics-admission")];
    let counter = |name: &str| capture.counter(name, &group);
    assert_eq!(
        counter("whirl_group_posted_total"),
        Some(admitted + rejected)
    );
    assert_eq!(counter("whirl_group_admitted_total"), Some(admitted));
    assert_eq!(counter("whirl_group_rejected_total"), Some(rejected));
    assert_eq!(counter("whirl_group_handled_total"), Some(admitted));
    assert_eq!(counter("whirl_group_dead_lettered_total"), Some(0));
    assert_eq!(counter("whirl_group_spawned_total"), Some(1));
    assert_eq!(counter("whirl_group_terminated_total"), Some(0));
    let gauge = |name: &str| capture.gauge(name, &group);
    assert_eq!(gauge("whirl_group_queue_length"), Some(0.0));
    assert_eq!(gauge("whirl_group_threads"), Some(1.0));
    assert_eq!(gauge("whirl_group_threads_min"), Some(1.0));
    assert_eq!(gauge("whirl_group_threads_max"), Some(1.0));
    assert_eq!(gauge("whirl_group_blocked_workers"), Some(0.0));
    assert_eq!(gauge("whirl_group_admission_active"), Some(1.0));
    assert_eq!(
        gauge("whirl_group_budget"),
        Some(whirl::DEFAULT_BUDGET as f64)
    );

    // Latency quantiles over the recent window (the statistics were published just now);
    // no whole-life quantiles, no histogram-shaped series the facade cannot keep honest.
    let quantile = |q: &str| {
        capture
            .gauge(
                "whirl_group_recent_handling_seconds",
                &[("group", "metrics-admission"), ("stat", q)],
            )
            .unwrap_or_else(|| panic!("no recent handling-time quantile {q}"))
    };
    assert!(quantile("p50") <= quantile("p90"));
    assert!(quantile("p99") <= quantile("max"));
    for gone in [
        "whirl_group_handling_seconds",
        "whirl_group_handling_seconds_count",
        "whirl_group_handling_seconds_bucket",
        "whirl_group_handling_seconds_sum",
    ] {
        assert_eq!(capture.names(gone), 0, "{gone} is recorded");
    }

    // The default group, the principal, the runtime.
    assert_eq!(
        capture.gauge("whirl_group_threads", &[("group", "default")]),
        Some(2.0)
    );
    // Principals are counted by class and priority, not one series each.
    let (class, priority) = (
        principal.class().to_string(),
        principal.priority().to_string(),
    );
    assert_eq!(
        capture.counter(
            "whirl_class_handled_total",
            &[
                ("group", "metrics-tenants"),
                ("class", &class),
                ("priority", &priority)
            ]
        ),
        Some(5)
    );
    assert_eq!(capture.names("whirl_class_handled_total"), 1);
    assert_eq!(capture.names("whirl_principal_handled_total"), 0);
    // The supervisor and its child, one worker in each named group.
    assert_eq!(rt.live_processes(), 4);
    assert_eq!(capture.gauge("whirl_live_processes", &[]), Some(4.0));
    // A restart is counted where it happens, not from a snapshot.
    assert_eq!(capture.names("whirl_supervisor_restarts_total"), 0);
}

#[test]
fn the_exporter_records_until_dropped_and_stops_with_its_runtime() {
    let global = global();
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let group = rt
        .group("metrics-export")
        .threads(1)
        .build()
        .expect("build group");
    let p = rt.spawner().group(&group).spawn(Worker);
    for _ in 0..7 {
        p.post(Job::Nothing).expect("no predicate");
    }
    rt.block_until_idle();

    let labels = [("group", "metrics-export")];
    let exporter = rt.export_metrics(Duration::from_millis(5));
    assert!(exporter.is_running());
    wait_until("the exporter to record the group", || {
        global.counter("whirl_group_handled_total", &labels) == Some(7)
    });
    // It keeps recording.
    let sets = global.gauge_sets("whirl_group_threads", &labels);
    wait_until("another recording", || {
        global.gauge_sets("whirl_group_threads", &labels) > sets
    });

    // Dropping it stops the thread before `drop` returns.
    drop(exporter);
    let sets = global.gauge_sets("whirl_group_threads", &labels);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(global.gauge_sets("whirl_group_threads", &labels), sets);

    // An exporter whose runtime shuts down stops on its own.
    let exporter = rt.export_metrics(Duration::from_millis(5));
    drop(rt);
    wait_until("the exporter to notice the shutdown", || {
        !exporter.is_running()
    });
    exporter.stop();
}
