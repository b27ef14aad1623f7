//! What the dynamic API can refuse.

use crate::isolation::Isolated;
use crate::lifecycle::{ExitReason, ProcessId};

use super::kinds::{ChildRef, RestartStrategy};
use super::spec::ChildSpec;

/// Why a request to a supervisor was refused, or a child it was asked to start did not
/// start. A refused spec comes back with the refusal.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SupervisorError {
    /// No child with this id (or process id).
    #[error("no child {0}")]
    NotFound(ChildRef),
    /// A stopped child with this spec's id exists (OTP's `already_present`): restart it with
    /// `restart_child`, or delete it first. The spec comes back.
    #[error("a stopped child with id `{}` already exists", .0.id())]
    AlreadyPresent(ChildSpec),
    /// A running child with this spec's id exists (OTP's `{already_started, Pid}`); the spec
    /// comes back.
    #[error("child `{}` is already running as {}", .1.id(), .0)]
    AlreadyStarted(ProcessId, ChildSpec),
    /// The child is running; stop it first (`terminate_child`).
    #[error("child `{0}` is running")]
    Running(String),
    /// The child's name is registered to another live process, `holder` (OTP's
    /// `{already_started, Pid}` from a named start). Nothing was started and the name was
    /// left with its holder.
    #[error("child `{id}` cannot be started: the name `{name}` is registered to {holder}")]
    NameTaken {
        /// The child's id.
        id: String,
        /// Its name.
        name: String,
        /// The live process that holds the name.
        holder: ProcessId,
    },
    /// The child's `started` hook failed (or it terminated before the hook returned), so a
    /// synchronous start (`start_child`, `restart_child`, `start_dynamic`) failed, as OTP's
    /// does when `init` fails. The child is not restarted for it: a new child is forgotten,
    /// a restarted one stays stopped.
    #[error("child `{id}` failed to start: {reason}")]
    StartFailed {
        /// The child's id.
        id: String,
        /// How it terminated.
        reason: ExitReason,
    },
    /// The spec cannot run under this supervisor (for example a significant child under a
    /// supervisor whose auto-shutdown is `Never`); the spec comes back, with the reason.
    #[error("invalid child spec `{}`: {}", .0.id(), .1)]
    InvalidSpec(ChildSpec, String),
    /// The operation does not apply to this supervisor's strategy (for example `start_child`
    /// on a simple-one-for-one supervisor, or a child named by id there: its children share
    /// the template's id, so they are named by process id; OTP's `simple_one_for_one`).
    #[error("`{operation}` is not available under strategy {strategy:?}")]
    WrongStrategy {
        /// The refused operation.
        operation: &'static str,
        /// The supervisor's strategy.
        strategy: RestartStrategy,
    },
    /// `start_dynamic` reached a supervisor whose template takes another argument type.
    /// The typed API (`Addr<Supervisor<A>>`, [`StartDynamic<A>`](crate::supervision::StartDynamic)) rules
    /// this out at compile time; the supervisor still checks rather than trusting it.
    #[error("the child template takes `{expected}`, not `{given}`")]
    WrongArgument {
        /// The template's argument type.
        expected: &'static str,
        /// The type that was given.
        given: &'static str,
    },
    /// A blocking method of `Addr<Supervisor>` was called from inside a process handler,
    /// where it would stall a worker. Call it from outside the runtime, or from async code
    /// with `Addr::ask` and a [`SupervisorMsg`](crate::supervision::SupervisorMsg) constructor.
    #[error("blocking supervisor call from inside a process handler; use `Addr::ask` with a `SupervisorMsg` request from async code, or call from outside the runtime")]
    WouldBlockWorker,
    /// The supervisor has terminated (or is terminating) and did not answer.
    #[error("the supervisor is not available (terminated or stopping)")]
    Unavailable,
}

// SAFETY: every variant holds only `Isolated` values (asserted below): a `ChildRef`, a
// `String`, `&'static str`s, a `RestartStrategy`, process ids, an `ExitReason`, and a `ChildSpec`,
// which is data (an initial state, or a function pointer and its arguments, or a supervisor
// spec; see its impl). (I8)
#[diagnostic::do_not_recommend]
unsafe impl Isolated for SupervisorError {}

const _: () = {
    fn assert_isolated<T: ?Sized + Isolated>() {}
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<ChildRef>;
    let _ = assert_isolated::<ChildSpec>;
    let _ = assert_isolated::<String>;
    let _ = assert_isolated::<RestartStrategy>;
    let _ = assert_isolated::<&'static str>;
    let _ = assert_isolated::<ProcessId>;
    let _ = assert_isolated::<ExitReason>;
};
