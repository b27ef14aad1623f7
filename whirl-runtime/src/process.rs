//! What a process is: its state type, its message enum, its handlers and lifecycle hooks.
//!
//! Users get these impls from `#[process]`, which checks that the state and every message are
//! [`Isolated`](crate::Isolated). Both traits are `unsafe` to implement by hand: a hand-written
//! impl skips that check, so it must say, in a `// SAFETY:` comment, why the state and the
//! messages share no mutable state with any other process.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use crate::ctx::Ctx;

/// A process: private state plus the code that handles its messages, one at a time.
///
/// The runtime guarantees that `handle` is never called on two threads at once for the same
/// process and that messages arrive in FIFO order of posting, so a process needs no locks.
///
/// # Safety
///
/// Implementing `Process` by hand promises what `#[process]` checks: every field of the state is
/// [`Isolated`](crate::Isolated) (or the process declares [`Process::SHARES_STATE`] and confines
/// itself to a group that shares state), and [`Process::Message`] holds only `Isolated` values.
/// A process that breaks it can reach memory another process mutates, and every guarantee of
/// sequential, lock-free handling is gone.
///
/// ```
/// use whirl_runtime::{Ctx, Failure, Handles, Isolated, Message, Process, Runtime};
///
/// struct Counter { total: u64 }
/// struct Add(u64);
/// // SAFETY: a `u64` is owned data. (Real code writes `#[derive(Message)]`.)
/// unsafe impl Isolated for Add {}
/// impl Message for Add {}
///
/// // SAFETY: the state is one `u64` and the only message is `Add`, both owned data.
/// // (Real code writes `#[process]`, which checks this.)
/// unsafe impl Process for Counter {
///     type Message = Add;
///     fn handle(&mut self, Add(n): Add, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
///         self.total += n;
///         Ok(())
///     }
/// }
///
/// // Which types may be posted to a `Counter`, and how they become its `Message`.
/// impl Handles<Add> for Counter {
///     fn into_message(msg: Add) -> Add {
///         msg
///     }
/// }
///
/// let rt = Runtime::new();
/// let counter = rt.spawn(Counter { total: 0 });
/// counter.post(Add(2)).unwrap();
/// rt.block_until_idle();
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a process",
    label = "only a process's state can be spawned",
    note = "declare it with `#[process]` on the type and on the impl block of its handlers: the macro checks that the state shares no mutable state with other processes",
    note = "a hand-written `unsafe impl Process` must say in a `// SAFETY:` comment why the state and the messages are `Isolated`"
)]
pub unsafe trait Process: Sized + Send + 'static {
    /// Everything this process accepts, usually an enum with one variant per handled type.
    type Message: Send + 'static;

    /// Handles one message. Returning `Err` terminates the process with that failure.
    fn handle(&mut self, msg: Self::Message, ctx: &mut Ctx<Self>) -> Result<(), Failure>;

    /// Runs once, on a worker, before the first message. Returning `Err` fails the process.
    fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        let _ = ctx;
        Ok(())
    }

    /// Runs exactly once when the process terminates, whatever the cause; the place to
    /// release sockets and other resources.
    fn terminated(&mut self, reason: &ExitReason) {
        let _ = reason;
    }

    /// Whether this is a *system* process, and how a termination notice becomes one of its
    /// messages.
    ///
    /// The default (`None`) makes the process a non-system one: when a process it monitors
    /// *fails*, it fails too, and normal exits are dropped. Returning `Some` makes it a system
    /// process: every notice arrives as an ordinary message, in order with the others.
    fn down_message(notice: Down) -> Option<Self::Message> {
        let _ = notice;
        None
    }

    /// The group this process runs in when spawned without naming one (`Runtime::spawn`,
    /// `Ctx::spawn`), by name. A group of that name must have been built; if none exists the
    /// process fails as it is spawned, saying so. `None` (the default): the runtime's default
    /// group, or the parent's group for a child.
    const GROUP: Option<&'static str> = None;

    /// Set (with the reason) for a process that knowingly shares mutable state with other
    /// processes: it may only run in a group built with
    /// [`GroupBuilder::shares_state`](crate::GroupBuilder::shares_state), and if
    /// [`Process::GROUP`] names a group, only in that one. Spawned anywhere else, it fails at
    /// once with a failure that says why. `#[process(unsafe(shares_state = "..."))]` sets it.
    const SHARES_STATE: Option<&'static str> = None;
}

/// "Process `Self` has a handler for messages of type `M`": how `M` becomes a
/// `Self::Message`.
///
/// `M` must be a [`Message`](crate::Message), so everything a process receives is
/// [`Isolated`](crate::Isolated). It is safe to implement: the `unsafe impl Process` it requires carries the isolation
/// promise, and `M` is `Isolated` by its bound.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no handler for `{M}`",
    label = "`{Self}` cannot receive `{M}`",
    note = "add a `#[handle]` method taking `{M}` to `{Self}`'s `#[process]` impl block"
)]
pub trait Handles<M: crate::isolated::Message>: Process {
    /// Wraps `msg` into the process's message enum.
    fn into_message(msg: M) -> Self::Message;

    /// Whether posting `M` skips the group's admission control. `#[process]` forwards
    /// [`Message::BYPASSES_ADMISSION`](crate::Message::BYPASSES_ADMISSION); the default is
    /// `false`.
    const BYPASSES_ADMISSION: bool = false;

    /// The estimated cost of handling `msg`, seen by the group's message predicate
    /// ([`Offer::cost`](crate::Offer::cost)). `#[process]` forwards
    /// [`Message::cost`](crate::Message::cost); the default is 1.
    fn cost(msg: &M) -> u64 {
        let _ = msg;
        1
    }
}

/// A runtime-unique process identifier, stable for the process's whole life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProcessId(pub(crate) u64);

impl ProcessId {
    /// The raw number, for logs and maps.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ProcessId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{}>", self.0)
    }
}

/// Why a process terminated.
///
/// Non-exhaustive: match the variants you act on and treat the rest as "not a failure"
/// with [`ExitReason::is_failure`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExitReason {
    /// `complete()`, or the runtime shutting down: not an error.
    Normal,
    /// Stopped by its supervisor (OTP's `shutdown`): not an error, and not the process's own
    /// doing. A supervisor stops its children with it, and exits with it after an ordered
    /// shutdown; a transient child stopped this way is not restarted.
    Shutdown,
    /// Anything else: `fail()`, a handler `Err`, a panic, a linked failure.
    Failed(Failure),
}

impl ExitReason {
    /// Whether this is a failure (a *non-normal* termination in the paper's words);
    /// `Normal` and `Shutdown` are not.
    pub fn is_failure(&self) -> bool {
        matches!(self, ExitReason::Failed(_))
    }
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExitReason::Normal => f.write_str("normal"),
            ExitReason::Shutdown => f.write_str("shutdown"),
            ExitReason::Failed(failure) => write!(f, "failed: {failure}"),
        }
    }
}

/// What made a process fail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// The process called `fail()` or a handler returned `Err`.
    Error,
    /// A handler or hook panicked; the panic was contained.
    Panic,
    /// A process this one monitors failed, and this one is not a system process.
    Linked(ProcessId),
}

/// A process failure: a kind and a human-readable reason.
///
/// Any `std::error::Error` converts into it, so handlers can use `?`.
#[derive(Clone, PartialEq, Eq)]
pub struct Failure {
    kind: FailureKind,
    reason: Arc<str>,
}

impl Failure {
    /// A failure with the given reason.
    pub fn new(reason: impl Into<Cow<'static, str>>) -> Self {
        Failure {
            kind: FailureKind::Error,
            reason: Arc::from(reason.into().as_ref()),
        }
    }

    pub(crate) fn with_kind(kind: FailureKind, reason: impl AsRef<str>) -> Self {
        Failure {
            kind,
            reason: Arc::from(reason.as_ref()),
        }
    }

    /// What caused it.
    pub fn kind(&self) -> &FailureKind {
        &self.kind
    }

    /// The reason, as given or as the panic payload said.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Failure({:?}: {:?})", self.kind, &*self.reason)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            FailureKind::Error => f.write_str(&self.reason),
            FailureKind::Panic => write!(f, "panicked: {}", self.reason),
            FailureKind::Linked(id) => write!(f, "linked process {id} failed: {}", self.reason),
        }
    }
}

impl<E: std::error::Error> From<E> for Failure {
    fn from(err: E) -> Self {
        Failure::new(err.to_string())
    }
}

/// The termination notice a monitoring process receives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Down {
    /// The process that terminated.
    pub id: ProcessId,
    /// Why.
    pub reason: ExitReason,
}
