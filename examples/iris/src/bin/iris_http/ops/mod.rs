//! What makes iris_http operable, as nginx is: the state an operator sees and steers, shared
//! by every process that serves a request.
//!
//! * [`metrics`]: iris_http's counters, gauges and histogram, and the registry `/metrics`
//!   encodes.
//! * [`access_log`]: one JSON line per answer, written off the request path.
//! * [`endpoints`]: `/healthz`, `/readyz` and `/metrics`, answered by the connection itself,
//!   without admission control or a session.
//! * [`Phase`] (here): serving, draining, or past the drain's deadline. The drain itself is
//!   the server's (`server/drain.rs`) and each connection's (`server/connection.rs`).
//! * [`reload`] and [`certs`]: what SIGHUP reloads (the configuration file, the certificate).
//! * [`traces`]: `--trace-file`, each request's trace through OpenTelemetry into a file.
//!
//! [`Ops`] holds one of each, built when the server starts and shared behind an `Arc`.

pub mod access_log;
pub mod certs;
pub mod endpoints;
pub mod metrics;
pub mod reload;
pub mod traces;

use std::sync::atomic::{AtomicU8, Ordering};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;
use whirl::Runtime;

use access_log::Sink;
use metrics::Metrics;

/// Where the server is in its life, as readiness and the drain see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Serving: ready.
    Serving = 0,
    /// Draining: not ready; no new connections; each connection answers what it has, the
    /// next answer with `Connection: close`, and closes.
    Draining = 1,
    /// The drain's deadline has passed: what is still queued is answered 503 and every
    /// connection closes.
    Deadline = 2,
}

/// The shared operational state (see the module documentation).
pub struct Ops {
    pub metrics: Metrics,
    /// What `/metrics` encodes.
    pub registry: Registry,
    pub access_log: Option<Sink>,
    phase: AtomicU8,
}

impl Ops {
    /// The state of a server starting on `rt`, logging to `access_log` if given.
    pub fn new(rt: &Runtime, access_log: Option<Sink>) -> Ops {
        let dropped = access_log
            .as_ref()
            .map_or_else(Counter::default, |sink| sink.dropped().clone());
        let metrics = Metrics::new(dropped);
        let registry = metrics.registry(rt);
        Ops {
            metrics,
            registry,
            access_log,
            phase: AtomicU8::new(Phase::Serving as u8),
        }
    }

    pub fn phase(&self) -> Phase {
        match self.phase.load(Ordering::Acquire) {
            0 => Phase::Serving,
            1 => Phase::Draining,
            _ => Phase::Deadline,
        }
    }

    /// Moves on to `phase` (never back).
    pub fn advance(&self, phase: Phase) {
        self.phase.fetch_max(phase as u8, Ordering::AcqRel);
        if phase >= Phase::Draining {
            self.metrics.draining.set(1);
        }
    }

    /// Whether `/readyz` says ready: serving, not draining.
    pub fn ready(&self) -> bool {
        self.phase() == Phase::Serving
    }
}

impl std::fmt::Debug for Ops {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ops")
            .field("phase", &self.phase())
            .field("access_log", &self.access_log.is_some())
            .finish_non_exhaustive()
    }
}
