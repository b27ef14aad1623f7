//! Errors returned to senders. Every error that concerns a message carries it back.

use std::fmt;

use crate::isolation::Isolated;
use crate::lifecycle::Unanswered;

/// Why a post failed. The message comes back inside, so nothing is lost.
#[derive(PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PostError<M> {
    /// The receiving process has terminated.
    #[error("the receiving process has terminated")]
    Terminated(M),
    /// The receiving group's message predicate rejected the message (overload).
    #[error("the receiving group rejected the message")]
    Rejected(M),
}

impl<M> PostError<M> {
    /// The message that could not be delivered.
    pub fn into_message(self) -> M {
        match self {
            PostError::Terminated(m) | PostError::Rejected(m) => m,
        }
    }

    /// The message that could not be delivered, by reference.
    pub fn message(&self) -> &M {
        match self {
            PostError::Terminated(m) | PostError::Rejected(m) => m,
        }
    }

    /// Whether the receiver is gone (as opposed to overloaded).
    pub fn is_terminated(&self) -> bool {
        matches!(self, PostError::Terminated(_))
    }

    /// Keeps the kind of failure, replacing the message.
    pub fn map<N>(self, f: impl FnOnce(M) -> N) -> PostError<N> {
        match self {
            PostError::Terminated(m) => PostError::Terminated(f(m)),
            PostError::Rejected(m) => PostError::Rejected(f(m)),
        }
    }
}

impl<M> fmt::Debug for PostError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self {
            PostError::Terminated(_) => "Terminated",
            PostError::Rejected(_) => "Rejected",
        };
        write!(f, "{kind}({})", std::any::type_name::<M>())
    }
}

/// Why a request/reply call from outside the runtime got no answer.
#[derive(PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError<M> {
    /// The request could not be posted; it comes back inside.
    #[error("the request could not be posted: {0}")]
    Post(PostError<M>),
    /// The request was delivered, but no answer will come; the reason says why.
    #[error("no answer will come: {0}")]
    NoReply(Unanswered),
    /// No answer arrived within the time limit.
    #[error("no reply arrived within the time limit")]
    Timeout,
    /// A blocking call was made from inside a process handler, where it would stall a worker
    /// and could deadlock the group. Post a message carrying an `Addr` instead.
    #[error("blocking call from inside a process handler; post a message carrying a reply address instead")]
    WouldBlockWorker(M),
}

impl<M> fmt::Debug for CallError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Post(e) => write!(f, "Post({e:?})"),
            CallError::NoReply(why) => write!(f, "NoReply({why:?})"),
            CallError::Timeout => f.write_str("Timeout"),
            CallError::WouldBlockWorker(_) => {
                write!(f, "WouldBlockWorker({})", std::any::type_name::<M>())
            }
        }
    }
}

/// Why a process could not be spawned where it was asked to run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnRefusal {
    /// The process declares a group ([`Process::GROUP`](crate::Process::GROUP)) that the
    /// runtime does not have.
    #[error(
        "process `{process}` declares group `{group}`, but the runtime has no group of that \
         name; build it with `rt.group(\"{group}\")` first"
    )]
    NoSuchGroup {
        /// The process type.
        process: &'static str,
        /// The group it declares.
        group: &'static str,
    },
    /// A process that shares state was spawned into a group that does not declare shared
    /// state.
    #[error(
        "process `{process}` shares state (\"{reason}\") but was spawned into group `{group}`, \
         which does not declare shared state (`GroupBuilder::shares_state`)"
    )]
    SharesStateOutsideItsGroup {
        /// The process type.
        process: &'static str,
        /// Why it shares state.
        reason: &'static str,
        /// Where it was spawned.
        group: String,
    },
    /// A process that shares state and names its group was spawned into another one.
    #[error(
        "process `{process}` shares state (\"{reason}\") and is confined to group `{wanted}`, \
         but was spawned into group `{group}`"
    )]
    SharesStateInAnotherGroup {
        /// The process type.
        process: &'static str,
        /// Why it shares state.
        reason: &'static str,
        /// The group it is confined to.
        wanted: &'static str,
        /// Where it was spawned.
        group: String,
    },
    /// The runtime has shut down.
    #[error("spawned after the runtime shut down")]
    ShutDown,
}

/// A refused spawn ([`Spawner::try_spawn`](crate::Spawner::try_spawn)): why, and the process's
/// state, handed back untouched.
#[derive(thiserror::Error)]
#[error("{refusal}")]
pub struct SpawnError<P> {
    refusal: SpawnRefusal,
    state: P,
}

impl<P> SpawnError<P> {
    pub(crate) fn new(refusal: SpawnRefusal, state: P) -> Self {
        SpawnError { refusal, state }
    }

    /// Why the spawn was refused.
    pub fn refusal(&self) -> &SpawnRefusal {
        &self.refusal
    }

    /// The state that was not spawned.
    pub fn into_state(self) -> P {
        self.state
    }
}

impl<P> fmt::Debug for SpawnError<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpawnError")
            .field("refusal", &self.refusal)
            .field("state", &std::any::type_name::<P>())
            .finish()
    }
}

// SAFETY: errors that carry an undelivered message back; isolated when the message is
// (invariant I8).
unsafe impl<M: Isolated> Isolated for PostError<M> {}
// SAFETY: as above. (I8)
unsafe impl<M: Isolated> Isolated for CallError<M> {}
