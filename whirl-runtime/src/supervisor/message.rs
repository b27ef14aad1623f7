//! The supervisor's messages, and the client API on `Addr<Supervisor<A>>`.

use std::fmt;

use crate::addr::Addr;
use crate::error::{CallError, PostError};
use crate::isolated::{Isolated, Message};
use crate::process::{Down, Handles, ProcessId};
use crate::reply::ReplyTo;

use super::child::{ChildCounts, ChildInfo};
use super::error::SupervisorError;
use super::process::Supervisor;
use super::spec::{ChildSpec, IsolatedAny};

/// A message to a [`Supervisor`]. Opaque: use the blocking methods on `Addr<Supervisor<A>>`,
/// or build requests with the constructors for async code
/// (`sup.ask(SupervisorMsg::count_children)`; [`StartDynamic`] for `start_dynamic`).
pub struct SupervisorMsg(pub(super) Msg);

pub(super) enum Msg {
    /// A child (or an abandoned incarnation) terminated.
    Down(Down),
    /// A child started synchronously has run its `started` hook successfully.
    Started(ProcessId),
    /// A parent supervisor (or a user) asks for an ordered stop of the subtree.
    Shutdown,
    /// The shutdown timer of the child being stopped in stop operation `epoch`.
    StopTimeout(u64),
    /// Try again to restart the child with this entry key, whose restart could not start
    /// (OTP's `try_again_restart`).
    Retry(u64),
    Request(Request),
}

pub(super) type Reply<T> = ReplyTo<Result<T, SupervisorError>>;

pub(super) enum Request {
    Start(ChildSpec, Reply<ProcessId>),
    /// The argument for the template, and its type's name (for a `WrongArgument` error).
    StartDynamic(Box<dyn IsolatedAny>, &'static str, Reply<ProcessId>),
    Terminate(ChildRef, Reply<()>),
    Restart(String, Reply<ProcessId>),
    Delete(String, Reply<()>),
    Which(ReplyTo<Vec<ChildInfo>>),
    WhichChild(ChildRef, Reply<ChildInfo>),
    Spec(ChildRef, Reply<ChildSpec>),
    Count(ReplyTo<ChildCounts>),
}

/// A child, by its spec's id or by its running process id (dynamic children share their
/// template's id, so they are named by process id).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ChildRef {
    /// By spec id.
    Id(String),
    /// By the running incarnation's process id.
    Pid(ProcessId),
}

// SAFETY: a `String` or a `ProcessId`, owned data.
#[diagnostic::do_not_recommend]
unsafe impl Isolated for ChildRef {}

impl From<&str> for ChildRef {
    fn from(id: &str) -> Self {
        ChildRef::Id(id.to_owned())
    }
}

impl From<String> for ChildRef {
    fn from(id: String) -> Self {
        ChildRef::Id(id)
    }
}

impl From<ProcessId> for ChildRef {
    fn from(pid: ProcessId) -> Self {
        ChildRef::Pid(pid)
    }
}

impl fmt::Display for ChildRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChildRef::Id(id) => write!(f, "`{id}`"),
            ChildRef::Pid(pid) => write!(f, "{pid}"),
        }
    }
}

impl SupervisorMsg {
    /// Adds and starts a static child; answers its process id once its `started` hook has
    /// succeeded.
    pub fn start_child(spec: ChildSpec, reply: Reply<ProcessId>) -> Self {
        SupervisorMsg(Msg::Request(Request::Start(spec, reply)))
    }

    /// Stops a child (it stays stopped; a dynamic or temporary child is removed).
    pub fn terminate_child(child: impl Into<ChildRef>, reply: Reply<()>) -> Self {
        SupervisorMsg(Msg::Request(Request::Terminate(child.into(), reply)))
    }

    /// Starts a stopped static child again; answers once its `started` hook has succeeded.
    pub fn restart_child(id: impl Into<String>, reply: Reply<ProcessId>) -> Self {
        SupervisorMsg(Msg::Request(Request::Restart(id.into(), reply)))
    }

    /// Forgets a stopped static child.
    pub fn delete_child(id: impl Into<String>, reply: Reply<()>) -> Self {
        SupervisorMsg(Msg::Request(Request::Delete(id.into(), reply)))
    }

    /// Lists the children in start order.
    pub fn which_children(reply: ReplyTo<Vec<ChildInfo>>) -> Self {
        SupervisorMsg(Msg::Request(Request::Which(reply)))
    }

    /// Describes one child.
    pub fn which_child(child: impl Into<ChildRef>, reply: Reply<ChildInfo>) -> Self {
        SupervisorMsg(Msg::Request(Request::WhichChild(child.into(), reply)))
    }

    /// A copy of one child's spec (OTP's `get_childspec`).
    pub fn child_spec(child: impl Into<ChildRef>, reply: Reply<ChildSpec>) -> Self {
        SupervisorMsg(Msg::Request(Request::Spec(child.into(), reply)))
    }

    /// Counts the children and the restarts.
    pub fn count_children(reply: ReplyTo<ChildCounts>) -> Self {
        SupervisorMsg(Msg::Request(Request::Count(reply)))
    }

    /// Stops the subtree in reverse start order, then the supervisor, which exits
    /// [`ExitReason::Shutdown`](crate::ExitReason).
    pub fn shutdown() -> Self {
        SupervisorMsg(Msg::Shutdown)
    }
}

impl fmt::Debug for SupervisorMsg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match &self.0 {
            Msg::Down(_) => "Down",
            Msg::Started(_) => "Started",
            Msg::Shutdown => "Shutdown",
            Msg::StopTimeout(_) => "StopTimeout",
            Msg::Retry(_) => "Retry",
            Msg::Request(Request::Start(..)) => "StartChild",
            Msg::Request(Request::StartDynamic(..)) => "StartDynamic",
            Msg::Request(Request::Terminate(..)) => "TerminateChild",
            Msg::Request(Request::Restart(..)) => "RestartChild",
            Msg::Request(Request::Delete(..)) => "DeleteChild",
            Msg::Request(Request::Which(..)) => "WhichChildren",
            Msg::Request(Request::WhichChild(..)) => "WhichChild",
            Msg::Request(Request::Spec(..)) => "ChildSpec",
            Msg::Request(Request::Count(..)) => "CountChildren",
        };
        write!(f, "SupervisorMsg::{what}")
    }
}

// SAFETY: every variant holds only `Isolated` values (asserted below): a `Down`, process ids,
// a timer epoch and entry keys, and requests made of child specs (data: initial states,
// function pointers and arguments, see `ChildSpec`'s impl), a `start_dynamic` argument as a
// `Box<dyn IsolatedAny>` (`Isolated` through the supertrait), child references, ids,
// `&'static str`s, and one-shot reply handles whose answers (`ProcessId`s, child infos, specs
// and counts, `SupervisorError`s) are `Isolated` too.
#[diagnostic::do_not_recommend]
unsafe impl Isolated for SupervisorMsg {}

const _: () = {
    fn assert_isolated<T: ?Sized + Isolated>() {}
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<Down>;
    let _ = assert_isolated::<ProcessId>;
    let _ = assert_isolated::<u64>;
    let _ = assert_isolated::<ChildSpec>;
    let _ = assert_isolated::<Box<dyn IsolatedAny>>;
    let _ = assert_isolated::<&'static str>;
    let _ = assert_isolated::<ChildRef>;
    let _ = assert_isolated::<String>;
    let _ = assert_isolated::<Reply<ProcessId>>;
    let _ = assert_isolated::<Reply<()>>;
    let _ = assert_isolated::<ReplyTo<Vec<ChildInfo>>>;
    let _ = assert_isolated::<Reply<ChildInfo>>;
    let _ = assert_isolated::<Reply<ChildSpec>>;
    let _ = assert_isolated::<ReplyTo<ChildCounts>>;
};

#[diagnostic::do_not_recommend]
impl Message for SupervisorMsg {
    const BYPASSES_ADMISSION: bool = true;
}

impl<A: 'static> Handles<SupervisorMsg> for Supervisor<A> {
    fn into_message(msg: SupervisorMsg) -> SupervisorMsg {
        msg
    }

    const BYPASSES_ADMISSION: bool = true;
}

/// Starts a child of a simple-one-for-one `Supervisor<A>`'s template with `arg` (the typed
/// request of [`Addr::start_dynamic`], for async code:
/// `sup.ask(|reply| StartDynamic(arg, reply))`). It answers once the child's `started` hook
/// has succeeded. Only a `Supervisor<A>` accepts a `StartDynamic<A>`.
pub struct StartDynamic<A>(pub A, pub ReplyTo<Result<ProcessId, SupervisorError>>);

// SAFETY: an `A`, `Isolated` by the bound, and a reply handle of an `Isolated` answer.
#[diagnostic::do_not_recommend]
unsafe impl<A: Isolated> Isolated for StartDynamic<A> {}

#[diagnostic::do_not_recommend]
impl<A: Isolated> Message for StartDynamic<A> {
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
    pub fn start_child(&self, spec: ChildSpec) -> Result<ProcessId, SupervisorError> {
        flatten(self.call(|reply| SupervisorMsg::start_child(spec, reply)))
    }

    /// Stops a child in order (waiting for it, within its shutdown policy); it exits
    /// [`ExitReason::Shutdown`](crate::ExitReason). A static child stays known but stopped,
    /// and is not restarted; a dynamic or temporary one is removed. A simple-one-for-one
    /// supervisor's children are named by process id (by id: `WrongStrategy`, as OTP).
    pub fn terminate_child(&self, child: impl Into<ChildRef>) -> Result<(), SupervisorError> {
        flatten(self.call(|reply| SupervisorMsg::terminate_child(child, reply)))
    }

    /// Starts a stopped static child again (refused if it is running), and waits for its
    /// `started` hook; if that fails the child stays stopped and the failure comes back.
    pub fn restart_child(&self, id: &str) -> Result<ProcessId, SupervisorError> {
        flatten(self.call(|reply| SupervisorMsg::restart_child(id, reply)))
    }

    /// Forgets a stopped static child (refused if it is running).
    pub fn delete_child(&self, id: &str) -> Result<(), SupervisorError> {
        flatten(self.call(|reply| SupervisorMsg::delete_child(id, reply)))
    }

    /// The children, in start order, with their state.
    pub fn which_children(&self) -> Result<Vec<ChildInfo>, SupervisorError> {
        self.call(SupervisorMsg::which_children)
            .map_err(unavailable)
    }

    /// One child, by id (or by process id); with [`ChildInfo::addr`] its typed address.
    pub fn which_child(&self, child: impl Into<ChildRef>) -> Result<ChildInfo, SupervisorError> {
        flatten(self.call(|reply| SupervisorMsg::which_child(child, reply)))
    }

    /// A copy of a child's spec, by id (or by process id): OTP's `get_childspec`. The spec
    /// of a temporary child that has started has no start arguments left (OTP reports
    /// `undefined` for them): starting it again fails.
    pub fn child_spec(&self, child: impl Into<ChildRef>) -> Result<ChildSpec, SupervisorError> {
        flatten(self.call(|reply| SupervisorMsg::child_spec(child, reply)))
    }

    /// Child counts and the number of restarts performed.
    pub fn count_children(&self) -> Result<ChildCounts, SupervisorError> {
        self.call(SupervisorMsg::count_children)
            .map_err(unavailable)
    }

    /// Asks for an ordered stop: the children in reverse start order (each within its
    /// shutdown policy, subtrees first), then the supervisor, which exits
    /// [`ExitReason::Shutdown`](crate::ExitReason). Does not wait; monitor the supervisor, or
    /// watch for [`EventKind::Terminated`](crate::EventKind).
    pub fn shutdown(&self) -> Result<(), PostError<SupervisorMsg>> {
        self.post(SupervisorMsg::shutdown())
    }
}

impl<A: Isolated> Addr<Supervisor<A>> {
    /// Starts a child of this simple-one-for-one supervisor's template with `arg`, and waits
    /// for its `started` hook (a failure comes back as [`SupervisorError::StartFailed`]).
    /// `arg` is of the type the [`ChildTemplate`](crate::ChildTemplate) takes, checked at
    /// compile time; it moves into the child.
    pub fn start_dynamic(&self, arg: A) -> Result<ProcessId, SupervisorError> {
        flatten(self.call(|reply| StartDynamic(arg, reply)))
    }
}
