//! Lifecycle: how processes are named and how they end.
//!
//! * [`ProcessId`] (`id.rs`): a process's runtime-unique id.
//! * [`ExitReason`], [`Failure`], [`FailureKind`], [`Down`] (`exit.rs`): why a process
//!   terminated and the notice its monitors get.
//! * [`DeadLetter`] (`dead_letter.rs`): a message accepted for a process that terminated
//!   before handling it; nothing posted is dropped silently (invariant I3).
//! * `failures.rs`: the application's hook for failures and abandoned processes.
//! * [`Unanswered`] (`unanswered.rs`): why a request got no answer, said where the runtime
//!   drops requests.
//! * `quiet.rs`: what reaches standard error without a `tracing` subscriber, rate-limited.
//!
//! Layer 1: uses `isolation` only.

mod dead_letter;
mod exit;
pub(crate) mod failures;
mod id;
pub(crate) mod quiet;
mod unanswered;

pub(crate) use dead_letter::{default_sink, wall_clock};
pub use dead_letter::{posted, DeadLetter, DeadLetterRecord, DeadLetterSink, QueuedMessage};
pub use exit::{Down, ExitReason, Failure, FailureKind};
pub use id::ProcessId;
pub use unanswered::Unanswered;
pub(crate) use unanswered::{unanswered_because, unanswered_now};
