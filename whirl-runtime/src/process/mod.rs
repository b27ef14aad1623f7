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
//! * `addr.rs`: [`Addr`] and [`Recipient`], how anyone posts and calls.
//! * `turn.rs`: running a turn and terminating; where a cell becomes a group's task.
//! * `spawn.rs`: creating processes and placing them in groups.
//! * `ctx.rs`: what a handler can do.
//! * `handover.rs`, `relocate.rs`: a process leaving the runtime (migration), or moving to
//!   another group of it.
//!
//! Layer 7: uses `group` and everything below it.

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
mod spawn;
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
pub(crate) use reply::reply_channel;
pub use reply::ReplyTo;
#[doc(hidden)]
pub use reply::{answer, into_handler_result, HandlerOutput};
pub(crate) use spawn::{spawn, spawn_watched, spawn_with_exit_hook, try_spawn, Placement};
pub use watch::Watch;

#[cfg(loom)]
pub(crate) use mailbox::Suspend;
#[cfg(all(test, loom))]
pub(crate) use mailbox::{AfterPush, AfterRelease, Mailbox};
