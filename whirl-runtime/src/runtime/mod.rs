//! The runtime: a node with a default group, more groups on demand, names, and orderly
//! shutdown.
//!
//! * `handle.rs`: [`Runtime`] and [`RuntimeBuilder`], a handle on the kernel
//!   (`group/shared.rs`) plus the default group.
//! * `exposition.rs`: the OpenMetrics and classic Prometheus text formats (feature
//!   `prometheus`), chosen by the scraper's `Accept` header.
//! * `families.rs`: the group figures both metric exports publish, named and explained once.
//! * `metrics.rs`: recording the statistics through the `metrics` facade (feature `metrics`):
//!   `Runtime::record_metrics`, `Runtime::export_metrics` and its `MetricsExporter`.
//! * `prometheus.rs`: Prometheus exposition through `prometheus-client` (feature `prometheus`):
//!   collectors read at scrape time, re-exported as `whirl::prometheus`.
//! * `shutdown.rs`: what a shutdown reports ([`ShutdownReport`], [`AbandonedProcess`]).
//! * `signal.rs`: shutting down on SIGINT/SIGTERM, reloading on SIGHUP.
//!
//! Layer 9, the top: uses every layer below.

#[cfg(feature = "prometheus")]
mod exposition;
#[cfg(any(feature = "metrics", feature = "prometheus"))]
mod families;
mod handle;
#[cfg(feature = "metrics")]
mod metrics;
mod panics;
#[cfg(feature = "prometheus")]
pub mod prometheus;
mod shutdown;
#[cfg(unix)]
pub(crate) mod signal;

#[cfg(feature = "metrics")]
pub use self::metrics::MetricsExporter;
pub use handle::{Runtime, RuntimeBuilder, RuntimeObserver};
pub use shutdown::{AbandonedProcess, ShutdownReport};
