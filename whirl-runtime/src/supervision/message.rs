//! The supervisor's messages: [`SupervisorMsg`] (opaque; built by its constructors) and
//! [`StartDynamic`]. The client API on `Addr<Supervisor<A>>` is `api.rs`.

use std::fmt;

use crate::isolation::{Isolated, Message};
use crate::lifecycle::{Down, ProcessId};
use crate::process::ReplyTo;

use super::error::SupervisorError;
use super::info::{ChildCounts, ChildInfo};
use super::kinds::ChildRef;
use super::spec::{ChildSpec, IsolatedAny};

/// A message to a [`Supervisor`](super::Supervisor). Opaque: use the blocking methods on `Addr<Supervisor<A>>`,
/// or build requests with the constructors for async code
/// (`sup.request_with(SupervisorMsg::count_children).ask()`; [`StartDynamic`] for `start_dynamic`).
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
    /// The delay of the delayed restart with this token is over (`delayed.rs`).
    RestartDue(u64),
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
            Msg::RestartDue(_) => "RestartDue",
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
// a timer epoch, entry keys and restart tokens, and requests made of child specs (data:
// initial states, function pointers and arguments, see `ChildSpec`'s impl), a
// `start_dynamic` argument as a `Box<dyn IsolatedAny>` (`Isolated` through the supertrait),
// child references, ids,
// `&'static str`s, and one-shot reply handles whose answers (`ProcessId`s, child infos, specs
// and counts, `SupervisorError`s) are `Isolated` too. (I8)
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

/// Starts a child of a simple-one-for-one `Supervisor<A>`'s template with `arg` (the typed
/// request of [`Addr::start_dynamic`](crate::Addr::start_dynamic), for async code:
/// `sup.request_with(|reply| StartDynamic(arg, reply)).ask()`). It answers once the child's `started` hook
/// has succeeded. Only a `Supervisor<A>` accepts a `StartDynamic<A>`.
pub struct StartDynamic<A>(pub A, pub ReplyTo<Result<ProcessId, SupervisorError>>);

// SAFETY: an `A`, `Isolated` by the bound, and a reply handle of an `Isolated` answer. (I8)
#[diagnostic::do_not_recommend]
unsafe impl<A: Isolated> Isolated for StartDynamic<A> {}

#[diagnostic::do_not_recommend]
impl<A: Isolated> Message for StartDynamic<A> {
    const BYPASSES_ADMISSION: bool = true;
}
