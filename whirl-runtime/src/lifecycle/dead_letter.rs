//! The dead-letter sink: where messages go that were accepted but can no longer be handled,
//! because their process terminated first. Nothing posted is dropped silently (invariant I3).

use std::any::Any;
use std::fmt;

use super::{ExitReason, ProcessId};

/// A message that was queued for a process that terminated before handling it.
///
/// It holds the value that was posted: a message to a `#[process]` process comes back as its
/// own type (`Ping`, not the generated message enum), so [`downcast`](DeadLetter::downcast)
/// recovers it without naming the enum.
///
/// ```
/// use whirl::prelude::*;
/// use whirl::DeadLetter;
///
/// #[derive(Message, Debug)]
/// struct Order(u64);
///
/// let rt = Runtime::builder()
///     .dead_letters(|letter: DeadLetter| match letter.downcast::<Order>() {
///         Ok(Order(n)) => eprintln!("order {n} was not handled; retrying it elsewhere"),
///         Err(other) => eprintln!("dead letter: {other:?}"),
///     })
///     .build().expect("the runtime starts");
/// # drop(rt);
/// ```
pub struct DeadLetter {
    to: ProcessId,
    reason: ExitReason,
    message: QueuedMessage,
}

/// A dead letter serializes as `{"to": ..., "reason": ..., "message_type": ...}`: the message
/// itself is a value of any type, kept for [`DeadLetter::downcast`], not serialized.
#[cfg(feature = "serde")]
impl serde::Serialize for DeadLetter {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("DeadLetter", 3)?;
        s.serialize_field("to", &self.to)?;
        s.serialize_field("reason", &self.reason)?;
        s.serialize_field("message_type", self.message.type_name)?;
        s.end()
    }
}

impl DeadLetter {
    /// A letter for `to`, holding a `message` already unwrapped to the value that was posted
    /// (`Process::__dead_letter`), named `type_name`.
    pub(crate) fn new(
        to: ProcessId,
        reason: ExitReason,
        (type_name, message): (&'static str, Box<dyn Any + Send>),
    ) -> Self {
        DeadLetter {
            to,
            reason,
            message: QueuedMessage::new((type_name, message)),
        }
    }

    /// The process it was meant for.
    pub fn to(&self) -> ProcessId {
        self.to
    }

    /// Why that process terminated.
    pub fn reason(&self) -> &ExitReason {
        &self.reason
    }

    /// The Rust type of the message that was posted.
    pub fn type_name(&self) -> &'static str {
        self.message.type_name
    }

    /// Whether the message is an `M`.
    pub fn is<M: Any>(&self) -> bool {
        self.message.is::<M>()
    }

    /// The message, by reference, if it is an `M`.
    pub fn downcast_ref<M: Any>(&self) -> Option<&M> {
        self.message.downcast_ref::<M>()
    }

    /// The message as the `M` that was posted, or the letter back if it holds another type.
    pub fn downcast<M: Any>(self) -> Result<M, DeadLetter> {
        self.message
            .downcast::<M>()
            .map_err(|message| DeadLetter { message, ..self })
    }
}

/// A message that was queued for a process handed over with
/// [`Addr::hand_over`](crate::Addr::hand_over): the value that was posted, in the order it was
/// queued, for whoever restores the process to post again.
pub struct QueuedMessage {
    type_name: &'static str,
    message: Box<dyn Any + Send>,
}

impl QueuedMessage {
    /// A queued message holding `message` already unwrapped to the value that was posted
    /// (`Process::__dead_letter`), named `type_name`.
    pub(crate) fn new((type_name, message): (&'static str, Box<dyn Any + Send>)) -> Self {
        QueuedMessage { type_name, message }
    }

    /// The Rust type of the message that was posted.
    pub fn type_name(&self) -> &'static str {
        self.type_name
    }

    /// Whether the message is an `M`.
    pub fn is<M: Any>(&self) -> bool {
        self.message.is::<M>() || self.message.is::<Posted<M>>()
    }

    /// The message, by reference, if it is an `M`.
    pub fn downcast_ref<M: Any>(&self) -> Option<&M> {
        self.message
            .downcast_ref::<M>()
            .or_else(|| self.message.downcast_ref::<Posted<M>>().map(|p| &p.0))
    }

    /// A dead letter for `to`, which ended with `reason`, holding this message.
    pub(crate) fn into_dead_letter(self, to: ProcessId, reason: ExitReason) -> DeadLetter {
        DeadLetter {
            to,
            reason,
            message: self,
        }
    }

    /// The message as the `M` that was posted, or itself back if it holds another type.
    pub fn downcast<M: Any>(self) -> Result<M, QueuedMessage> {
        let message = match self.message.downcast::<M>() {
            Ok(message) => return Ok(*message),
            Err(message) => message,
        };
        match message.downcast::<Posted<M>>() {
            Ok(posted) => Ok(posted.0),
            Err(message) => Err(QueuedMessage { message, ..self }),
        }
    }
}

impl fmt::Debug for QueuedMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueuedMessage")
            .field("type_name", &self.type_name)
            .finish_non_exhaustive()
    }
}

/// A message unwrapped from a `#[process]` process's message enum, on its way into a
/// [`DeadLetter`] or a [`QueuedMessage`] (which hand it out as the `M` inside).
pub(crate) struct Posted<M>(M);

// SAFETY: a `Posted<M>` is only made by `posted`, whose contract is that the `M` came out of a
// process's `Message` enum: every variant of which holds a `Message`, which is `Isolated` and so
// `Send` (`#[process]` asserts it for each handled type) (I8).
unsafe impl<M> Send for Posted<M> {}

/// The content of one variant of a `#[process]` message enum, for a dead letter: what the
/// generated `Process::__dead_letter` returns.
///
/// # Safety
///
/// `message` must have been held by a value of a process's `Message` type (a variant of the
/// enum `#[process]` generates), so that it is `Send` even where the bounds in scope cannot say
/// so.
#[doc(hidden)]
pub unsafe fn posted<M: 'static>(message: M) -> (&'static str, Box<dyn Any + Send>) {
    (std::any::type_name::<M>(), Box::new(Posted(message)))
}

impl fmt::Debug for DeadLetter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeadLetter")
            .field("to", &self.to)
            .field("reason", &self.reason)
            .field("type_name", &self.message.type_name)
            .finish_non_exhaustive()
    }
}

/// What the runtime remembers of a recent dead letter, for
/// [`RuntimeStats::recent_dead_letters`](crate::control::RuntimeStats::recent_dead_letters)
/// (the letter itself goes to the sink).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct DeadLetterRecord {
    /// The process it was queued for.
    pub to: ProcessId,
    /// Why that process ended.
    pub reason: ExitReason,
    /// The type of the message.
    pub message_type: &'static str,
    /// When it was given to the sink.
    pub at: std::time::SystemTime,
}

impl DeadLetterRecord {
    /// The record of `letter`, now.
    pub(crate) fn of(letter: &DeadLetter) -> Self {
        DeadLetterRecord {
            to: letter.to,
            reason: letter.reason.clone(),
            message_type: letter.message.type_name,
            at: wall_clock(),
        }
    }
}

/// The wall-clock time, for records people read. Under Miri, whose isolation has no
/// real-time clock, the epoch.
pub(crate) fn wall_clock() -> std::time::SystemTime {
    if cfg!(miri) {
        std::time::SystemTime::UNIX_EPOCH
    } else {
        std::time::SystemTime::now()
    }
}

/// Receives dead letters. Runs on whichever thread terminated the process; keep it short.
pub type DeadLetterSink = Box<dyn Fn(DeadLetter) + Send + Sync>;

pub(crate) fn default_sink() -> DeadLetterSink {
    Box::new(|letter: DeadLetter| {
        tracing::debug!(
            to = %letter.to,
            reason = %letter.reason,
            message = letter.message.type_name,
            "dead letter"
        );
    })
}

// SAFETY: a record of a dead letter, not the letter: an id, an exit reason (immutable, see its
// impl), a static type name and a time. (I8)
unsafe impl crate::isolation::Isolated for DeadLetterRecord {}
impl crate::isolation::Reply for DeadLetterRecord {}
