//! What a shutdown did: [`ShutdownReport`].
//!
//! Every path that ends a runtime ([`Runtime::shutdown_graceful`](crate::Runtime::shutdown_graceful),
//! [`Runtime::shutdown_timeout`](crate::Runtime::shutdown_timeout), dropping it) accounts for
//! every accepted message: handled, rejected, or dead-lettered. Processes that a worker can
//! run terminate normally (their `terminated` hook runs exactly once before the call returns);
//! processes queued behind workers that are stuck in a handler are terminated by the shutting
//! down thread itself; a process whose handler does not return cannot be stopped (whirl never
//! preempts a handler), so it is *abandoned*: reported here, with what it is handling and for
//! how long. When its handler returns, the process terminates at once: its hook runs and the
//! rest of its inbox is dead-lettered.

use std::fmt;
use std::time::Duration;

use crate::lifecycle::ProcessId;

/// What a shutdown did. Every path that ends a runtime accounts for every accepted message;
/// processes whose handler does not return are listed in [`abandoned`](Self::abandoned).
#[derive(Clone, Debug, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct ShutdownReport {
    /// Whether every inbox drained before the deadline (always, for a graceful shutdown that
    /// returned).
    pub drained: bool,
    /// Messages handled while shutting down.
    pub handled: u64,
    /// Messages dead-lettered while shutting down (left in the inbox of a terminated process).
    pub dead_lettered: u64,
    /// Processes terminated while shutting down.
    pub terminated: u64,
    /// Processes whose handler had not returned when the shutdown gave up waiting.
    pub abandoned: Vec<AbandonedProcess>,
    /// Async handlers that were still pending when the shutdown terminated their processes:
    /// their futures were dropped (the processes' `terminated` hooks ran, their inboxes were
    /// dead-lettered). A future that never completes does not hold a shutdown up.
    pub cancelled_handlers: u64,
    /// How long the shutdown took.
    pub elapsed: Duration,
}

impl ShutdownReport {
    /// Whether nothing was abandoned and every inbox drained.
    pub fn is_clean(&self) -> bool {
        self.drained && self.abandoned.is_empty()
    }
}

impl fmt::Display for ShutdownReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "shutdown in {:?}: {} handled, {} dead-lettered, {} terminated, {} async handlers \
             cancelled, {} abandoned{}",
            self.elapsed,
            self.handled,
            self.dead_lettered,
            self.terminated,
            self.cancelled_handlers,
            self.abandoned.len(),
            if self.drained {
                ""
            } else {
                " (did not drain in time)"
            }
        )?;
        for process in &self.abandoned {
            write!(f, "\n  {process}")?;
        }
        Ok(())
    }
}

/// A process left running at shutdown because its handler did not return.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct AbandonedProcess {
    /// Its id.
    pub id: ProcessId,
    /// The name it is registered under, if any.
    pub name: Option<String>,
    /// Its group.
    pub group: String,
    /// The type of the message it is handling; `None` while its `started` hook runs, or if it
    /// is not running at all but queued on a worker that is stuck in another handler.
    pub message_type: Option<&'static str>,
    /// How long it has been handling that message (millisecond resolution); zero if it is
    /// queued behind another.
    pub running_for: Duration,
}

impl fmt::Display for AbandonedProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "process {}", self.id)?;
        if let Some(name) = &self.name {
            write!(f, " `{name}`")?;
        }
        write!(f, " in group `{}`", self.group)?;
        match self.message_type {
            Some(message) => write!(f, ", handling `{message}` for {:?}", self.running_for),
            None if self.running_for > Duration::ZERO => {
                write!(f, ", in its `started` hook for {:?}", self.running_for)
            }
            None => write!(f, ", queued behind a handler that does not return"),
        }
    }
}

// SAFETY: a shutdown's report is plain data: counts, durations, ids and owned names. (I8)
unsafe impl crate::isolation::Isolated for ShutdownReport {}
impl crate::isolation::Reply for ShutdownReport {}
// SAFETY: as above. (I8)
unsafe impl crate::isolation::Isolated for AbandonedProcess {}
impl crate::isolation::Reply for AbandonedProcess {}
