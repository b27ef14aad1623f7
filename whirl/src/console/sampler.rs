//! The sampler thread: every interval, a statistics snapshot, the supervision trees and the
//! OpenMetrics text of `/metrics`, folded into the console's [`Model`] and handed to the hub as immutable
//! text. A thread of its own, not a process, because listing a supervisor's children is a
//! blocking call (with a timeout), which a worker must not make.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;

use crate::request::Sender as _;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use prometheus_client::registry::Registry;

use crate::prometheus::Format;

use super::hub::Hub;
use super::messages::{HubMsg, Published};
use super::model::{Model, SupervisorTree, TreeNode};
use crate::supervision::{ChildInfo, ChildKind, SupervisorError};
use crate::{Addr, ProcessId, RuntimeObserver};

/// How long the sampler waits for one supervisor to list its children.
const SUPERVISOR_TIMEOUT: Duration = Duration::from_millis(200);
/// Supervision trees are walked this deep at most.
const MAX_DEPTH: usize = 16;
/// Nodes drawn per tree at most.
const MAX_NODES: usize = 2_000;

/// A supervisor's children, listed without knowing its type.
pub(crate) type ListChildren =
    Box<dyn Fn(Duration) -> Result<Vec<ChildInfo>, SupervisorError> + Send>;

/// A supervision tree's root, as the builder was given it.
pub(crate) struct SupervisorSource {
    pub(crate) name: String,
    pub(crate) id: ProcessId,
    pub(crate) children: ListChildren,
}

/// The running sampler thread; stopping it waits for the sample in progress.
#[derive(Debug)]
pub(crate) struct Sampler {
    /// Never sent on: dropping it wakes the thread and tells it to stop.
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Sampler {
    pub(crate) fn start(
        observer: RuntimeObserver,
        hub: Addr<Hub>,
        interval: Duration,
        supervisors: Vec<SupervisorSource>,
        panels: Vec<String>,
        registry: Registry,
    ) -> std::io::Result<Sampler> {
        let (stop, stopped) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("whirl-console".into())
            .spawn(move || {
                let mut model = Model::new(interval, SystemTime::now(), panels);
                let started = Instant::now();
                loop {
                    let Some(stats) = observer.stats() else {
                        return;
                    };
                    let trees = supervisors.iter().map(tree).collect();
                    let now_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                    model.sample(now_ms, stats, trees, super::node::read());
                    let published = Published {
                        snapshot: Arc::from(model.snapshot_json()),
                        tick: Arc::from(model.tick_json()),
                        metrics: render(&registry, Format::Classic),
                        open_metrics: render(&registry, Format::OpenMetrics),
                    };
                    if hub.post(HubMsg::Publish(published)).is_err() {
                        return;
                    }
                    match stopped.recv_timeout(interval) {
                        Err(RecvTimeoutError::Timeout) => {}
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
            })?;
        Ok(Sampler {
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Stops the thread and waits for it.
    pub(crate) fn stop(mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The console's `/metrics`: the registry encoded in `format`.
fn render(registry: &Registry, format: Format) -> Arc<str> {
    match crate::prometheus::encode(registry, format) {
        Ok(text) => Arc::from(text),
        Err(e) => {
            // Only a collector's own error can fail the encoding.
            tracing::warn!(error = %e, "a metrics collector failed: /metrics is empty");
            Arc::from("")
        }
    }
}

/// Walks one supervision tree, each supervisor asked with a timeout.
fn tree(source: &SupervisorSource) -> SupervisorTree {
    let mut budget = MAX_NODES;
    let mut root = TreeNode {
        id: source.name.clone(),
        kind: "supervisor",
        pid: Some(source.id.to_string()),
        restarts: 0,
        error: None,
        children: Vec::new(),
    };
    match (source.children)(SUPERVISOR_TIMEOUT) {
        Ok(children) => root.children = nodes(&children, 1, &mut budget),
        Err(e) => root.error = Some(e.to_string()),
    }
    SupervisorTree {
        name: source.name.clone(),
        tree: root,
    }
}

fn nodes(children: &[ChildInfo], depth: usize, budget: &mut usize) -> Vec<TreeNode> {
    let mut out = Vec::new();
    for child in children {
        if *budget == 0 {
            break;
        }
        *budget -= 1;
        let mut node = TreeNode {
            id: child.id.clone(),
            kind: match child.kind {
                ChildKind::Supervisor => "supervisor",
                _ => "worker",
            },
            pid: child.pid.map(|p| p.to_string()),
            restarts: child.restarts,
            error: None,
            children: Vec::new(),
        };
        if depth < MAX_DEPTH {
            match child.which_children_timeout(SUPERVISOR_TIMEOUT) {
                Some(Ok(grand)) => node.children = nodes(&grand, depth + 1, budget),
                Some(Err(e)) => node.error = Some(e.to_string()),
                None => {}
            }
        }
        out.push(node);
    }
    out
}
