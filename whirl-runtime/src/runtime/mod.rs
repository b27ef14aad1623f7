//! The runtime: a node with a default group, more groups on demand, names, and orderly
//! shutdown.
//!
//! * `handle.rs`: [`Runtime`] and [`RuntimeBuilder`], a handle on the kernel
//!   (`group/shared.rs`) plus the default group.
//! * `metrics.rs`: recording the statistics through the `metrics` facade (feature `metrics`):
//!   `Runtime::record_metrics`, `Runtime::export_metrics` and its `MetricsExporter`.
//! * `shutdown.rs`: what a shutdown reports ([`ShutdownReport`], [`AbandonedProcess`]).
//! * `signal.rs`: shutting down on SIGINT/SIGTERM, reloading on SIGHUP.
//!
//! Layer 9, the top: uses every layer below.

mod handle;
#[cfg(feature = "metrics")]
mod metrics;
mod panics;
mod shutdown;
#[cfg(unix)]
pub(crate) mod signal;

#[cfg(feature = "metrics")]
pub use self::metrics::MetricsExporter;
pub use handle::{Runtime, RuntimeBuilder, RuntimeObserver};
pub use shutdown::{AbandonedProcess, ShutdownReport};
