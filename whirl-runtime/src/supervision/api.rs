//! What you can ask a supervisor: which messages a `Supervisor<A>` takes, and the blocking
//! client API on `Addr<Supervisor<A>>` (OTP's `supervisor:start_child/2` and friends).

use crate::isolation::Isolated;
use crate::lifecycle::ProcessId;
use crate::process::{Addr, CallError, Handles, PostError, Sender};

use super::error::SupervisorError;
use super::info::{ChildCounts, ChildInfo};
use super::kinds::ChildRef;
use super::message::{Msg, Request, StartDynamic, SupervisorMsg};
use super::process::Supervisor;
use super::spec::{ChildSpec, IntoChildSpec};

impl<A: 'static> Handles<SupervisorMsg> for Supervisor<A> {
    fn into_message(msg: SupervisorMsg) -> SupervisorMsg {
        msg
    }

    const BYPASSES_ADMISSION: bool = true;
}

impl<A: Isolated> Handles<StartDynamic<A>> for Supervisor<A> {
    fn into_message(StartDynamic(arg, reply): StartDynamic<A>) -> SupervisorMsg {
        let given = std::any::type_name::<A>();
        SupervisorMsg(Msg::Request(Request::StartDynamic(
            Box::new(arg),
            given,
            reply,
        )))
    }

    const BYPASSES_ADMISSION: bool = true;
}

fn flatten<T, M>(
    answer: Result<Result<T, SupervisorError>, CallError<M>>,
) -> Result<T, SupervisorError> {
    answer.unwrap_or_else(|e| Err(unavailable(e)))
}

fn unavailable<M>(error: CallError<M>) -> SupervisorError {
    match error {
        CallError::WouldBlockWorker(_) => SupervisorError::WouldBlockWorker,
        _ => SupervisorError::Unavailable,
    }
}

/// The dynamic API (OTP's `supervisor:start_child/2` and friends), as blocking calls for code
/// outside the runtime (inside a handler they return [`SupervisorError::WouldBlockWorker`]).
/// Async code uses [`Addr::ask`] with the [`SupervisorMsg`] constructors instead.
impl<A: 'static> Addr<Supervisor<A>> {
    /// Adds and starts a static child, and waits for its `started` hook (OTP's
    /// `start_child`, which waits for `init`): the hook's failure comes back as
    /// [`SupervisorError::StartFailed`] and the child is forgotten. Refused (the spec comes
    /// back) if the id is taken: [`SupervisorError::AlreadyStarted`] if that child runs,
    /// [`SupervisorError::AlreadyPresent`] if it is stopped.
    pub fn start_child(&self, spec: impl IntoChildSpec) -> Result<ProcessId, SupervisorError> {
        let spec = spec.into_child_spec();
        flatten(
            self.request_with(|reply| SupervisorMsg::start_child(spec, reply))
                .call(),
        )
    }

    /// Stops a child in order (waiting for it, within its shutdown policy); it exits
    /// [`ExitReason::Shutdown`](crate::ExitReason). A static child stays known but stopped,
    /// and is not restarted; a dynamic or temporary one is removed. A simple-one-for-one
    /// supervisor's children are named by process id (by id: `WrongStrategy`, as OTP).
    pub fn terminate_child(&self, child: impl Into<ChildRef>) -> Result<(), SupervisorError> {
        flatten(
            self.request_with(|reply| SupervisorMsg::terminate_child(child, reply))
                .call(),
        )
    }

    /// Starts a stopped static child again (refused if it is running), and waits for its
    /// `started` hook; if that fails the child stays stopped and the failure comes back.
    pub fn restart_child(&self, id: &str) -> Result<ProcessId, SupervisorError> {
        flatten(
            self.request_with(|reply| SupervisorMsg::restart_child(id, reply))
                .call(),
        )
    }

    /// Forgets a stopped static child (refused if it is running).
    pub fn delete_child(&self, id: &str) -> Result<(), SupervisorError> {
        flatten(
            self.request_with(|reply| SupervisorMsg::delete_child(id, reply))
                .call(),
        )
    }

    /// The children, in start order, with their state.
    pub fn which_children(&self) -> Result<Vec<ChildInfo>, SupervisorError> {
        self.request_with(SupervisorMsg::which_children)
            .call()
            .map_err(unavailable)
    }

    /// Like [`which_children`](Self::which_children), giving up after `timeout`
    /// ([`SupervisorError::Unavailable`]): for observers that must not hang on a busy
    /// supervisor (a console walking the tree).
    pub fn which_children_timeout(
        &self,
        timeout: std::time::Duration,
    ) -> Result<Vec<ChildInfo>, SupervisorError> {
        self.request_with(SupervisorMsg::which_children)
            .timeout(timeout)
            .call()
            .map_err(unavailable)
    }

    /// One child, by id (or by process id); with [`ChildInfo::addr`] its typed address.
    pub fn which_child(&self, child: impl Into<ChildRef>) -> Result<ChildInfo, SupervisorError> {
        flatten(
            self.request_with(|reply| SupervisorMsg::which_child(child, reply))
                .call(),
        )
    }

    /// A copy of a child's spec, by id (or by process id): OTP's `get_childspec`. The spec
    /// of a temporary child that has started has no start arguments left (OTP reports
    /// `undefined` for them): starting it again fails.
    pub fn child_spec(&self, child: impl Into<ChildRef>) -> Result<ChildSpec, SupervisorError> {
        flatten(
            self.request_with(|reply| SupervisorMsg::child_spec(child, reply))
                .call(),
        )
    }

    /// Child counts and the number of restarts performed.
    pub fn count_children(&self) -> Result<ChildCounts, SupervisorError> {
        self.request_with(SupervisorMsg::count_children)
            .call()
            .map_err(unavailable)
    }

    /// Asks for an ordered stop: the children in reverse start order (each within its
    /// shutdown policy, subtrees first), then the supervisor, which exits
    /// [`ExitReason::Shutdown`](crate::ExitReason). Does not wait; monitor the supervisor, or
    /// watch for [`EventKind::Terminated`](crate::supervision::EventKind).
    pub fn shutdown(&self) -> Result<(), PostError<SupervisorMsg>> {
        self.post(SupervisorMsg::shutdown())
    }
}

impl<A: Isolated> Addr<Supervisor<A>> {
    /// Starts a child of this simple-one-for-one supervisor's template with `arg`, and waits
    /// for its `started` hook (a failure comes back as [`SupervisorError::StartFailed`]).
    /// `arg` is of the type the [`ChildTemplate`](crate::supervision::ChildTemplate) takes, checked at
    /// compile time; it moves into the child.
    pub fn start_dynamic(&self, arg: A) -> Result<ProcessId, SupervisorError> {
        flatten(self.request_with(|reply| StartDynamic(arg, reply)).call())
    }
}
