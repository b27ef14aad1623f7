//! What a stop operation is: the children being stopped one at a time, in reverse start order,
//! the one waited for, and what happens once they are all down. The supervisor keeps one
//! (`process.rs`); `stop.rs` runs it.

use std::time::Duration;

use crate::lifecycle::{ExitReason, ProcessId};
use crate::process::ReplyTo;
use crate::time::TimerHandle;

use super::error::SupervisorError;

/// Children being stopped one at a time, in reverse start order.
pub(super) struct StopOp {
    /// Entry keys in start order; the next one to stop is the last.
    pub(super) queue: Vec<u64>,
    pub(super) waiting: Option<Waiting>,
    pub(super) then: Then,
}

pub(super) struct Waiting {
    pub(super) key: u64,
    pub(super) pid: ProcessId,
    pub(super) epoch: u64,
    pub(super) timer: Option<TimerHandle>,
}

/// What a stop operation does once every child in it is down.
pub(super) enum Then {
    /// Restart these children (entry keys, start order), at once or after a backoff's delay;
    /// temporary ones are removed.
    Restart(Vec<u64>, Option<Duration>),
    /// Answer `terminate_child`; a dynamic or temporary child is removed.
    Reply(u64, ReplyTo<Result<(), SupervisorError>>),
    /// Terminate the supervisor.
    Exit(ExitReason),
}
