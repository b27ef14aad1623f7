//! Observability: what a supervisor reports, to a user sink and to `tracing`, and (feature
//! `metrics`) its restarts to the `metrics` facade, as `whirl_supervisor_restarts_total`
//! labelled with the supervisor's name: counted here, as they happen, because restarts are
//! rare and no snapshot holds them.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use crate::lifecycle::quiet::Quiet;
use crate::lifecycle::{ExitReason, ProcessId};

/// Where a supervisor's events go (see
/// [`SupervisorSpec::on_event`](crate::supervision::SupervisorSpec::on_event)).
///
/// It may share state (a metrics counter, a channel to a test): it is an observer, not process
/// state, and is only ever given copies of events. `Send + Sync` because one sink is shared by
/// a supervisor, the clones of its spec and the child supervisors that inherit it, and is
/// called from whichever worker runs each of them.
pub type EventSink = Arc<dyn Fn(&SupervisorEvent) + Send + Sync>;

/// Something a supervisor did or saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SupervisorEvent {
    /// The supervisor's name (from its spec).
    pub supervisor: Arc<str>,
    /// The supervisor's process id.
    pub supervisor_pid: ProcessId,
    /// What happened.
    pub kind: EventKind,
}

/// The kinds of [`SupervisorEvent`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A child was started for the first time (or by `restart_child`/`start_child`).
    ChildStarted {
        /// The child's id.
        id: String,
        /// The new incarnation.
        pid: ProcessId,
    },
    /// A child terminated (on its own, or because the supervisor stopped it).
    ChildExited {
        /// The child's id.
        id: String,
        /// The incarnation that terminated.
        pid: ProcessId,
        /// Why.
        reason: ExitReason,
    },
    /// A child was restarted by the strategy.
    ChildRestarted {
        /// The child's id.
        id: String,
        /// The new incarnation.
        pid: ProcessId,
        /// How many times this child has been restarted so far.
        restarts: u64,
    },
    /// A child with a [`Backoff`](super::Backoff) failed, and will be restarted after `delay`
    /// (with the children its strategy stops with it), on the runtime's timers. Until then it
    /// is stopped. Not counted against the restart intensity.
    RestartDelayed {
        /// The child's id.
        id: String,
        /// Its failures in a row since the last reset (1 for the first).
        attempt: u32,
        /// How long the restart waits (jitter applied).
        delay: Duration,
    },
    /// A child failed once more after its backoff's `max_attempts` delayed restarts in a row:
    /// the supervisor stops its children and fails, as when its intensity is exceeded.
    BackoffExhausted {
        /// The child's id.
        id: String,
        /// The delayed restarts it had (the backoff's `max_attempts`).
        attempts: u32,
    },
    /// A child did not terminate within its shutdown timeout; the supervisor stopped waiting
    /// (its exit request stays in place).
    ShutdownTimedOut {
        /// The child's id.
        id: String,
        /// The incarnation that did not stop in time.
        pid: ProcessId,
    },
    /// One restart too many within the period: the supervisor stops its children and fails.
    IntensityExceeded {
        /// The configured maximum.
        max_restarts: u32,
        /// The configured period.
        period: Duration,
    },
    /// The supervisor itself terminated. For a root supervisor a failure here is the end of
    /// its tree; nothing hangs waiting for it.
    Terminated {
        /// Why.
        reason: ExitReason,
    },
}

/// Restarts, printed to standard error when no `tracing` subscriber is installed.
static RESTARTS: Quiet = Quiet::new("restarts");
/// A supervisor's warnings (giving up, a child that would not stop), likewise.
static WARNINGS: Quiet = Quiet::new("supervisor warnings");

/// Logs `event` and hands it to `sink`; a panicking sink is contained and logged.
///
/// Restarts are `INFO`; a supervisor giving up, a backoff exhausted and a shutdown that
/// timed out are `WARN`. A supervisor that fails is a failing process, reported once by the
/// failure hook (`lifecycle/failures.rs`), so its `Terminated` event is `DEBUG` here. Without
/// a subscriber, restarts and warnings reach standard error as failures do, rate-limited
/// (`lifecycle/quiet.rs`).
pub(super) fn emit(sink: Option<&EventSink>, event: SupervisorEvent) {
    let supervisor = &event.supervisor;
    match &event.kind {
        EventKind::IntensityExceeded { .. }
        | EventKind::BackoffExhausted { .. }
        | EventKind::ShutdownTimedOut { .. } => {
            tracing::warn!(supervisor = %supervisor, kind = ?event.kind, "supervisor");
            WARNINGS.print(|| format!("supervisor `{supervisor}`: {:?}", event.kind));
        }
        EventKind::ChildRestarted { id, pid, restarts } => {
            tracing::info!(supervisor = %supervisor, child = %id, process = %pid, restarts, "child restarted");
            RESTARTS.print(|| {
                format!("supervisor `{supervisor}` restarted child `{id}` as {pid} (restart {restarts})")
            });
        }
        kind => tracing::debug!(supervisor = %supervisor, ?kind, "supervisor"),
    }
    #[cfg(feature = "prometheus")]
    if let EventKind::ChildRestarted { .. } = event.kind {
        count_restart(&event.supervisor);
    }
    // Labelled by supervisor, not by child: a simple-one-for-one supervisor's children are
    // named by process id, one series each.
    #[cfg(feature = "metrics")]
    if let EventKind::ChildRestarted { .. } = event.kind {
        metrics::counter!(
            "whirl_supervisor_restarts_total",
            "supervisor" => Arc::clone(&event.supervisor)
        )
        .increment(1);
    }
    if let Some(sink) = sink {
        if catch_unwind(AssertUnwindSafe(|| sink(&event))).is_err() {
            tracing::error!(supervisor = %event.supervisor, "supervisor event sink panicked");
        }
    }
}

/// Supervisors whose restarts [`restart_counts`] keeps (the first this many names seen): a
/// program that names supervisors after sessions cannot grow the table without bound.
#[cfg(feature = "prometheus")]
const MAX_COUNTED_SUPERVISORS: usize = 1024;

/// Restarts so far by supervisor name, for every runtime of the program.
#[cfg(feature = "prometheus")]
static RESTART_COUNTS: parking_lot::Mutex<Vec<(Arc<str>, u64)>> =
    parking_lot::Mutex::new(Vec::new());

#[cfg(feature = "prometheus")]
fn count_restart(supervisor: &Arc<str>) {
    let mut counts = RESTART_COUNTS.lock();
    match counts.iter().position(|(name, _)| name == supervisor) {
        Some(i) => counts[i].1 += 1,
        None if counts.len() < MAX_COUNTED_SUPERVISORS => {
            counts.push((Arc::clone(supervisor), 1));
        }
        None => {}
    }
}

/// Children restarted so far by each supervisor's strategy, by supervisor name (the first
/// 1,024 names), in the order they first restarted one (feature `prometheus`).
#[cfg(feature = "prometheus")]
pub(crate) fn restart_counts() -> Vec<(Arc<str>, u64)> {
    RESTART_COUNTS.lock().clone()
}
