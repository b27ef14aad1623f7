//! Prometheus exposition through [`prometheus_client`] (feature `prometheus`): collectors read
//! at scrape time, so a scrape sees the runtime as it is and nothing is recorded between
//! scrapes.
//!
//! * [`RuntimeCollector`]: one [`Runtime::stats`] snapshot per scrape, encoded as counters,
//!   gauges and real histograms (one family each, `# TYPE histogram`, `_bucket`/`_sum`/`_count`,
//!   sums that only grow: [`LatencySummary::sum`] is kept exactly).
//! * [`ProcessCollector`]: the standard `process_*` metrics ([`ProcessUsage`]) and
//!   `whirl_build_info`.
//! * [`register`]: both, into a [`Registry`] (the one call most programs need).
//! * [`encode`] in the [`Format`] the scraper asked for ([`Format::negotiate`]): OpenMetrics
//!   for Prometheus, the classic text format for `promtool`, `curl` and older scrapers.
//!
//! | metric | type | labels | what |
//! |---|---|---|---|
//! | `whirl_build_info` | info | `version` | the whirl version serving |
//! | `whirl_live_processes` | gauge | | processes alive in the runtime |
//! | `whirl_group_posted_total` | counter | `group` | messages offered to a process: admitted or rejected |
//! | `whirl_group_admitted_total` | counter | `group` | messages the predicate admitted |
//! | `whirl_group_rejected_total` | counter | `group` | messages the predicate handed back |
//! | `whirl_group_handled_total` | counter | `group` | messages a handler finished with |
//! | `whirl_group_dead_lettered_total` | counter | `group` | messages given to the dead-letter sink |
//! | `whirl_group_spawned_total`, `whirl_group_terminated_total` | counter | `group` | processes spawned, terminated |
//! | `whirl_group_slow_turns_total` | counter | `group` | turns that held a worker past the slow-turn threshold |
//! | `whirl_group_idle_seconds_total` | counter | `group` | time the group's workers waited for work (utilisation is `1 - rate(idle) / threads`) |
//! | `whirl_group_queue_length` | gauge | `group` | messages queued now |
//! | `whirl_group_threads`, `whirl_group_threads_min`, `whirl_group_threads_max` | gauge | `group` | worker threads now, and the range they may move in |
//! | `whirl_group_blocked_workers` | gauge | `group` | workers in a slow turn now |
//! | `whirl_group_budget` | gauge | `group` | messages a process handles per turn |
//! | `whirl_group_admission_active` | gauge | `group` | 1 while the predicate decides admissions |
//! | `whirl_group_controller` | gauge | `group`, `controller` | 1 per concurrency controller of the group |
//! | `whirl_group_queue_wait_seconds` | histogram | `group` | time a message of a sampled turn waited in its inbox |
//! | `whirl_group_handling_seconds` | histogram | `group` | handler time per message of a sampled turn |
//! | `whirl_group_lock_wait_seconds` | histogram | `group` | lock waits handlers reported (`Ctx::lock_timed`) |
//! | `whirl_group_recent_queue_wait_seconds`, `whirl_group_recent_handling_seconds` | gauge | `group`, `stat` | over the last one to two seconds: `stat` is `p50`, `p90`, `p99` or `max` (what an alert on a group's latency wants; `quantile` is a label only summaries may have) |
//! | `whirl_class_handled_total`, `whirl_class_rejected_total` | counter | `group`, `class`, `priority` | messages handled and rejected for the principals of a class and priority |
//! | `whirl_class_handling_seconds_total` | counter | `group`, `class`, `priority` | handler time spent for them |
//! | `whirl_principal_handled_total`, `whirl_principal_rejected_total` | counter | `group`, `principal` | per principal: only with [`RuntimeCollector::per_principal`] |
//! | `whirl_supervisor_restarts_total` | counter | `supervisor` | children restarted by the supervisor's strategy |
//! | `process_cpu_seconds_total`, `process_resident_memory_bytes`, `process_virtual_memory_bytes`, `process_open_fds`, `process_max_fds`, `process_threads`, `process_start_time_seconds` | | | as every Prometheus client library exports them (Linux) |
//!
//! The histograms count *observations*: the messages of sampled turns (see
//! [`control`](crate::control): one turn in 64 per worker, every turn at low volume), so their
//! `_count` is not the number of messages handled (that is `whirl_group_handled_total`), and
//! `rate(_sum) / rate(_count)` is the mean of the sampled messages, which the buckets'
//! quantiles agree with. Their buckets are [`LATENCY_BUCKETS`], 100 µs to 10 minutes.
//!
//! Labels are bounded: groups, classes and priorities, controllers and supervisors are few by
//! construction; principals are counted per class unless a collector is asked for one series
//! per principal (a server that makes a principal per session must not).
//!
//! ```
//! use prometheus_client::registry::Registry;
//! use whirl::Runtime;
//!
//! let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
//! let mut registry = Registry::default();
//! whirl::prometheus::register(&mut registry, &rt);
//! let accept = None; // A request's `Accept` header: curl sends `*/*`.
//! let format = whirl::prometheus::Format::negotiate(accept);
//! let text = whirl::prometheus::encode(&registry, format).expect("encodes");
//! assert!(text.contains("# TYPE whirl_group_handling_seconds histogram"));
//! assert!(text.contains("# TYPE whirl_group_handled_total counter"));
//! assert!(text.contains("whirl_group_handled_total{group=\"default\"}"));
//! ```

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

pub use super::exposition::{encode, Format};
use super::families::{GROUP_COUNTERS, GROUP_GAUGES};
use super::handle::{Runtime, RuntimeObserver};
use crate::control::{GroupStats, LatencySummary, ProcessUsage, RuntimeStats, LATENCY_BUCKETS};
use crate::supervision::restart_counts;

/// Registers a [`RuntimeCollector`] for `runtime` and a [`ProcessCollector`] in `registry`:
/// register once per registry (a second runtime gets a `RuntimeCollector` of its own, with
/// distinct group names).
pub fn register(registry: &mut Registry, runtime: &Runtime) {
    registry.register_collector(Box::new(RuntimeCollector::new(runtime)));
    registry.register_collector(Box::new(ProcessCollector));
}

/// A runtime's statistics at scrape time (see the [module docs](self) for the metrics). Holds
/// the runtime weakly: once it shuts down, the collector encodes nothing.
#[derive(Clone, Debug)]
pub struct RuntimeCollector {
    observer: RuntimeObserver,
    per_principal: bool,
}

impl RuntimeCollector {
    /// A collector of `runtime`'s statistics, counting principals per class.
    pub fn new(runtime: &Runtime) -> Self {
        RuntimeCollector {
            observer: runtime.observer(),
            per_principal: false,
        }
    }

    /// Whether to export one series per principal as well (`whirl_principal_*`), for the
    /// principals each group's statistics still hold (its busiest): for programs whose
    /// principals are a few tenants, never one per session.
    pub fn per_principal(mut self, yes: bool) -> Self {
        self.per_principal = yes;
        self
    }
}

impl Collector for RuntimeCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let Some(stats) = self.observer.stats() else {
            return Ok(());
        };
        encode_runtime(&mut encoder, &stats, self.per_principal)?;
        encode_restarts(&mut encoder)
    }
}

/// The process's use of the machine (`process_*`, from [`ProcessUsage`]; nothing where the
/// operating system does not offer it) and `whirl_build_info`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        encoder
            .encode_descriptor(
                "whirl_build",
                "The whirl version serving.",
                None,
                MetricType::Info,
            )?
            .encode_info(&[("version", env!("CARGO_PKG_VERSION"))])?;
        let Some(usage) = ProcessUsage::now() else {
            return Ok(());
        };
        counter(
            &mut encoder,
            "process_cpu",
            "Total user and system CPU time spent in seconds.",
            Some(&Unit::Seconds),
            usage.cpu.as_secs_f64(),
        )?;
        for (name, help, unit, value) in [
            (
                "process_resident_memory",
                "Resident memory size in bytes.",
                Some(Unit::Bytes),
                usage.resident_bytes as f64,
            ),
            (
                "process_virtual_memory",
                "Virtual memory size in bytes.",
                Some(Unit::Bytes),
                usage.virtual_bytes as f64,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors.",
                None,
                usage.open_fds as f64,
            ),
            (
                "process_threads",
                "Number of OS threads in the process.",
                None,
                usage.threads as f64,
            ),
            (
                "process_start_time",
                "Start time of the process since unix epoch in seconds.",
                Some(Unit::Seconds),
                usage.start_time_seconds,
            ),
        ] {
            encoder
                .encode_descriptor(name, help, unit.as_ref(), MetricType::Gauge)?
                .encode_gauge(&value)?;
        }
        if let Some(max) = usage.max_fds {
            encoder
                .encode_descriptor(
                    "process_max_fds",
                    "Maximum number of open file descriptors.",
                    None,
                    MetricType::Gauge,
                )?
                .encode_gauge(&max)?;
        }
        Ok(())
    }
}

/// A counter with no labels.
fn counter(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    value: f64,
) -> Result<(), fmt::Error> {
    encoder
        .encode_descriptor(name, help, unit, MetricType::Counter)?
        .encode_counter::<NoLabelSet, _, f64>(&value, None)
}

/// A latency of a group.
type Latency = fn(&GroupStats) -> &LatencySummary;

fn encode_runtime(
    encoder: &mut DescriptorEncoder,
    stats: &RuntimeStats,
    per_principal: bool,
) -> Result<(), fmt::Error> {
    encoder
        .encode_descriptor(
            "whirl_live_processes",
            "Processes alive in the runtime.",
            None,
            MetricType::Gauge,
        )?
        .encode_gauge(&(stats.live_processes as f64))?;
    let groups = &stats.groups;
    for (name, help, figure) in GROUP_COUNTERS {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
        for g in groups {
            per_group(&mut family, g, |mut m| {
                m.encode_counter::<NoLabelSet, _, u64>(&figure(g), None)
            })?;
        }
    }
    let mut idle = encoder.encode_descriptor(
        "whirl_group_idle",
        "Time the group's workers spent waiting for work.",
        Some(&Unit::Seconds),
        MetricType::Counter,
    )?;
    for g in groups {
        per_group(&mut idle, g, |mut m| {
            m.encode_counter::<NoLabelSet, _, f64>(&g.idle_time.as_secs_f64(), None)
        })?;
    }
    for (name, help, figure) in GROUP_GAUGES {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
        for g in groups {
            per_group(&mut family, g, |mut m| m.encode_gauge(&figure(g)))?;
        }
    }
    let mut controllers = encoder.encode_descriptor(
        "whirl_group_controller",
        "1 for each concurrency controller of the group.",
        None,
        MetricType::Gauge,
    )?;
    for g in groups {
        for c in &g.controllers {
            controllers
                .encode_family(&[("group", g.name.as_str()), ("controller", c.name)])?
                .encode_gauge(&1.0)?;
        }
    }
    encode_latencies(encoder, groups)?;
    encode_classes(encoder, groups)?;
    if per_principal {
        encode_principals(encoder, groups)?;
    }
    Ok(())
}

/// Encodes `g`'s sample of `family`, labelled with the group's name.
fn per_group(
    family: &mut MetricEncoder<'_>,
    g: &GroupStats,
    sample: impl FnOnce(MetricEncoder<'_>) -> Result<(), fmt::Error>,
) -> Result<(), fmt::Error> {
    sample(family.encode_family(&[("group", g.name.as_str())])?)
}

fn encode_latencies(
    encoder: &mut DescriptorEncoder,
    groups: &[GroupStats],
) -> Result<(), fmt::Error> {
    let histograms: [(&str, &str, Latency); 3] = [
        (
            "whirl_group_queue_wait",
            "Time a message of a sampled turn waited in its inbox before its handler ran.",
            |g| &g.queue_latency,
        ),
        (
            "whirl_group_handling",
            "Handler time per message of a sampled turn.",
            |g| &g.handling_time,
        ),
        (
            "whirl_group_lock_wait",
            "Lock waits handlers of the group reported.",
            |g| &g.lock_latency,
        ),
    ];
    for (name, help, latency) in histograms {
        let mut family =
            encoder.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Histogram)?;
        for g in groups {
            let s = latency(g);
            per_group(&mut family, g, |mut m| {
                m.encode_histogram::<NoLabelSet>(s.sum.as_secs_f64(), s.samples, &buckets(s), None)
            })?;
        }
    }
    let recent: [(&str, &str, Latency); 2] = [
        (
            "whirl_group_recent_queue_wait",
            "Queue wait over the last one to two seconds: p50, p90, p99 and max.",
            |g| &g.recent_queue_latency,
        ),
        (
            "whirl_group_recent_handling",
            "Handler time per message over the last one to two seconds: p50, p90, p99 and max.",
            |g| &g.recent_handling_time,
        ),
    ];
    for (name, help, latency) in recent {
        let mut family =
            encoder.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Gauge)?;
        for g in groups {
            let s = latency(g);
            if s.samples == 0 {
                continue;
            }
            for (stat, value) in [
                ("p50", s.p50),
                ("p90", s.p90),
                ("p99", s.p99),
                ("max", s.max),
            ] {
                family
                    .encode_family(&[("group", g.name.as_str()), ("stat", stat)])?
                    .encode_gauge(&value.as_secs_f64())?;
            }
        }
    }
    Ok(())
}

/// The summary's buckets as `prometheus_client` takes them: per bucket, not cumulative, the
/// last one `+Inf` (`f64::MAX`).
fn buckets(s: &LatencySummary) -> Vec<(f64, u64)> {
    let mut below = 0;
    let mut out: Vec<(f64, u64)> = LATENCY_BUCKETS
        .iter()
        .zip(s.buckets)
        .map(|(bound, cumulative)| {
            let here = cumulative.saturating_sub(below);
            below = below.max(cumulative);
            (bound.as_secs_f64(), here)
        })
        .collect();
    out.push((f64::MAX, s.samples.saturating_sub(below)));
    out
}

fn encode_classes(
    encoder: &mut DescriptorEncoder,
    groups: &[GroupStats],
) -> Result<(), fmt::Error> {
    type ClassFigure = fn(&crate::control::ClassCounts) -> f64;
    let families: [(&str, &str, Option<Unit>, ClassFigure); 3] = [
        (
            "whirl_class_handled",
            "Messages handled in the group for the principals of a class and priority.",
            None,
            |c| c.handled as f64,
        ),
        (
            "whirl_class_rejected",
            "Messages for the principals of a class and priority the group's predicate rejected.",
            None,
            |c| c.rejected as f64,
        ),
        (
            "whirl_class_handling",
            "Handler time the group spent for the principals of a class and priority.",
            Some(Unit::Seconds),
            |c| c.handling_time.as_secs_f64(),
        ),
    ];
    for (name, help, unit, figure) in families {
        let mut family =
            encoder.encode_descriptor(name, help, unit.as_ref(), MetricType::Counter)?;
        for g in groups {
            for c in &g.classes {
                let (class, priority) = (c.class.to_string(), c.priority.to_string());
                family
                    .encode_family(&[
                        ("group", g.name.as_str()),
                        ("class", class.as_str()),
                        ("priority", priority.as_str()),
                    ])?
                    .encode_counter::<NoLabelSet, _, f64>(&figure(c), None)?;
            }
        }
    }
    Ok(())
}

fn encode_principals(
    encoder: &mut DescriptorEncoder,
    groups: &[GroupStats],
) -> Result<(), fmt::Error> {
    type PrincipalFigure = fn(&crate::control::PrincipalCounts) -> u64;
    let families: [(&str, &str, PrincipalFigure); 2] = [
        (
            "whirl_principal_handled",
            "Messages handled for the principal in the group.",
            |p| p.handled,
        ),
        (
            "whirl_principal_rejected",
            "Messages for the principal the group's predicate rejected.",
            |p| p.rejected,
        ),
    ];
    for (name, help, figure) in families {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
        for g in groups {
            for p in &g.principals {
                let id = p.id.to_string();
                family
                    .encode_family(&[("group", g.name.as_str()), ("principal", id.as_str())])?
                    .encode_counter::<NoLabelSet, _, u64>(&figure(p), None)?;
            }
        }
    }
    Ok(())
}

fn encode_restarts(encoder: &mut DescriptorEncoder) -> Result<(), fmt::Error> {
    let mut family = encoder.encode_descriptor(
        "whirl_supervisor_restarts",
        "Children restarted by the supervisor's strategy.",
        None,
        MetricType::Counter,
    )?;
    for (supervisor, restarts) in restart_counts() {
        family
            .encode_family(&[("supervisor", &*supervisor)])?
            .encode_counter::<NoLabelSet, _, u64>(&restarts, None)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_per_bucket_and_end_at_infinity() {
        let mut s = LatencySummary {
            samples: 10,
            ..LatencySummary::default()
        };
        for (i, b) in s.buckets.iter_mut().enumerate() {
            *b = match i {
                0 => 2,
                1..=3 => 5,
                _ => 7,
            };
        }
        let b = buckets(&s);
        assert_eq!(b.len(), LATENCY_BUCKETS.len() + 1);
        assert_eq!(b[0], (0.0001, 2));
        assert_eq!(b[1].1, 3);
        assert_eq!(b[4].1, 2);
        assert_eq!(b.iter().map(|(_, n)| n).sum::<u64>(), 10);
        assert_eq!(b[LATENCY_BUCKETS.len()], (f64::MAX, 3));
    }
}
