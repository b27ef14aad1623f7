//! The dead-letter sink: where messages go that were accepted but can no longer be handled,
//! because their process terminated first. Nothing posted is dropped silently (invariant 3).

use std::any::Any;
use std::fmt;

use crate::process::{ExitReason, ProcessId};

/// A message that was queued for a process that terminated before handling it.
pub struct DeadLetter {
    to: ProcessId,
    reason: ExitReason,
    type_name: &'static str,
    message: Box<dyn Any + Send>,
}

impl DeadLetter {
    pub(crate) fn new<M: Send + 'static>(to: ProcessId, reason: ExitReason, message: M) -> Self {
        DeadLetter {
            to,
            reason,
            type_name: std::any::type_name::<M>(),
            message: Box::new(message),
        }
    }

    /// The process it was meant for.
    pub fn to(&self) -> ProcessId {
        self.to
    }

    /// Why that process terminated.
    pub fn reason(&self) -> &ExitReason {
        &self.reason
    }

    /// The Rust type of the message (the process's message enum).
    pub fn type_name(&self) -> &'static str {
        self.type_name
    }

    /// The message itself, to downcast to the process's message type.
    pub fn into_message(self) -> Box<dyn Any + Send> {
        self.message
    }

    /// The message, by reference.
    pub fn message(&self) -> &(dyn Any + Send) {
        &*self.message
    }
}

impl fmt::Debug for DeadLetter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeadLetter")
            .field("to", &self.to)
            .field("reason", &self.reason)
            .field("type_name", &self.type_name)
            .finish_non_exhaustive()
    }
}

/// Receives dead letters. Runs on whichever thread terminated the process; keep it short.
pub type DeadLetterSink = Box<dyn Fn(DeadLetter) + Send + Sync>;

pub(crate) fn default_sink() -> DeadLetterSink {
    Box::new(|letter: DeadLetter| {
        tracing::debug!(
            to = %letter.to,
            reason = %letter.reason,
            message = letter.type_name,
            "dead letter"
        );
    })
}
