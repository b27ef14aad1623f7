//! What the dynamic API can refuse.

use crate::isolated::Isolated;

use super::message::ChildRef;
use super::spec::{ChildSpec, Strategy};

/// Why a request to a supervisor was refused. Each variant carries back what was rejected.
#[derive(Debug, thiserror::Error)]
pub enum SupervisorError {
    /// No child with this id (or process id).
    #[error("no child {0}")]
    NotFound(ChildRef),
    /// A child with this spec's id already exists; the spec comes back.
    #[error("a child with id `{}` already exists", .0.id())]
    AlreadyPresent(ChildSpec),
    /// The child is running; stop it first (`terminate_child`).
    #[error("child `{0}` is running")]
    Running(String),
    /// The operation does not apply to this supervisor's strategy (for example `start_child`
    /// on a simple-one-for-one supervisor, or `start_dynamic` on any other).
    #[error("`{operation}` is not available under strategy {strategy:?}")]
    WrongStrategy {
        /// The refused operation.
        operation: &'static str,
        /// The supervisor's strategy.
        strategy: Strategy,
    },
    /// `start_dynamic` was given an argument of another type than the template takes.
    #[error("the child template takes `{expected}`, not `{given}`")]
    WrongArgument {
        /// The template's argument type.
        expected: &'static str,
        /// The type that was given.
        given: &'static str,
    },
    /// A blocking method of `Addr<Supervisor>` was called from inside a process handler,
    /// where it would stall a worker. Call it from outside the runtime, or from async code
    /// with `Addr::ask` and a [`SupervisorMsg`](crate::SupervisorMsg) constructor.
    #[error("blocking supervisor call from inside a process handler; use `Addr::ask` with a `SupervisorMsg` request from async code, or call from outside the runtime")]
    WouldBlockWorker,
    /// The supervisor has terminated (or is terminating) and did not answer.
    #[error("the supervisor is not available (terminated or stopping)")]
    Unavailable,
}

// SAFETY: every variant holds only `Isolated` values (asserted below): a `ChildRef`, a
// `String`, `&'static str`s, a `Strategy`, and a `ChildSpec`, which is data (an initial state,
// or a function pointer and its arguments, or a supervisor spec; see its impl).
#[diagnostic::do_not_recommend]
unsafe impl Isolated for SupervisorError {}

const _: () = {
    fn assert_isolated<T: ?Sized + Isolated>() {}
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<ChildRef>;
    let _ = assert_isolated::<ChildSpec>;
    let _ = assert_isolated::<String>;
    let _ = assert_isolated::<Strategy>;
    let _ = assert_isolated::<&'static str>;
};
