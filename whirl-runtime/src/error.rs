//! Errors returned to senders. Every error that concerns a message carries it back.

use std::fmt;

/// Why a post failed. The message comes back inside, so nothing is lost.
#[derive(PartialEq, Eq, thiserror::Error)]
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
pub enum CallError<M> {
    /// The request could not be posted; it comes back inside.
    #[error("the request could not be posted: {0}")]
    Post(PostError<M>),
    /// The process dropped the reply handle (or terminated) without answering.
    #[error("the process dropped the reply handle without answering")]
    NoReply,
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
            CallError::NoReply => f.write_str("NoReply"),
            CallError::Timeout => f.write_str("Timeout"),
            CallError::WouldBlockWorker(_) => {
                write!(f, "WouldBlockWorker({})", std::any::type_name::<M>())
            }
        }
    }
}
