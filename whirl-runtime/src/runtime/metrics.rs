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
//! Every metric is prefixed `whirl_`; `group` is the group's name, `principal` the
//! principal's id. Counters are set with `Counter::absolute` to the snapshot's total.
//!
//! | metric | type | labels | what |
//! |---|---|---|---|
//! | `whirl_live_processes` | gauge | | processes alive in the runtime |
//! | `whirl_group_posted_total` | counter | `group` | messages offered to a process: admitted or rejected |
//! | `whirl_group_admitted_total` | counter | `group` | messages the predicate admitted (posted − rejected) |
//! | `whirl_group_rejected_total` | counter | `group` | messages the predicate handed back |
//! | `whirl_group_handled_total` | counter | `group` | messages a handler finished with |
//! | `whirl_group_dead_lettered_total` | counter | `group` | messages given to the dead-letter sink |
//! | `whirl_group_spawned_total` | counter | `group` | processes spawned |
//! | `whirl_group_terminated_total` | counter | `group` | processes terminated |
//! | `whirl_group_slow_turns_total` | counter | `group` | turns that held a worker past the slow-turn threshold |
//! | `whirl_group_queue_length` | gauge | `group` | messages queued now |
//! | `whirl_group_threads` | gauge | `group` | worker threads now |
//! | `whirl_group_threads_min`, `whirl_group_threads_max` | gauge | `group` | the range the thread count may move in |
//! | `whirl_group_blocked_workers` | gauge | `group` | workers in a slow turn now |
//! | `whirl_group_budget` | gauge | `group` | messages a process handles per turn |
//! | `whirl_group_admission_active` | gauge | `group` | 1 while the predicate decides admissions, else 0 |
//! | `whirl_group_controller` | gauge | `group`, `controller` | 1 for each concurrency controller of the group |
//! | `whirl_group_queue_wait_seconds` | gauge | `group`, `quantile` | time queued before the handler ran: `quantile` is `0.5`, `0.9`, `0.99` or `1` (the largest) |
//! | `whirl_group_queue_wait_seconds_count` | counter | `group` | measurements behind those quantiles |
//! | `whirl_group_queue_wait_seconds_bucket`, `whirl_group_handling_seconds_bucket` | counter | `group`, `le` | measurements at most `le` seconds (cumulative, `le` from `0.0001` to `10` and `+Inf`): the histogram, for `histogram_quantile` |
//! | `whirl_group_queue_wait_seconds_sum`, `whirl_group_handling_seconds_sum` | gauge | `group` | the measurements' sum (mean times count) |
//! | `whirl_group_handling_seconds` | gauge | `group`, `quantile` | handler time per message, quantiles as above |
//! | `whirl_group_handling_seconds_count` | counter | `group` | measurements behind those quantiles |
//! | `whirl_principal_handled_total` | counter | `group`, `principal` | messages handled for the principal in the group |
//! | `whirl_principal_rejected_total` | counter | `group`, `principal` | messages for the principal the group's predicate rejected (the first 4,096 principals a group rejects) |
//! | `whirl_supervisor_restarts_total` | counter | `supervisor` | children restarted by the supervisor's strategy (counted as they happen) |
//!
//! Latencies are what the snapshots hold: quantiles of sampled measurements since the group
//! was built (see [`control`](crate::control)), not the samples themselves, so they are
//! recorded as gauges in the shape of a Prometheus summary (one series per quantile, plus
//! `_count`), and as the cumulative buckets of a Prometheus histogram (`_bucket{le}`, `_sum`,
//! `_count`), counted from the same histograms at fixed bounds ([`LATENCY_BUCKETS`]). A quantile
//! is recorded once there is a measurement.
//!
//! [`LATENCY_BUCKETS`]: crate::control::LATENCY_BUCKETS
//!
//! Not recorded: a controller's state in words ([`ControllerState`](crate::control::ControllerState)
//! has no numeric fields; what controllers move — threads, budget, admission — is recorded
//! above). A group's series
//! are keyed by its name: two groups, or two runtimes in one program, with the same name
//! record over each other. A principal is one series per group it was served in: fine for
//! tenants or classes of client, too many for a principal per session.
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

use super::handle::Runtime;
use crate::control::{GroupStats, LatencySummary, RuntimeStats, LATENCY_BUCKETS};
use crate::group::Kernel;

/// The shortest period [`Runtime::export_metrics`] records at.
const MIN_PERIOD: Duration = Duration::from_millis(1);

impl Runtime {
    /// Records the runtime's statistics, as of now, through the [`metrics`] facade (feature
    /// `metrics`): one [`stats`](Runtime::stats) snapshot, nothing measured on the message
    /// path. Call it before each scrape, or let [`export_metrics`](Runtime::export_metrics)
    /// call it periodically.
    ///
    /// Every metric is prefixed `whirl_`; `group` is the group's name, `principal` the
    /// principal's id; counters are set to the snapshot's totals
    /// (`metrics::Counter::absolute`):
    ///
    /// | metric | type | labels |
    /// |---|---|---|
    /// | `whirl_live_processes` | gauge | |
    /// | `whirl_group_posted_total` (admitted + rejected), `whirl_group_admitted_total`, `whirl_group_rejected_total`, `whirl_group_handled_total`, `whirl_group_dead_lettered_total` | counter | `group` |
    /// | `whirl_group_spawned_total`, `whirl_group_terminated_total`, `whirl_group_slow_turns_total` | counter | `group` |
    /// | `whirl_group_queue_length`, `whirl_group_threads`, `whirl_group_threads_min`, `whirl_group_threads_max`, `whirl_group_blocked_workers`, `whirl_group_budget`, `whirl_group_admission_active` (0 or 1) | gauge | `group` |
    /// | `whirl_group_controller` (1 per concurrency controller) | gauge | `group`, `controller` |
    /// | `whirl_group_queue_wait_seconds`, `whirl_group_handling_seconds` | gauge | `group`, `quantile` (`0.5`, `0.9`, `0.99`, `1`) |
    /// | `whirl_group_queue_wait_seconds_count`, `whirl_group_handling_seconds_count` | counter | `group` |
    /// | `whirl_group_queue_wait_seconds_bucket`, `whirl_group_handling_seconds_bucket` (cumulative) | counter | `group`, `le` |
    /// | `whirl_group_queue_wait_seconds_sum`, `whirl_group_handling_seconds_sum` | gauge | `group` |
    /// | `whirl_principal_handled_total`, `whirl_principal_rejected_total` | counter | `group`, `principal` |
    /// | `whirl_supervisor_restarts_total` (counted as restarts happen) | counter | `supervisor` |
    ///
    /// Latencies are quantiles of sampled measurements since the group was built (see
    /// [`control`](crate::control)), so they are gauges shaped like a Prometheus summary, not
    /// histograms. Groups are told apart by name only: give groups distinct names.
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
    let c = &g.counts;
    for (name, total) in [
        ("whirl_group_posted_total", c.posted),
        (
            "whirl_group_admitted_total",
            c.posted.saturating_sub(c.rejected),
        ),
        ("whirl_group_rejected_total", c.rejected),
        ("whirl_group_handled_total", c.handled),
        ("whirl_group_dead_lettered_total", c.dead_lettered),
        ("whirl_group_spawned_total", c.spawned),
        ("whirl_group_terminated_total", c.terminated),
        ("whirl_group_slow_turns_total", g.slow_turns),
    ] {
        counter!(name, labels.iter()).absolute(total);
    }
    for (name, value) in [
        ("whirl_group_queue_length", g.queue_length as f64),
        ("whirl_group_threads", g.threads as f64),
        ("whirl_group_threads_min", g.thread_range.0 as f64),
        ("whirl_group_threads_max", g.thread_range.1 as f64),
        ("whirl_group_blocked_workers", g.blocked_workers as f64),
        ("whirl_group_budget", g.budget as f64),
        (
            "whirl_group_admission_active",
            f64::from(u8::from(g.admission_active)),
        ),
    ] {
        gauge!(name, labels.iter()).set(value);
    }
    for controller in &g.controllers {
        gauge!(
            "whirl_group_controller",
            with("controller", controller.name.to_owned())
        )
        .set(1.0);
    }
    summary(
        [
            "whirl_group_queue_wait_seconds",
            "whirl_group_queue_wait_seconds_count",
            "whirl_group_queue_wait_seconds_bucket",
            "whirl_group_queue_wait_seconds_sum",
        ],
        &labels,
        &g.queue_latency,
    );
    summary(
        [
            "whirl_group_handling_seconds",
            "whirl_group_handling_seconds_count",
            "whirl_group_handling_seconds_bucket",
            "whirl_group_handling_seconds_sum",
        ],
        &labels,
        &g.handling_time,
    );
    for p in &g.principals {
        let labels = with("principal", p.id.to_string());
        counter!("whirl_principal_handled_total", labels.iter()).absolute(p.handled);
        counter!("whirl_principal_rejected_total", labels.iter()).absolute(p.rejected);
    }
}

/// `name{quantile}` gauges and a `count` counter, the shape of a Prometheus summary; and the
/// `bucket{le}` counters and `sum` gauge that, with the same count, make a Prometheus
/// histogram.
fn summary([name, count, bucket, sum]: [&'static str; 4], labels: &[Label], s: &LatencySummary) {
    counter!(count, labels.iter()).absolute(s.samples);
    let bounds = LATENCY_BUCKETS.iter().map(|b| b.as_secs_f64().to_string());
    for (le, n) in bounds
        .zip(s.buckets)
        .chain(std::iter::once(("+Inf".to_owned(), s.samples)))
    {
        let mut with_le = labels.to_vec();
        with_le.push(Label::new("le", le));
        counter!(bucket, with_le).absolute(n);
    }
    gauge!(sum, labels.iter()).set(s.mean.as_secs_f64() * s.samples as f64);
    if s.samples == 0 {
        return;
    }
    for (quantile, value) in [
        ("0.5", s.p50),
        ("0.9", s.p90),
        ("0.99", s.p99),
        ("1", s.max),
    ] {
        let mut with_quantile = labels.to_vec();
        with_quantile.push(Label::new("quantile", quantile));
        gauge!(name, with_quantile).set(value.as_secs_f64());
    }
}

/// Descriptions and units, for exporters that publish them (Prometheus's `# HELP`).
fn describe() {
    describe_gauge!("whirl_live_processes", "Processes alive in the runtime.");
    for (name, what) in [
        (
            "whirl_group_posted_total",
            "Messages offered to a process of the group: admitted or rejected.",
        ),
        (
            "whirl_group_admitted_total",
            "Messages the group's predicate admitted.",
        ),
        (
            "whirl_group_rejected_total",
            "Messages the group's predicate handed back to their senders.",
        ),
        (
            "whirl_group_handled_total",
            "Messages a handler of the group finished with.",
        ),
        (
            "whirl_group_dead_lettered_total",
            "Messages left to terminated processes, given to the dead-letter sink.",
        ),
        (
            "whirl_group_spawned_total",
            "Processes spawned in the group.",
        ),
        (
            "whirl_group_terminated_total",
            "Processes of the group terminated.",
        ),
        (
            "whirl_group_slow_turns_total",
            "Turns that held a worker longer than the group's slow-turn threshold.",
        ),
        (
            "whirl_group_queue_wait_seconds_count",
            "Queue waits measured (sampled turns).",
        ),
        (
            "whirl_group_handling_seconds_count",
            "Handling times measured (sampled turns).",
        ),
        (
            "whirl_group_queue_wait_seconds_bucket",
            "Queue waits measured at most `le` seconds (cumulative).",
        ),
        (
            "whirl_group_handling_seconds_bucket",
            "Handling times measured at most `le` seconds (cumulative).",
        ),
        (
            "whirl_principal_handled_total",
            "Messages handled for the principal in the group.",
        ),
        (
            "whirl_principal_rejected_total",
            "Messages for the principal the group's predicate rejected.",
        ),
    ] {
        describe_counter!(name, what);
    }
    for (name, what) in [
        (
            "whirl_group_queue_length",
            "Messages queued in the group now.",
        ),
        ("whirl_group_threads", "Worker threads of the group now."),
        (
            "whirl_group_threads_min",
            "The least worker threads the group may have.",
        ),
        (
            "whirl_group_threads_max",
            "The most worker threads the group may have.",
        ),
        (
            "whirl_group_blocked_workers",
            "Workers of the group in a slow turn now.",
        ),
        (
            "whirl_group_budget",
            "Messages a process of the group handles per turn.",
        ),
        (
            "whirl_group_admission_active",
            "1 while the group's predicate decides admissions, else 0.",
        ),
        (
            "whirl_group_controller",
            "1 for each concurrency controller of the group.",
        ),
    ] {
        describe_gauge!(name, what);
    }
    describe_gauge!(
        "whirl_group_queue_wait_seconds",
        Unit::Seconds,
        "Time messages waited in an inbox before their handler ran, quantiles since the group \
         was built."
    );
    describe_gauge!(
        "whirl_group_handling_seconds",
        Unit::Seconds,
        "Handler time per message, quantiles since the group was built."
    );
    describe_counter!(
        "whirl_supervisor_restarts_total",
        "Children restarted by the supervisor's strategy."
    );
}
