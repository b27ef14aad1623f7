//! Failures nobody asked about: where whirl reports them.
//!
//! A handler that returns `Err`, a process refused at spawn (it fails at once, saying why), a
//! supervisor that gives up after its restart intensity (it fails, saying so), a shutdown that
//! abandons a stuck handler: each is a fact someone must be able to see even if nothing
//! monitors the process and no `tracing` subscriber is installed. Like std's panic hook, one replaceable hook receives each of them, once:
//!
//! * by default, if a `tracing` subscriber is installed, a `tracing` event (error level, or
//!   warning for a shutdown that abandoned handlers); otherwise one line on standard error,
//!   `whirl: ...`;
//! * [`set_failure_hook`] replaces it (a test that fails processes on purpose, an application
//!   that counts failures); [`take_failure_hook`] restores the default.
//!
//! Panics are not reported here: std's panic hook has already printed them. Failures caused
//! by another (a linked process failing with the one that failed) are not either: the first
//! one was.

use std::fmt;
use std::sync::{Arc, RwLock};

use super::{Failure, ProcessId};

/// A failure reported to the failure hook (see [`set_failure_hook`]).
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub enum FailureReport {
    /// A handler or hook returned an error (or called `fail`), the process was refused at
    /// spawn, or a supervisor gave up: the process terminated with this failure.
    ProcessFailed {
        /// The process.
        id: ProcessId,
        /// Its group.
        group: String,
        /// Why.
        failure: Failure,
    },
    /// A shutdown returned while some handlers had not: see
    /// [`ShutdownReport`](crate::ShutdownReport).
    ShutdownAbandoned {
        /// The report, as text.
        report: String,
    },
    /// A process terminated (killed, shut down, or failed through a link) while an async
    /// handler was pending: its future was dropped without completing.
    HandlerCancelled {
        /// The process.
        id: ProcessId,
        /// Its group.
        group: String,
        /// The type of the message the handler was handling.
        message_type: &'static str,
        /// How long the handler had been running.
        pending_for: std::time::Duration,
        /// Why the process terminated.
        reason: crate::lifecycle::ExitReason,
    },
}

impl fmt::Display for FailureReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailureReport::ProcessFailed { id, group, failure } => {
                write!(f, "process {id} in group `{group}` failed: {failure}")
            }
            FailureReport::ShutdownAbandoned { report } => f.write_str(report),
            FailureReport::HandlerCancelled {
                id,
                group,
                message_type,
                pending_for,
                reason,
            } => write!(
                f,
                "process {id} in group `{group}` terminated ({reason}) while its async handler \
                 for `{message_type}` was pending ({pending_for:?}); the handler was cancelled"
            ),
        }
    }
}

/// A failure hook, as [`take_failure_hook`] returns it.
pub type FailureHook = Arc<dyn Fn(&FailureReport) + Send + Sync>;

static HOOK: RwLock<Option<FailureHook>> = RwLock::new(None);

/// Replaces the failure hook for the whole process (every runtime). The hook runs on the
/// thread where the failure happened (a worker, usually): keep it quick.
///
/// A closure that may share state (`Send + Sync + 'static`, not
/// [`Isolated`](crate::Isolated)): it is an observer, not process state; counting failures
/// somewhere shared is its job.
pub fn set_failure_hook(hook: impl Fn(&FailureReport) + Send + Sync + 'static) {
    *HOOK.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(hook));
}

/// Restores the default hook (a `tracing` event if a subscriber is installed, else a line on
/// standard error) and returns the one that was set,
/// if any.
pub fn take_failure_hook() -> Option<FailureHook> {
    HOOK.write().unwrap_or_else(|e| e.into_inner()).take()
}

/// Reports `failure` to the hook. A panicking hook is contained.
pub(crate) fn report(failure: FailureReport) {
    let hook = HOOK.read().unwrap_or_else(|e| e.into_inner()).clone();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match hook {
        Some(hook) => hook(&failure),
        None => default_hook(&failure),
    }));
    if outcome.is_err() {
        eprintln!("whirl: the failure hook panicked while reporting: {failure}");
    }
}

fn default_hook(failure: &FailureReport) {
    if !tracing::dispatcher::has_been_set() {
        eprintln!("whirl: {failure}");
        return;
    }
    // Structured: the fields are fields, and the event lands in the span of the message
    // whose handler failed (the turn reports inside it; see `process/trace.rs`).
    match failure {
        FailureReport::ProcessFailed { id, group, failure } => tracing::error!(
            process = %id,
            group = %group,
            kind = ?failure.kind(),
            failure = %failure,
            "process failed",
        ),
        FailureReport::HandlerCancelled {
            id,
            group,
            message_type,
            pending_for,
            reason,
        } => tracing::warn!(
            process = %id,
            group = %group,
            message_type,
            pending_ms = u64::try_from(pending_for.as_millis()).unwrap_or(u64::MAX),
            reason = %reason,
            "async handler cancelled: the process terminated while it was pending",
        ),
        FailureReport::ShutdownAbandoned { report } => {
            tracing::warn!(report = %report, "shutdown abandoned processes")
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn a_hook_sees_each_report_once_and_the_default_comes_back() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        set_failure_hook(move |f| sink.lock().unwrap().push(f.to_string()));
        report(FailureReport::ShutdownAbandoned {
            report: "one stuck handler".into(),
        });
        assert!(take_failure_hook().is_some());
        // Other tests of this binary may fail processes meanwhile: look for ours only.
        let seen = seen.lock().unwrap();
        assert_eq!(seen.iter().filter(|s| *s == "one stuck handler").count(), 1);
    }
}

// SAFETY: a failure report holds ids, owned names, a `Failure` and an `ExitReason` (immutable,
// see their impls) and durations. (I8)
unsafe impl crate::isolation::Isolated for FailureReport {}
impl crate::isolation::Reply for FailureReport {}
