//! Metrics through the [`metrics`] facade (feature `metrics`), recorded from the statistics
//! snapshots: [`Runtime::record_metrics`] reads [`Runtime::stats`] once and records what it
//! holds; [`Runtime::export_metrics`] does that on a thread of its own, every period, until
//! its [`MetricsExporter`] is dropped. Nothing is counted on the message path for metrics: the
//! counters and histograms a snapshot reads are the ones the runtime keeps anyway (see
//! [`control`](crate::control)). The one exception is rare by nature: a supervisor counts its
//! restarts where it emits the restart event (`supervision/event.rs`).
//!
//! Whatever recorder the program installs receives them (a Prometheus exporter scrapes them
//! from there); without one, recording costs a snapshot and does nothing else. The exporter's
//! thread records into the *global* recorder (`metrics::set_global_recorder`): a recorder set
//! with `metrics::with_local_recorder` sees only what `record_metrics` records on its thread.
//!
//! What is recorded is listed on [`Runtime::record_metrics`].
//!
//! Latencies are recorded as quantiles of the recent window only: quantiles over a group's
//! whole life cannot alert, and the facade cannot carry the histograms the runtime keeps
//! (it takes observations one by one, not buckets). For real Prometheus histograms
//! (`_bucket`, an exact `_sum`, `_count`), `process_*` and `whirl_build_info`, use the
//! `prometheus` feature's collectors (`whirl::prometheus`).
//!
//! Not recorded: a controller's state in words ([`ControllerState`](crate::control::ControllerState)
//! has no numeric fields; what controllers move — threads, budget, admission — is recorded
//! above). A group's series are keyed by its name: two groups, or two runtimes in one
//! program, with the same name record over each other. Principals are counted per class and
//! priority, never one series per principal: a server that makes a principal per session
//! would otherwise make a series per session.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
//! use whirl::Runtime;
//!
//! /// Remembers the name of every counter registered.
//! #[derive(Default)]
//! struct Names(Mutex<Vec<String>>);
//!
//! impl Recorder for Names {
//!     fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
//!     fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
//!     fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
//!     fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
//!         self.0.lock().unwrap().push(key.name().to_owned());
//!         Counter::noop()
//!     }
//!     fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
//!         Gauge::noop()
//!     }
//!     fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
//!         Histogram::noop()
//!     }
//! }
//!
//! let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
//! let names = Names::default();
//! metrics::with_local_recorder(&names, || rt.record_metrics());
//! assert!(names.0.lock().unwrap().iter().any(|n| n == "whirl_group_handled_total"));
//! ```

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use metrics::{counter, describe_counter, describe_gauge, gauge, Label, Unit};

use super::families::{GROUP_COUNTERS, GROUP_GAUGES};
use super::handle::Runtime;
use crate::control::{GroupStats, LatencySummary, RuntimeStats};
use crate::group::Kernel;

/// The shortest period [`Runtime::export_metrics`] records at.
const MIN_PERIOD: Duration = Duration::from_millis(1);

impl Runtime {
    /// Records the runtime's statistics, as of now, through the [`metrics`] facade (feature
    /// `metrics`): one [`stats`](Runtime::stats) snapshot, nothing measured on the message
    /// path. Call it before each scrape, or let [`export_metrics`](Runtime::export_metrics)
    /// call it periodically.
    ///
    /// Every metric is prefixed `whirl_`; `group` is the group's name. Counters are set with
    /// `Counter::absolute` to the snapshot's total.
    ///
    /// | metric | type | labels | what |
    /// |---|---|---|---|
    /// | `whirl_live_processes` | gauge | | processes alive in the runtime |
    /// | `whirl_group_posted_total` | counter | `group` | messages offered to a process: admitted or rejected |
    /// | `whirl_group_admitted_total` | counter | `group` | messages the predicate admitted (posted − rejected) |
    /// | `whirl_group_rejected_total` | counter | `group` | messages the predicate handed back |
    /// | `whirl_group_handled_total` | counter | `group` | messages a handler finished with |
    /// | `whirl_group_dead_lettered_total` | counter | `group` | messages given to the dead-letter sink |
    /// | `whirl_group_spawned_total` | counter | `group` | processes spawned |
    /// | `whirl_group_terminated_total` | counter | `group` | processes terminated |
    /// | `whirl_group_slow_turns_total` | counter | `group` | turns that held a worker past the slow-turn threshold |
    /// | `whirl_group_queue_length` | gauge | `group` | messages queued now |
    /// | `whirl_group_threads` | gauge | `group` | worker threads now |
    /// | `whirl_group_threads_min`, `whirl_group_threads_max` | gauge | `group` | the range the thread count may move in |
    /// | `whirl_group_blocked_workers` | gauge | `group` | workers in a slow turn now |
    /// | `whirl_group_budget` | gauge | `group` | messages a process handles per turn |
    /// | `whirl_group_admission_active` | gauge | `group` | 1 while the predicate decides admissions, else 0 |
    /// | `whirl_group_controller` | gauge | `group`, `controller` | 1 for each concurrency controller of the group |
    /// | `whirl_group_recent_queue_wait_seconds`, `whirl_group_recent_handling_seconds` | gauge | `group`, `stat` | over the last one to two seconds: `stat` is `p50`, `p90`, `p99` or `max` |
    /// | `whirl_class_handled_total`, `whirl_class_rejected_total` | counter | `group`, `class`, `priority` | messages handled and rejected for the principals of a class and priority |
    /// | `whirl_supervisor_restarts_total` | counter | `supervisor` | children restarted by the supervisor's strategy (counted as they happen) |
    ///
    ///
    /// Latencies are quantiles over the last one to two seconds; for real histograms use the
    /// `prometheus` feature (`whirl::prometheus`). Groups are told apart by name only: give
    /// groups distinct names.
    pub fn record_metrics(&self) {
        record(&self.stats());
    }

    /// Starts a thread that [records the metrics](Runtime::record_metrics) at once and then
    /// every `every` (at least 1 ms), into the global recorder, until the returned exporter is
    /// dropped or [stopped](MetricsExporter::stop), or the runtime shuts down. The thread does
    /// not keep the runtime alive.
    ///
    /// # Panics
    ///
    /// If the operating system refuses to start the thread; see
    /// [`try_export_metrics`](Runtime::try_export_metrics) to handle that.
    pub fn export_metrics(&self, every: Duration) -> MetricsExporter {
        match self.try_export_metrics(every) {
            Ok(exporter) => exporter,
            Err(e) => panic!("cannot start the whirl metrics exporter thread: {e}"),
        }
    }

    /// Like [`export_metrics`](Runtime::export_metrics), or says why the thread could not
    /// start.
    pub fn try_export_metrics(&self, every: Duration) -> std::io::Result<MetricsExporter> {
        let kernel = Arc::downgrade(&self.kernel);
        let every = every.max(MIN_PERIOD);
        let (stop, stopped) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("whirl-metrics".into())
            .spawn(move || export(&kernel, every, &stopped))?;
        Ok(MetricsExporter {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl RuntimeStats {
    /// Records this snapshot through the [`metrics`] facade (feature `metrics`), as
    /// [`Runtime::record_metrics`] does with a fresh one: for a program that already took a
    /// snapshot, or that records into a recorder of its own with
    /// [`metrics::with_local_recorder`].
    pub fn record_metrics(&self) {
        record(self);
    }
}

/// The thread recording a runtime's metrics periodically (see
/// [`Runtime::export_metrics`]). Dropping it stops the thread and waits for it to finish the
/// recording in progress, if any.
#[must_use = "dropping the exporter stops it at once"]
#[derive(Debug)]
pub struct MetricsExporter {
    /// Never sent on: dropping it wakes the thread and tells it to stop.
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsExporter {
    /// Stops the thread and waits for it to finish (the same as dropping the exporter).
    pub fn stop(mut self) {
        self.halt();
    }

    /// Whether the thread is still recording: false once the runtime has shut down (or been
    /// dropped), or the recorder panicked.
    pub fn is_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    fn halt(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            // A panic in the recorder ended the thread; it was reported by the panic hook.
            let _ = thread.join();
        }
    }
}

impl Drop for MetricsExporter {
    fn drop(&mut self) {
        self.halt();
    }
}

/// The exporter thread: records while the runtime lives and is not shutting down, holding
/// the kernel only while it records.
fn export(kernel: &Weak<Kernel>, every: Duration, stopped: &mpsc::Receiver<()>) {
    loop {
        match kernel.upgrade() {
            Some(kernel) if !kernel.is_closing() => record(&kernel.stats()),
            _ => return,
        }
        match stopped.recv_timeout(every) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Records a snapshot (see the table in the module docs).
fn record(stats: &RuntimeStats) {
    describe();
    gauge!("whirl_live_processes").set(stats.live_processes as f64);
    for group in &stats.groups {
        record_group(group);
    }
}

fn record_group(g: &GroupStats) {
    let labels = [Label::new("group", g.name.clone())];
    let with = |key: &'static str, value: String| {
        let mut more = labels.to_vec();
        more.push(Label::new(key, value));
        more
    };
    for (name, _, count) in GROUP_COUNTERS {
        counter!(format!("{name}_total"), labels.iter()).absolute(count(g));
    }
    for (name, _, level) in GROUP_GAUGES {
        gauge!(name, labels.iter()).set(level(g));
    }
    for controller in &g.controllers {
        gauge!(
            "whirl_group_controller",
            with("controller", controller.name.to_owned())
        )
        .set(1.0);
    }
    recent(
        "whirl_group_recent_queue_wait_seconds",
        &labels,
        &g.recent_queue_latency,
    );
    recent(
        "whirl_group_recent_handling_seconds",
        &labels,
        &g.recent_handling_time,
    );
    for c in &g.classes {
        let mut labels = with("class", c.class.to_string());
        labels.push(Label::new("priority", c.priority.to_string()));
        counter!("whirl_class_handled_total", labels.iter()).absolute(c.handled);
        counter!("whirl_class_rejected_total", labels.iter()).absolute(c.rejected);
    }
}

/// `name{stat}` gauges of a latency over the last one to two seconds, once there is a
/// measurement in that window.
fn recent(name: &'static str, labels: &[Label], s: &LatencySummary) {
    if s.samples == 0 {
        return;
    }
    for (stat, value) in [
        ("p50", s.p50),
        ("p90", s.p90),
        ("p99", s.p99),
        ("max", s.max),
    ] {
        let mut with_stat = labels.to_vec();
        with_stat.push(Label::new("stat", stat));
        gauge!(name, with_stat).set(value.as_secs_f64());
    }
}

/// Descriptions and units, for exporters that publish them (Prometheus's `# HELP`).
fn describe() {
    describe_gauge!("whirl_live_processes", "Processes alive in the runtime.");
    for (name, help, _) in GROUP_COUNTERS {
        describe_counter!(format!("{name}_total"), help);
    }
    for (name, help, _) in GROUP_GAUGES {
        describe_gauge!(name, help);
    }
    describe_gauge!(
        "whirl_group_controller",
        "1 for each concurrency controller of the group."
    );
    for (name, what) in [
        (
            "whirl_group_recent_queue_wait_seconds",
            "Queue wait over the last one to two seconds: p50, p90, p99 and max.",
        ),
        (
            "whirl_group_recent_handling_seconds",
            "Handler time per message over the last one to two seconds: p50, p90, p99 and max.",
        ),
    ] {
        describe_gauge!(name, Unit::Seconds, what);
    }
    for (name, what) in [
        (
            "whirl_class_handled_total",
            "Messages handled in the group for the principals of a class and priority.",
        ),
        (
            "whirl_class_rejected_total",
            "Messages for the principals of a class and priority the group's predicate rejected.",
        ),
        (
            "whirl_supervisor_restarts_total",
            "Children restarted by the supervisor's strategy.",
        ),
    ] {
        describe_counter!(name, what);
    }
}
