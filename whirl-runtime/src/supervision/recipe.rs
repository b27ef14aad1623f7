//! How a child spec starts an incarnation: the [`Start`] recipes. Each is data the supervisor
//! keeps and runs at every (re)start, on its own worker: an initial state to clone
//! ([`Initial`], for `ChildSpec::worker`), a function pointer and its arguments ([`Apply`], for
//! `ChildSpec::worker_with`, OTP's `{M, F, A}`), or nothing ([`Spent`], what a temporary
//! child's recipe becomes once it has run). The recipe of a child supervisor (`Nested`) is in
//! `spec.rs`, beside the `SupervisorSpec` it holds, and its start in `process.rs`, beside
//! `Supervisor`.

use crate::isolation::Isolated;
use crate::process::Process;

use super::start::{RunningChild, StartCx, StartError, Worker};

/// How to start one incarnation of a child: data the supervisor keeps, and runs at every
/// (re)start on its own worker.
///
/// `Isolated` is a supertrait, so a `Box<dyn Start>` is `Isolated` by the impl for `Box`: each
/// implementation below is a function pointer and `Isolated` values, nothing else.
pub(super) trait Start: Isolated {
    /// Spawns (and monitors, and names) a fresh incarnation.
    fn start(&self, cx: &mut StartCx<'_>) -> Result<Box<dyn RunningChild>, StartError>;

    /// A copy of the recipe, for a cloned `ChildSpec`.
    fn clone_box(&self) -> Box<dyn Start>;
}

/// `ChildSpec::worker`: every incarnation starts from a clone of the initial state.
pub(super) struct Initial<P>(pub(super) P);

// SAFETY: the one field is a `P`, which the bound makes `Isolated`. (I8)
#[diagnostic::do_not_recommend]
unsafe impl<P: Isolated> Isolated for Initial<P> {}

impl<P: Process + Isolated + Clone> Start for Initial<P> {
    fn start(&self, cx: &mut StartCx<'_>) -> Result<Box<dyn RunningChild>, StartError> {
        Ok(Box::new(Worker(cx.spawn(|| self.0.clone())?)))
    }

    fn clone_box(&self) -> Box<dyn Start> {
        Box::new(Initial(self.0.clone()))
    }
}

/// `ChildSpec::worker_with`: every incarnation is `start(args.clone())`, OTP's `{M, F, A}`.
pub(super) struct Apply<A, P> {
    pub(super) args: A,
    pub(super) start: fn(A) -> P,
}

// SAFETY: the arguments are `Isolated` by the bound, and a function pointer holds no data
// (`fn(A) -> P` is `Send`, and `'static` with `A` and `P`). (I8)
#[diagnostic::do_not_recommend]
unsafe impl<A: Isolated, P: 'static> Isolated for Apply<A, P> {}

impl<A: Isolated + Clone, P: Process> Start for Apply<A, P> {
    fn start(&self, cx: &mut StartCx<'_>) -> Result<Box<dyn RunningChild>, StartError> {
        Ok(Box::new(Worker(
            cx.spawn(|| (self.start)(self.args.clone()))?,
        )))
    }

    fn clone_box(&self) -> Box<dyn Start> {
        Box::new(Apply {
            args: self.args.clone(),
            start: self.start,
        })
    }
}

/// What is left of a temporary child's recipe once it has started: nothing. OTP keeps no start
/// arguments for a temporary child (it is never restarted), and neither does whirl: the
/// initial state or arguments are dropped as soon as the child is running.
pub(super) struct Spent;

// SAFETY: no fields. (I8)
#[diagnostic::do_not_recommend]
unsafe impl Isolated for Spent {}

impl Start for Spent {
    fn start(&self, _: &mut StartCx<'_>) -> Result<Box<dyn RunningChild>, StartError> {
        Err(StartError::Spent)
    }

    fn clone_box(&self) -> Box<dyn Start> {
        Box::new(Spent)
    }
}
