//! Processes: isolated sequential state, a FIFO inbox, and the code that handles its messages
//! one at a time.
//!
//! From the bottom up:
//!
//! * `inbox.rs`, `mailbox.rs`: the lock-free MPSC inbox and the scheduling token over it (at
//!   most one thread runs a process at a time: invariant I1).
//! * `model.rs`: the types a process is made of, which refer to one another: [`Process`],
//!   [`Handles`], [`Answers`], [`Ctx`] and the cell the runtime keeps.
//! * `cell.rs`: the post side — delivering, scheduling, monitors, dead letters.
//! * `error.rs`, `reply.rs`: what a post or a call returns; one-shot reply channels.
//! * `request.rs`: [`Sender`], [`Deliver`], [`Answering`] and the [`Request`] builder: one way to send,
//!   with every option, to any kind of address.
//! * `addr.rs`: [`Addr`] and [`Recipient`], the local addresses.
//! * `turn.rs`: running a turn and terminating; where a cell becomes a group's task.
//! * `activity.rs`: what a process tells observers: its counters (written once per turn),
//!   monitors, supervisor, and its failure in the runtime's log.
//! * `spawn.rs`: creating processes and placing them in groups.
//! * `trace.rs`: the span a message was posted from, carried to the span it is handled in.
//! * `ctx.rs`: what a handler can do.
//! * `handover.rs`, `relocate.rs`: a process leaving the runtime (migration), or moving to
//!   another group of it.
//!
//! Layer 7: uses `group` and everything below it.

mod activity;
mod addr;
mod cell;
mod ctx;
mod error;
mod handover;
mod inbox;
mod mailbox;
mod model;
mod relocate;
mod reply;
mod request;
mod spawn;
mod trace;
mod turn;
mod watch;

pub use addr::{Addr, Recipient};
pub use error::{CallError, PostError, SpawnError, SpawnRefusal};
pub use handover::{HandOverError, HandedOver};
#[doc(hidden)]
pub use model::HandlerFuture;
pub(crate) use model::OnExit;
pub use model::{Answers, Ctx, Handles, Process};
pub(crate) use model::{OnStarted, Watcher};
pub use reply::ReplyTo;
#[doc(hidden)]
pub use reply::{answer, into_handler_result, HandlerOutput};
pub use request::{Answering, Ask, Deliver, Plain, Request, Sender, WithReply, DEFAULT_TIMEOUT};
pub use spawn::Spawner;
pub(crate) use spawn::{spawn_watched, spawn_with_exit_hook, Placement};
pub use watch::Watch;

#[cfg(loom)]
pub(crate) use mailbox::Suspend;
#[cfg(all(test, loom))]
pub(crate) use mailbox::{AfterPush, AfterRelease, Mailbox};
