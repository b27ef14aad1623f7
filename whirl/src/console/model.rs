//! What the console shows, as data: the JSON of `/api/snapshot` and of each `tick` event
//! (the shapes are documented in `API.md` beside this file), built from the runtime's statistics
//! snapshots by a [`Model`] that remembers what the snapshots alone do not: a history of
//! each group's figures and of the node's memory and CPU (two tiers, `history.rs`), rates
//! between two samples (messages, worker utilisation, CPU), and the controllers' decisions
//! over time.
//!
//! No I/O and no clock here: the sampler passes the time in, so every figure can be tested.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, SystemTime};

use serde::Serialize;

use super::history::{mean, push_capped, Merge, Tiered};
use super::node::NodeReading;
use crate::control::{GroupStats, LatencySummary, MessageCounts, RuntimeStats};

/// Controller decisions kept.
pub(crate) const CONTROLLER_LOG: usize = 200;
/// Dead letters and slow turns listed.
pub(crate) const RECENT: usize = 50;

/// The page's view of the runtime at one sample.
#[derive(Serialize)]
pub(crate) struct Snapshot<'a> {
    version: u32,
    now_ms: u64,
    interval_ms: u64,
    runtime: RuntimeView,
    node: NodeView,
    groups: Vec<GroupView<'a>>,
    controller_log: Vec<&'a Decision>,
    supervisors: &'a [SupervisorTree],
    dead_letters: Recent<'a, DeadLetterView>,
    slow_turns: Recent<'a, SlowTurnView>,
    panels: &'a [String],
}

#[derive(Serialize)]
struct RuntimeView {
    live_processes: usize,
    counts: CountsView,
}

#[derive(Serialize, Clone, Copy)]
struct CountsView {
    posted: u64,
    handled: u64,
    rejected: u64,
    dead_lettered: u64,
    spawned: u64,
    terminated: u64,
    queued: u64,
}

impl From<MessageCounts> for CountsView {
    fn from(c: MessageCounts) -> Self {
        CountsView {
            posted: c.posted,
            handled: c.handled,
            rejected: c.rejected,
            dead_lettered: c.dead_lettered,
            spawned: c.spawned,
            terminated: c.terminated,
            queued: c.queued(),
        }
    }
}

#[derive(Serialize)]
struct LatencyView {
    samples: u64,
    mean_us: u64,
    p50_us: u64,
    p90_us: u64,
    p99_us: u64,
    max_us: u64,
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl From<&LatencySummary> for LatencyView {
    fn from(l: &LatencySummary) -> Self {
        LatencyView {
            samples: l.samples,
            mean_us: micros(l.mean),
            p50_us: micros(l.p50),
            p90_us: micros(l.p90),
            p99_us: micros(l.p99),
            max_us: micros(l.max),
        }
    }
}

#[derive(Serialize)]
struct ControllerView<'a> {
    name: &'a str,
    detail: &'a str,
}

#[derive(Serialize)]
struct PrincipalView {
    id: u64,
    priority: u8,
    class: u16,
    handled: u64,
    rejected: u64,
    handling_time_us: u64,
}

#[derive(Serialize)]
struct GroupView<'a> {
    name: &'a str,
    scheduler: &'a str,
    threads: usize,
    thread_range: [usize; 2],
    budget: usize,
    admission_active: bool,
    slow_turn_threshold_us: Option<u64>,
    slow_turns: u64,
    blocked_workers: usize,
    counts: CountsView,
    queue_length: u64,
    queue_latency: LatencyView,
    handling_time: LatencyView,
    recent_queue_latency: LatencyView,
    recent_handling_time: LatencyView,
    controllers: Vec<ControllerView<'a>>,
    principals: Vec<PrincipalView>,
    /// The share of the group's worker time spent running turns over the last interval
    /// (0 to 1), `None` before the second sample.
    utilisation: Option<f64>,
    history: HistoryView,
    /// One point per `LONG_STEP_MS`, the last half hour.
    history_long: HistoryView,
}

/// The node (this OS process): memory, CPU, and their history.
#[derive(Serialize)]
struct NodeView {
    /// Whether memory and CPU can be read here (Linux).
    supported: bool,
    rss_bytes: Option<u64>,
    /// CPU time used per second of wall time over the last interval, in percent of one core
    /// (above 100 on several cores).
    cpu_percent: Option<f64>,
    threads: Option<u64>,
    history: NodeHistoryView,
    history_long: NodeHistoryView,
}

/// The node's history: parallel series, oldest first.
#[derive(Serialize, Default)]
struct NodeHistoryView {
    t_ms: Vec<u64>,
    rss_bytes: Vec<Option<u64>>,
    cpu_percent: Vec<Option<f64>>,
}

impl NodeHistoryView {
    fn of<'p>(points: impl Iterator<Item = &'p NodePoint>) -> Self {
        let mut h = NodeHistoryView::default();
        for p in points {
            h.t_ms.push(p.t_ms);
            h.rss_bytes.push(p.rss_bytes);
            h.cpu_percent.push(p.cpu_percent);
        }
        h
    }
}

/// One point of the node's history.
#[derive(Clone, Copy, Debug, PartialEq)]
struct NodePoint {
    t_ms: u64,
    rss_bytes: Option<u64>,
    cpu_percent: Option<f64>,
}

impl Merge for NodePoint {
    fn t_ms(&self) -> u64 {
        self.t_ms
    }

    /// The step's peak memory and mean CPU.
    fn merge(points: &[Self]) -> Self {
        NodePoint {
            t_ms: points.last().map_or(0, |p| p.t_ms),
            rss_bytes: points.iter().filter_map(|p| p.rss_bytes).max(),
            cpu_percent: mean(points.iter().filter_map(|p| p.cpu_percent)),
        }
    }
}

/// One group's history: parallel series, oldest first.
#[derive(Serialize, Default, Clone)]
struct HistoryView {
    t_ms: Vec<u64>,
    queue_length: Vec<u64>,
    admitted_per_s: Vec<f64>,
    rejected_per_s: Vec<f64>,
    handled_per_s: Vec<f64>,
    queue_p50_us: Vec<u64>,
    queue_p99_us: Vec<u64>,
    handling_p50_us: Vec<u64>,
    handling_p99_us: Vec<u64>,
    threads: Vec<usize>,
    busy: Vec<Option<f64>>,
}

/// One point of a group's history.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Point {
    t_ms: u64,
    queue_length: u64,
    admitted_per_s: f64,
    rejected_per_s: f64,
    handled_per_s: f64,
    queue_p50_us: u64,
    queue_p99_us: u64,
    handling_p50_us: u64,
    handling_p99_us: u64,
    threads: usize,
    /// Worker utilisation over the interval before it (0 to 1).
    busy: Option<f64>,
}

impl Merge for Point {
    fn t_ms(&self) -> u64 {
        self.t_ms
    }

    /// The step's peaks (queue length, p99s, threads) and means (rates, p50s, utilisation):
    /// a burst inside a step still shows in the long history.
    fn merge(points: &[Self]) -> Self {
        let avg = |f: fn(&Point) -> f64| mean(points.iter().map(f)).unwrap_or(0.0);
        let max = |f: fn(&Point) -> u64| points.iter().map(f).max().unwrap_or(0);
        Point {
            t_ms: points.last().map_or(0, |p| p.t_ms),
            queue_length: max(|p| p.queue_length),
            admitted_per_s: avg(|p| p.admitted_per_s),
            rejected_per_s: avg(|p| p.rejected_per_s),
            handled_per_s: avg(|p| p.handled_per_s),
            queue_p50_us: avg(|p| p.queue_p50_us as f64).round() as u64,
            queue_p99_us: max(|p| p.queue_p99_us),
            handling_p50_us: avg(|p| p.handling_p50_us as f64).round() as u64,
            handling_p99_us: max(|p| p.handling_p99_us),
            threads: points.iter().map(|p| p.threads).max().unwrap_or(0),
            busy: mean(points.iter().filter_map(|p| p.busy)),
        }
    }
}

impl HistoryView {
    fn of<'p>(points: impl Iterator<Item = &'p Point>) -> Self {
        let mut h = HistoryView::default();
        for p in points {
            h.t_ms.push(p.t_ms);
            h.queue_length.push(p.queue_length);
            h.admitted_per_s.push(p.admitted_per_s);
            h.rejected_per_s.push(p.rejected_per_s);
            h.handled_per_s.push(p.handled_per_s);
            h.queue_p50_us.push(p.queue_p50_us);
            h.queue_p99_us.push(p.queue_p99_us);
            h.handling_p50_us.push(p.handling_p50_us);
            h.handling_p99_us.push(p.handling_p99_us);
            h.threads.push(p.threads);
            h.busy.push(p.busy);
        }
        h
    }
}

/// A change in a controller's description.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub(crate) struct Decision {
    t_ms: u64,
    group: String,
    controller: String,
    detail: String,
}

#[derive(Serialize)]
struct Recent<'a, T> {
    total: u64,
    recent: Vec<&'a T>,
}

#[derive(Serialize, Clone, Debug)]
struct DeadLetterView {
    t_ms: u64,
    to: String,
    #[serde(rename = "type")]
    message_type: &'static str,
    reason: String,
}

#[derive(Serialize, Clone, Debug)]
struct SlowTurnView {
    t_ms: u64,
    group: String,
    process: String,
    message_type: Option<&'static str>,
    held_us: u64,
}

/// A supervision tree as the page draws it.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub(crate) struct SupervisorTree {
    /// The name the console was given for the root.
    pub(crate) name: String,
    /// The root and its descendants.
    pub(crate) tree: TreeNode,
}

/// A supervisor or worker in a tree.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub(crate) struct TreeNode {
    pub(crate) id: String,
    /// `"supervisor"` or `"worker"`.
    pub(crate) kind: &'static str,
    /// The running incarnation, or `None` if stopped.
    pub(crate) pid: Option<String>,
    pub(crate) restarts: u64,
    /// Why the children are missing, when they could not be listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    pub(crate) children: Vec<TreeNode>,
}

/// What one group looked like at the previous sample, for rates.
struct Previous {
    at_ms: u64,
    counts: MessageCounts,
    idle: Duration,
}

/// The console's memory between samples. See the [module docs](self).
pub(crate) struct Model {
    interval: Duration,
    /// The wall-clock time `t_ms` counts from.
    epoch: SystemTime,
    now_ms: u64,
    stats: Option<RuntimeStats>,
    history: HashMap<String, Tiered<Point>>,
    node: NodeReading,
    node_history: Tiered<NodePoint>,
    /// The previous sample's time and CPU seconds, for the CPU rate.
    previous_cpu: Option<(u64, f64)>,
    previous: HashMap<String, Previous>,
    /// Each controller's last description, by (group, controller).
    controllers: HashMap<(String, String), String>,
    log: VecDeque<Decision>,
    /// Index in `log` of the first decision of the latest sample.
    log_new_from: usize,
    dead_letters: VecDeque<DeadLetterView>,
    last_dead_letter: Option<SystemTime>,
    slow_turns: VecDeque<SlowTurnView>,
    last_slow_turn: HashMap<String, SystemTime>,
    supervisors: Vec<SupervisorTree>,
    panels: Vec<String>,
}

impl Model {
    /// A model sampled every `interval`, whose times count from `epoch`, serving `panels`.
    pub(crate) fn new(interval: Duration, epoch: SystemTime, panels: Vec<String>) -> Self {
        Model {
            interval,
            epoch,
            now_ms: 0,
            stats: None,
            history: HashMap::new(),
            node: NodeReading::default(),
            node_history: Tiered::default(),
            previous_cpu: None,
            previous: HashMap::new(),
            controllers: HashMap::new(),
            log: VecDeque::new(),
            log_new_from: 0,
            dead_letters: VecDeque::new(),
            last_dead_letter: None,
            slow_turns: VecDeque::new(),
            last_slow_turn: HashMap::new(),
            supervisors: Vec::new(),
            panels,
        }
    }

    fn ms_since_epoch(&self, at: SystemTime) -> u64 {
        at.duration_since(self.epoch)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    /// Takes in a snapshot made `now_ms` after the epoch, and the supervision trees and the
    /// node's reading as of now.
    pub(crate) fn sample(
        &mut self,
        now_ms: u64,
        stats: RuntimeStats,
        supervisors: Vec<SupervisorTree>,
        node: NodeReading,
    ) {
        self.now_ms = now_ms;
        self.sample_node(now_ms, node);
        self.log_new_from = self.log.len();
        for g in &stats.groups {
            self.sample_group(now_ms, g);
        }
        for letter in &stats.recent_dead_letters {
            if self.last_dead_letter.is_some_and(|last| letter.at <= last) {
                continue;
            }
            let view = DeadLetterView {
                t_ms: self.ms_since_epoch(letter.at),
                to: letter.to.to_string(),
                message_type: letter.message_type,
                reason: letter.reason.to_string(),
            };
            push_capped(&mut self.dead_letters, view, RECENT);
        }
        if let Some(last) = stats.recent_dead_letters.last() {
            self.last_dead_letter = Some(last.at);
        }
        self.supervisors = supervisors;
        self.stats = Some(stats);
    }

    fn sample_node(&mut self, now_ms: u64, node: NodeReading) {
        let cpu_percent = match (self.previous_cpu, node.cpu_seconds) {
            (Some((at, before)), Some(now)) if now_ms > at => {
                let wall = (now_ms - at) as f64 / 1000.0;
                Some(((now - before).max(0.0) / wall * 100.0 * 10.0).round() / 10.0)
            }
            _ => None,
        };
        self.previous_cpu = node.cpu_seconds.map(|s| (now_ms, s));
        self.node = node;
        self.node_history.push(NodePoint {
            t_ms: now_ms,
            rss_bytes: node.rss_bytes,
            cpu_percent,
        });
    }

    fn sample_group(&mut self, now_ms: u64, g: &GroupStats) {
        let counts = g.counts;
        let point = match self.previous.get(&g.name) {
            Some(prev) if now_ms > prev.at_ms => {
                let secs = (now_ms - prev.at_ms) as f64 / 1000.0;
                // Worker time in the interval, less the time workers spent idle.
                let capacity = secs * g.threads.max(1) as f64;
                let idle = g.idle_time.saturating_sub(prev.idle).as_secs_f64();
                let busy = (1.0 - idle / capacity).clamp(0.0, 1.0);
                let rate = |now: u64, before: u64| now.saturating_sub(before) as f64 / secs;
                let admitted = |c: &MessageCounts| c.posted.saturating_sub(c.rejected);
                Point {
                    t_ms: now_ms,
                    queue_length: g.queue_length,
                    admitted_per_s: rate(admitted(&counts), admitted(&prev.counts)),
                    rejected_per_s: rate(counts.rejected, prev.counts.rejected),
                    handled_per_s: rate(counts.handled, prev.counts.handled),
                    queue_p50_us: micros(g.recent_queue_latency.p50),
                    queue_p99_us: micros(g.recent_queue_latency.p99),
                    handling_p50_us: micros(g.recent_handling_time.p50),
                    handling_p99_us: micros(g.recent_handling_time.p99),
                    threads: g.threads,
                    busy: Some((busy * 1000.0).round() / 1000.0),
                }
            }
            _ => Point {
                t_ms: now_ms,
                queue_length: g.queue_length,
                admitted_per_s: 0.0,
                rejected_per_s: 0.0,
                handled_per_s: 0.0,
                queue_p50_us: micros(g.recent_queue_latency.p50),
                queue_p99_us: micros(g.recent_queue_latency.p99),
                handling_p50_us: micros(g.recent_handling_time.p50),
                handling_p99_us: micros(g.recent_handling_time.p99),
                threads: g.threads,
                busy: None,
            },
        };
        self.previous.insert(
            g.name.clone(),
            Previous {
                at_ms: now_ms,
                counts,
                idle: g.idle_time,
            },
        );
        self.history.entry(g.name.clone()).or_default().push(point);
        for c in &g.controllers {
            let key = (g.name.clone(), c.name.to_owned());
            if self.controllers.get(&key) == Some(&c.detail) {
                continue;
            }
            self.controllers.insert(key, c.detail.clone());
            if self.log.len() == CONTROLLER_LOG {
                self.log.pop_front();
                self.log_new_from = self.log_new_from.saturating_sub(1);
            }
            self.log.push_back(Decision {
                t_ms: now_ms,
                group: g.name.clone(),
                controller: c.name.to_owned(),
                detail: c.detail.clone(),
            });
        }
        let last = self.last_slow_turn.get(&g.name).copied();
        for turn in &g.recent_slow_turns {
            if last.is_some_and(|last| turn.seen_at <= last) {
                continue;
            }
            let view = SlowTurnView {
                t_ms: self.ms_since_epoch(turn.seen_at),
                group: g.name.clone(),
                process: turn.process.to_string(),
                message_type: turn.message_type,
                held_us: micros(turn.held),
            };
            push_capped(&mut self.slow_turns, view, RECENT);
        }
        if let Some(turn) = g.recent_slow_turns.last() {
            self.last_slow_turn.insert(g.name.clone(), turn.seen_at);
        }
    }

    /// The JSON of `/api/snapshot`: everything, with the whole history.
    pub(crate) fn snapshot_json(&self) -> String {
        self.json(false)
    }

    /// The JSON of a `tick` event: the latest point of each history and the controller
    /// decisions of the latest sample only.
    pub(crate) fn tick_json(&self) -> String {
        self.json(true)
    }

    fn json(&self, tick: bool) -> String {
        let (live_processes, counts, group_stats) = match &self.stats {
            Some(s) => (s.live_processes, s.counts, &s.groups[..]),
            None => (0, MessageCounts::default(), &[][..]),
        };
        let groups = group_stats
            .iter()
            .map(|g| {
                let tiers = self.history.get(&g.name);
                let (history, history_long) = match tiers {
                    Some(t) if tick => (
                        HistoryView::of(t.latest().into_iter()),
                        HistoryView::of(t.long_added().into_iter()),
                    ),
                    Some(t) => (HistoryView::of(t.fine()), HistoryView::of(t.long())),
                    None => (HistoryView::default(), HistoryView::default()),
                };
                let utilisation = tiers.and_then(|t| t.latest()).and_then(|p| p.busy);
                let mut view = group_view(g, history, history_long);
                view.utilisation = utilisation;
                view
            })
            .collect();
        let log_from = if tick { self.log_new_from } else { 0 };
        let node = &self.node_history;
        let (node_fine, node_long) = if tick {
            (
                NodeHistoryView::of(node.latest().into_iter()),
                NodeHistoryView::of(node.long_added().into_iter()),
            )
        } else {
            (
                NodeHistoryView::of(node.fine()),
                NodeHistoryView::of(node.long()),
            )
        };
        let snapshot = Snapshot {
            version: 1,
            now_ms: self.now_ms,
            interval_ms: u64::try_from(self.interval.as_millis()).unwrap_or(u64::MAX),
            runtime: RuntimeView {
                live_processes,
                counts: counts.into(),
            },
            node: NodeView {
                supported: self.node.rss_bytes.is_some() || self.node.cpu_seconds.is_some(),
                rss_bytes: self.node.rss_bytes,
                cpu_percent: node.latest().and_then(|p| p.cpu_percent),
                threads: self.node.threads,
                history: node_fine,
                history_long: node_long,
            },
            groups,
            controller_log: self.log.iter().skip(log_from).collect(),
            supervisors: &self.supervisors,
            dead_letters: Recent {
                total: counts.dead_lettered,
                recent: self.dead_letters.iter().collect(),
            },
            slow_turns: Recent {
                total: group_stats.iter().map(|g| g.slow_turns).sum(),
                recent: self.slow_turns.iter().collect(),
            },
            panels: &self.panels,
        };
        // Serializing plain structs of numbers and strings cannot fail.
        serde_json::to_string(&snapshot).unwrap_or_else(|_| "{}".to_owned())
    }
}

fn group_view(g: &GroupStats, history: HistoryView, history_long: HistoryView) -> GroupView<'_> {
    GroupView {
        name: &g.name,
        scheduler: &g.scheduler,
        threads: g.threads,
        thread_range: [g.thread_range.0, g.thread_range.1],
        budget: g.budget,
        admission_active: g.admission_active,
        slow_turn_threshold_us: g.slow_turn_threshold.map(micros),
        slow_turns: g.slow_turns,
        blocked_workers: g.blocked_workers,
        counts: g.counts.into(),
        queue_length: g.queue_length,
        queue_latency: (&g.queue_latency).into(),
        handling_time: (&g.handling_time).into(),
        recent_queue_latency: (&g.recent_queue_latency).into(),
        recent_handling_time: (&g.recent_handling_time).into(),
        controllers: g
            .controllers
            .iter()
            .map(|c| ControllerView {
                name: c.name,
                detail: &c.detail,
            })
            .collect(),
        principals: g
            .principals
            .iter()
            .take(50)
            .map(|p| PrincipalView {
                id: p.id,
                priority: p.priority,
                class: p.class,
                handled: p.handled,
                rejected: p.rejected,
                handling_time_us: micros(p.handling_time),
            })
            .collect(),
        utilisation: None,
        history,
        history_long,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(t_ms: u64, queue_length: u64, handled_per_s: f64, busy: Option<f64>) -> Point {
        Point {
            t_ms,
            queue_length,
            admitted_per_s: handled_per_s,
            rejected_per_s: 0.0,
            handled_per_s,
            queue_p50_us: 10,
            queue_p99_us: queue_length,
            handling_p50_us: 20,
            handling_p99_us: 30,
            threads: 2,
            busy,
        }
    }

    #[test]
    fn a_long_point_keeps_peaks_and_averages_rates() {
        let merged = Point::merge(&[
            point(500, 4, 100.0, None),
            point(1_000, 9, 300.0, Some(0.2)),
            point(1_500, 1, 200.0, Some(0.6)),
        ]);
        assert_eq!(merged.t_ms, 1_500);
        assert_eq!(merged.queue_length, 9);
        assert_eq!(merged.queue_p99_us, 9);
        assert_eq!(merged.handled_per_s, 200.0);
        assert_eq!(merged.busy.map(|b| (b * 10.0).round()), Some(4.0));
        let node = NodePoint::merge(&[
            NodePoint {
                t_ms: 1,
                rss_bytes: Some(10),
                cpu_percent: None,
            },
            NodePoint {
                t_ms: 2,
                rss_bytes: Some(30),
                cpu_percent: Some(50.0),
            },
        ]);
        assert_eq!(
            (node.t_ms, node.rss_bytes, node.cpu_percent),
            (2, Some(30), Some(50.0))
        );
    }

    #[test]
    fn cpu_is_a_rate_between_samples() {
        let mut model = Model::new(Duration::from_millis(500), SystemTime::now(), Vec::new());
        let reading = |cpu: f64| NodeReading {
            rss_bytes: Some(1 << 20),
            cpu_seconds: Some(cpu),
            threads: Some(3),
        };
        model.sample_node(1_000, reading(2.0));
        assert_eq!(
            model.node_history.latest().and_then(|p| p.cpu_percent),
            None
        );
        // 0.75 s of CPU in 0.5 s of wall time: one and a half cores.
        model.sample_node(1_500, reading(2.75));
        assert_eq!(
            model.node_history.latest().and_then(|p| p.cpu_percent),
            Some(150.0)
        );
        // Not on this OS: nothing to show, no rate.
        model.sample_node(2_000, NodeReading::default());
        assert_eq!(
            model.node_history.latest().and_then(|p| p.cpu_percent),
            None
        );
        let json: serde_json::Value =
            serde_json::from_str(&model.snapshot_json()).expect("the snapshot is JSON");
        assert_eq!(json["node"]["supported"], false);
        assert_eq!(json["node"]["history"]["cpu_percent"][1], 150.0);
    }
}
