//! The process model: the types a process is made of, which refer to one another.
//!
//! [`Process`] is what a user implements (through `#[process]`), [`Handles`] says which
//! messages it takes, [`Ctx`] is what a handler gets, and [`ProcessCell`] is the live process
//! the runtime keeps: its mailbox, its state, its monitors. The trait names the context, the
//! context holds the cell, the cell holds the state: one module. Their behaviour lives in the
//! modules above: `cell.rs` (the post side), `turn.rs` (running a turn and terminating),
//! `ctx.rs` (what a handler can do).
//!
//! Users get the `Process` and `Handles` impls from `#[process]`, which checks that the state
//! and every message are [`Isolated`](crate::Isolated). `Process` is `unsafe` to implement by
//! hand: a hand-written impl skips that check, so it must say, in a `// SAFETY:` comment, why
//! the state and the messages share no mutable state with any other process (invariant I8).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicU16;
use std::sync::{Arc, Weak};

use once_cell::race::OnceBox;
use std::time::Instant;

use parking_lot::Mutex;

use super::mailbox::Mailbox;
use super::reply::ReplyTo;
use super::trace::Envelope;
use crate::control::Activity;
use crate::group::{GroupShared, Recorder, TurnProbe};
use crate::isolation::Message;
use crate::lifecycle::{Down, ExitReason, Failure, ProcessId};
use crate::principal::Principal;
use crate::sync::UnsafeCell;

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
/// use whirl::request::Sender as _;
/// use whirl::{Ctx, Failure, Handles, Isolated, Message, Process, Runtime};
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
    /// Everything this process accepts: the enum `#[process]` generates, with one variant per
    /// handled type. Each type posted to it is a [`Message`] ([`Handles`] requires it).
    type Message: Send + 'static;

    /// Handles one message. Returning `Err` terminates the process with that failure.
    fn handle(&mut self, msg: Self::Message, ctx: &mut Ctx<Self>) -> Result<(), Failure>;

    /// Runs once, on a worker, before the first message. Returning `Err` fails the process.
    ///
    /// It may suspend as an async handler does (`#[started] async fn` makes it do so): the
    /// future it hands over is the process's first turn, polled before any message, and the
    /// start is done when it completes; its failure fails the process as an `Err` here would.
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

    /// A message left in the inbox of a terminated process, as the value that was posted, with
    /// its type's name: what a [`DeadLetter`](crate::DeadLetter) holds. `#[process]` unwraps
    /// its message enum's variant, so a dead letter downcasts to the posted type; the default
    /// boxes the whole `Message`.
    #[doc(hidden)]
    fn __dead_letter(msg: Self::Message) -> (&'static str, Box<dyn std::any::Any + Send>) {
        (std::any::type_name::<Self::Message>(), Box::new(msg))
    }
}

/// "Process `Self` has a handler for messages of type `M`": how `M` becomes a
/// `Self::Message`.
///
/// `M` must be a [`Message`], so everything a process receives is [`Isolated`](crate::Isolated).
/// It is safe to implement: the `unsafe impl Process` it requires carries the isolation promise,
/// and `M` is `Isolated` by its bound.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no handler for `{M}`",
    label = "`{Self}` cannot receive `{M}`",
    note = "add a `#[handle]` method taking `{M}` to `{Self}`'s `#[process]` impl block"
)]
pub trait Handles<M: Message>: Process {
    /// Wraps `msg` into the process's message enum.
    fn into_message(msg: M) -> Self::Message;

    /// Whether posting `M` skips the group's admission control. `#[process]` forwards
    /// [`Message::BYPASSES_ADMISSION`]; the default is `false`.
    const BYPASSES_ADMISSION: bool = false;

    /// The estimated cost of handling `msg`, seen by the group's message predicate
    /// ([`Offer::cost`](crate::admission::Offer::cost)). `#[process]` forwards
    /// [`Message::cost`]; the default is 1.
    fn cost(msg: &M) -> u64 {
        let _ = msg;
        1
    }
}

/// "Process `Self` answers `M` with a [`Self::Reply`](Answers::Reply)": its handler for `M`
/// returns a value, and that value is the reply to [`call`](crate::request::Sender::call) and
/// [`ask`](crate::request::Sender::ask) on an [`Addr`](crate::Addr).
///
/// `#[process]` implements it for every handler that returns something other than `()`: a
/// [`Reply`](crate::Reply) `T` answers `T`, and `Result<T, E>` answers `T` (an `Err` fails the
/// process, and the caller gets [`CallError::NoReply`](crate::CallError::NoReply)).
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not answer this message: its handler returns nothing",
    label = "`call` and `ask` with a plain message need a handler that returns the answer",
    note = "make the message's `#[handle]` method in `{Self}` return the answer (`-> u64`, `-> Result<u64, Failure>`...), or put a `ReplyTo` in the message and send it with `request_with(|reply| ...)`"
)]
pub trait Answers<M: Message>: Handles<M> {
    /// The value the handler answers with.
    type Reply: crate::isolation::Isolated;

    /// Wraps `msg` and the handle its answer is sent through into the process's message enum.
    fn into_request(msg: M, reply: ReplyTo<Self::Reply>) -> Self::Message;
}

/// The handler's view of the runtime: its own address, spawning, termination, monitors,
/// timers and its principal.
pub struct Ctx<P: Process> {
    pub(super) cell: Arc<ProcessCell<P>>,
    pub(super) exit: Option<ExitReason>,
    /// The recorder of the worker running this turn (`group/task.rs`), where lock waits are
    /// recorded. Valid for the whole turn: it is the `&Recorder` the worker passed to
    /// `Runnable::run`, and a `Ctx` lives only inside that turn (handlers get it by `&mut`)
    /// (invariant I10).
    pub(super) recorder: *const Recorder,
    /// The turn's probe, where `#[process]`'s dispatch publishes each message's type: kept
    /// here too, so that costs one store and no load (same validity as `recorder`).
    ///
    /// Both are null in the context an async handler's future owns ([`Ctx::detached`]): it
    /// outlives the turn that created it.
    pub(super) probe: *const TurnProbe,
    /// An async handler's future, handed over by the dispatch ([`Ctx::__suspend`]) for the
    /// turn to poll once the synchronous `handle` has returned.
    pub(super) pending: Option<PendingHandler>,
    /// Set by [`Ctx::move_to`]: the turn moves the process once the handler returns.
    pub(super) moving: bool,
    /// Set by [`Ctx::end_turn`]: the turn ends once the handler returns.
    pub(super) end_turn: bool,
}

/// What an async handler's dispatch leaves in the [`Ctx`]: the message type it handles, and its
/// future, the borrow of the state erased (I13).
pub(super) struct PendingHandler {
    pub(super) message: fn() -> &'static str,
    pub(super) future: HandlerFuture<'static>,
}

/// The future of an async handler, borrowing the process state for `'a`: it resolves to the
/// exit the handler asked for, if any. Stored in the body with `'a` erased to `'static` (I13).
#[doc(hidden)]
pub type HandlerFuture<'a> = Pin<Box<dyn Future<Output = Option<ExitReason>> + Send + 'a>>;

/// A process suspended in an async handler: the handler's future, polled by whoever holds the
/// token, and what reports need to know about it.
pub(super) struct Suspended {
    pub(super) future: HandlerFuture<'static>,
    /// The type of the message being handled.
    pub(super) message: fn() -> &'static str,
    /// The message's stamp (enqueue time and cost), for the completion's statistics.
    pub(super) meta: u32,
    /// When the handler began.
    pub(super) since: Instant,
    /// Wakes the process: its cell, as a [`std::task::Wake`].
    pub(super) waker: std::task::Waker,
    /// Whether this is the `started` hook's future rather than a handler's: it has no message,
    /// and its completion is the process's start.
    pub(super) starting: bool,
}

// SAFETY: a `Ctx` is handed to user code only by `&mut`, on the thread running the turn, so a
// turn's context (whose `recorder` and `probe` point into that thread's worker) never leaves
// the turn (I10); a detached context, which the future of an async handler owns and which
// moves between workers with it, has null pointers. Everything else in it is `Send`.
unsafe impl<P: Process> Send for Ctx<P> {}

/// Something that wants to hear when a process terminates.
pub(crate) trait Watcher: Send + Sync + 'static {
    fn notify_down(self: Arc<Self>, notice: Down);

    /// The watching process, if the watcher is one (a callback is not).
    fn watcher_id(&self) -> Option<ProcessId> {
        None
    }
}

/// Bookkeeping that outsiders touch: monitors, kill requests, the exit reason. Most processes
/// are never monitored or killed, so it is allocated on first use, which keeps an idle
/// process small (invariant I6); behind a plain lock, since it is off the message path.
#[derive(Default)]
pub(super) struct Control {
    pub(super) watchers: Vec<Weak<dyn Watcher>>,
    pub(super) pending_kill: Option<ExitReason>,
    pub(super) exit: Option<ExitReason>,
    /// Called once the `started` hook has returned `Ok` (a supervisor's synchronous start).
    pub(super) on_started: Option<OnStarted>,
    /// Where the state and the queue go instead of the `terminated` hook and the dead-letter
    /// sink (`Addr::hand_over`): a `handover::Receiver<P>`, erased because `Control` is not
    /// generic.
    pub(super) hand_over: Option<Box<dyn std::any::Any + Send>>,
    /// The group the process was asked to move to (`relocate.rs`), until the turn that moves
    /// it; counted as an activation until then, like a kill request.
    pub(super) move_request: Option<Arc<GroupShared>>,
    /// Where the process went when it moved: an `Arc<ProcessCell<P>>`, erased because
    /// `Control` is not generic. Set once, before the mailbox is marked moved.
    pub(super) moved_to: Option<Box<dyn std::any::Any + Send>>,
    /// The cells this process moved from, kept alive while it lives: timers and callbacks hold
    /// them weakly and reach the process through them. Released when it terminates.
    pub(super) moved_from: Vec<Arc<dyn std::any::Any + Send + Sync>>,
    /// Where the messages left in the inbox go when the process terminates, instead of the
    /// dead-letter sink (a router re-routes them to the member's replacement): set at spawn
    /// ([`spawn_with_exit_hook`](super::spawn_with_exit_hook)), kept for stragglers.
    pub(super) on_exit: Option<OnExit>,
    /// The processes this one monitors, one entry per registration (`activity.rs`).
    pub(super) monitoring: Vec<ProcessId>,
    /// Where it sits in a supervision tree, if a supervisor started it (boxed: one word in
    /// every control block, I6).
    pub(super) supervision: Option<Box<crate::control::Supervision>>,
}

/// What [`spawn_with_exit_hook`](super::spawn_with_exit_hook) runs each time a terminated
/// process's inbox is drained (once at termination, with the reason, even if the inbox was
/// empty; again for any post that raced with the end): it takes the messages it can place and
/// returns the rest, which go to the dead-letter sink.
pub(crate) type OnExit = Arc<
    dyn Fn(
            &ExitReason,
            Vec<crate::lifecycle::QueuedMessage>,
        ) -> Vec<crate::lifecycle::QueuedMessage>
        + Send
        + Sync,
>;

/// What [`ProcessCell::set_on_started`] runs, given the process's id.
pub(crate) type OnStarted = Box<dyn FnOnce(ProcessId) + Send>;

/// What only the token holder touches.
///
/// The turn reaches each field through its own reference, never through a `&mut Body`: a
/// suspended handler's future holds a reference to `state` across turns (I13), which a
/// reference to the whole body would invalidate.
pub(super) struct Body<P> {
    /// Declared before `state`, so that a future which borrows the state is dropped first
    /// (I13).
    pub(super) suspended: Option<Box<Suspended>>,
    pub(super) state: Option<P>,
}

/// The parts of a process cell that most processes never use: allocated on first use.
#[derive(Default)]
pub(super) struct Rare {
    /// The highest priority among the principals its queued messages were posted on behalf
    /// of, plus one (0: none), for schedulers (priority inheritance, `cell.rs`). Written only
    /// by posts on behalf of a principal to a group with a scheduler, and reset by the token
    /// holder when the inbox drains.
    pub(super) inherited: AtomicU16,
    /// Watchers, exit, hooks, hand-over and move state.
    pub(super) control: Mutex<Control>,
}

/// A process: its mailbox, its group, and the body only the token holder touches.
///
/// Layout (`repr(C)`, declaration order). Senders write the mailbox's first words on every post
/// while the worker running the process writes its state on every message; if the two shared a
/// cache line, each message would move the line between cores twice. So the mailbox comes
/// first, the fields that are only read on the message path (group, principal, id, control)
/// sit between, and the body comes last, at least a cache line past the last word a post
/// writes, whatever address the allocator returns
/// ([`ProcessCell::BODY_A_LINE_PAST_POST_WORDS`] checks it in every build). Left to itself,
/// the compiler put the state 32 bytes from the scheduling word, and streaming speed then
/// depended on where the allocator placed the cell (1.6× between builds that differed only in
/// an unrelated struct's size). Padding the cell to whole lines would also isolate it from its
/// neighbours, but costs up to 64 bytes per process (I6).
#[repr(C)]
pub(crate) struct ProcessCell<P: Process> {
    pub(crate) mailbox: Mailbox<Envelope<P::Message>>,
    pub(crate) group: Arc<GroupShared>,
    pub(crate) principal: Option<Principal>,
    pub(super) id: ProcessId,
    /// What most processes never need, allocated the first time one part is (one word here
    /// instead of three: bytes per idle process, I6).
    pub(super) rare: OnceBox<Rare>,
    /// Its counters for observers (`activity.rs`): written by the token holder once per turn,
    /// beside the body it writes anyway.
    pub(super) activity: Activity,
    pub(super) body: UnsafeCell<Body<P>>,
}

// SAFETY: `body` is only accessed by the holder of the mailbox's scheduling token, one thread
// at a time (see `mailbox.rs`), and `P: Send`; everything else is `Sync` on its own. (I9)
unsafe impl<P: Process> Sync for ProcessCell<P> {}
