//! Control: how a group measures itself and how its concurrency is tuned while it runs.
//!
//! * Counters (`counters.rs`): a group's striped message counters ([`MessageCounts`]).
//! * Statistics (`stats.rs`): what [`Group::stats`](crate::Group::stats) and
//!   [`Runtime::stats`](crate::Runtime::stats) report, collected cheaply enough to leave on.
//! * Concurrency controllers (`controller/`): what sizes a group's worker pool and run budget
//!   ([`ConcurrencyController`] and the library: [`AdaptiveConcurrency`],
//!   [`FixedConcurrency`], [`SedaThreadPool`], [`SedaBatching`]).
//! * Latencies (`latency.rs`): a histogram with its exact sum, and the [`LatencySummary`] a
//!   snapshot reports.
//! * The process's use of the machine (`usage.rs`, feature `prometheus`): `ProcessUsage`, what
//!   `/proc/self` says.
//! * Processes (`processes.rs`): what [`Runtime::processes`](crate::Runtime::processes) and
//!   [`Runtime::process_info`](crate::Runtime::process_info) report ([`ProcessInfo`],
//!   [`ProcessDetail`]) and the per-process counters behind them, written once per turn.
//! * `sampling.rs`: what the controller thread remembers between two samples.
//!
//! Layer 3: uses `principal` (statistics per principal) and nothing above. The controller
//! *thread*, which reads groups and applies adjustments, belongs to the `group` layer.

mod controller;
mod counters;
mod latency;
mod processes;
mod sampling;
mod stats;
#[cfg(feature = "prometheus")]
mod usage;

pub use controller::{
    AdaptiveConcurrency, Adjustment, ConcurrencyController, ControllerState, Controls,
    FixedConcurrency, GroupSample, SedaBatching, SedaThreadPool,
};
pub use counters::MessageCounts;
pub(crate) use counters::{Counters, Event};
pub use latency::{LatencySummary, LATENCY_BUCKETS};
pub(crate) use processes::{Activity, FailureLog, Relations, TopN};
pub use processes::{
    FailureRecord, ProcessDetail, ProcessInfo, ProcessQuery, ProcessSort, Supervision, FAILURE_LOG,
};
pub(crate) use sampling::{mean, Entry, Reading};
pub(crate) use stats::{merge, LocalStats, Rejections, SlotStats, RECENT_SLOW_TURNS, SAMPLE_EVERY};
pub use stats::{
    ClassCounts, CpuBudgetStats, GroupStats, PrincipalCounts, RuntimeStats, SlowTurn,
    MAX_REJECTED_PRINCIPALS,
};
#[cfg(feature = "prometheus")]
pub use usage::ProcessUsage;
