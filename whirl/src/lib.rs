//! whirl: isolated sequential processes, asynchronous messages, groups with their own
//! workers and admission control.
pub use whirl_runtime::*;

/// The names most programs need.
pub mod prelude {
    pub use whirl_runtime::{
        Addr, CallError, Ctx, Down, ExitReason, Failure, Group, Handles, PostError, Process,
        ProcessId, Recipient, ReplyTo, Runtime,
    };
}
