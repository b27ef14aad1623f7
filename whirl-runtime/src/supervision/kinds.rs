//! The plain vocabulary of supervision: strategies, restart types, shutdown policies, child
//! kinds, auto-shutdown, and how a child is named in requests. Every other supervision module
//! uses it; it uses only `lifecycle` and `isolation`.

use std::fmt;
use std::time::Duration;

use crate::isolation::Isolated;
use crate::lifecycle::ProcessId;

/// How a supervisor reacts when a child must be restarted (OTP's `strategy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RestartStrategy {
    /// Restart only the child that terminated.
    OneForOne,
    /// Stop every other child (in reverse start order), then restart them all in start order.
    OneForAll,
    /// Stop the children started after the one that terminated (in reverse order), then
    /// restart it and them in start order.
    RestForOne,
    /// Dynamic children, all made from one [`ChildTemplate`](super::ChildTemplate) and started on demand with
    /// [`Addr::start_dynamic`](crate::Addr::start_dynamic); restarted one-for-one.
    SimpleOneForOne,
}

/// When a terminated child is restarted (OTP's `restart`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Restart {
    /// Always restarted, whatever the exit reason.
    Permanent,
    /// Restarted only after a failure; a normal exit (or a shutdown) leaves it stopped.
    Transient,
    /// Never restarted, not even when a sibling's failure restarts the others under
    /// one-for-all or rest-for-one; removed from the supervisor when it terminates.
    Temporary,
}

/// How a child is stopped (OTP's `shutdown`).
///
/// Whirl never interrupts a handler: stopping a worker is
/// [`Addr::exit`](crate::Addr::exit)`(ExitReason::Shutdown)`, which takes effect at the child's
/// next message boundary (a handler already running finishes first; its `terminated` hook
/// runs). There is no "forced" kill, so the timeout bounds how long the *supervisor* waits:
/// when it expires the supervisor reports [`EventKind::ShutdownTimedOut`](super::EventKind),
/// stops waiting and treats the child as gone. The exit request stays in place, so the child
/// terminates as soon as its running handler returns; until then it is an orphan that the
/// supervisor no longer tracks (a restart may run beside it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shutdown {
    /// Wait at most this long for the child to terminate (workers default to 5 s, as in OTP).
    Timeout(Duration),
    /// Wait as long as it takes (the default for supervisors, whose subtree stops in order).
    Infinity,
}

/// When a supervisor shuts itself down because its *significant* children have terminated
/// on their own (OTP 24's `auto_shutdown`; see [`ChildSpec::significant`](super::ChildSpec::significant)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AutoShutdown {
    /// Never (the default); significant children are then a spec error.
    #[default]
    Never,
    /// As soon as any significant child terminates and is not restarted.
    AnySignificant,
    /// Once every significant child has terminated and none is restarted.
    AllSignificant,
}

/// Whether a child is a worker or a supervisor (OTP's `type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChildKind {
    /// Any process.
    Worker,
    /// A [`Supervisor`](super::Supervisor); it is stopped by an ordered shutdown of its own subtree.
    Supervisor,
}

// SAFETY: plain `Copy` enums; `Shutdown` holds at most a `Duration`. (I8)
#[diagnostic::do_not_recommend]
unsafe impl Isolated for RestartStrategy {}
// SAFETY: as above. (I8)
#[diagnostic::do_not_recommend]
unsafe impl Isolated for Restart {}
// SAFETY: as above. (I8)
#[diagnostic::do_not_recommend]
unsafe impl Isolated for Shutdown {}
// SAFETY: as above. (I8)
#[diagnostic::do_not_recommend]
unsafe impl Isolated for ChildKind {}
// SAFETY: as above. (I8)
#[diagnostic::do_not_recommend]
unsafe impl Isolated for AutoShutdown {}

/// A child, by its spec's id or by its running process id (dynamic children share their
/// template's id, so they are named by process id).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ChildRef {
    /// By spec id.
    Id(String),
    /// By the running incarnation's process id.
    Pid(ProcessId),
}

// SAFETY: a `String` or a `ProcessId`, owned data. (I8)
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
