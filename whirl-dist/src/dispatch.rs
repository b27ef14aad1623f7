//! What the export table holds: per process, one entry per accepted message tag, and what
//! became of a message handed to one.
//!
//! Entries are built by [`crate::export`] (which knows the process and message types) and
//! called by the receive path in [`crate::core`] (which knows neither): a post entry decodes
//! and posts; an ask entry decodes, asks, and later answers through a [`Replier`].

use std::collections::HashMap;

use serde::Serialize;
use whirl::Principal;

use crate::wire::BounceReason;

/// What became of a received message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// Posted into the local runtime (which counts it from now on).
    Delivered,
    /// Refused; the message goes back to its sender.
    Refused(BounceReason),
}

/// Decodes a payload and posts it, on behalf of the principal it carries.
pub(crate) type PostFn = Box<dyn Fn(&[u8], Option<&Principal>) -> Delivery + Send + Sync>;

/// Decodes a payload and asks it, on behalf of the principal it carries; the answer goes to
/// the [`Replier`].
pub(crate) type AskFn = Box<dyn Fn(&[u8], Option<&Principal>, Replier) -> Delivery + Send + Sync>;

/// Encodes a message queued for a process that is moving, if it is of the entry's type.
pub(crate) type EncodeFn =
    Box<dyn Fn(&whirl::QueuedMessage) -> Option<Result<Vec<u8>, postcard::Error>> + Send + Sync>;

/// Decodes a message that moved with its process and posts it without admission (it was
/// admitted before it moved).
pub(crate) type RepostFn = Box<dyn Fn(&[u8]) -> Delivery + Send + Sync>;

/// One accepted message type of an exported process.
pub(crate) struct Entry {
    pub(crate) post: PostFn,
    pub(crate) ask: Option<AskFn>,
    pub(crate) encode: EncodeFn,
    pub(crate) repost: RepostFn,
}

/// Restores a migrated process here from a payload: spawns it, exports it, posts its queue;
/// answers its local id, or why it could not.
pub(crate) type RestoreFn =
    Box<dyn Fn(&crate::wire::MigratePayload) -> Result<u64, String> + Send + Sync>;

/// An exported process: its entries by tag, and how to end it (for links across nodes).
pub(crate) struct Export {
    pub(crate) entries: HashMap<u64, Entry>,
    /// The process's local address (an `Addr<P>`), for [`Node::local`](crate::Node::local).
    pub(crate) addr: Box<dyn std::any::Any + Send + Sync>,
    pub(crate) kill: Box<dyn Fn(whirl::ExitReason) + Send + Sync>,
    /// The watch that withdraws the export when the process ends; set right after the export
    /// is installed (a process already ended is withdrawn at once).
    pub(crate) watch: parking_lot::Mutex<Option<whirl::Watch>>,
}

/// A factory: spawns a process from encoded arguments, on behalf of a principal; answers its
/// local id or why it could not.
pub(crate) type FactoryFn =
    Box<dyn Fn(&[u8], Option<whirl::Principal>) -> FactoryResult + Send + Sync>;

/// What a factory did.
pub(crate) enum FactoryResult {
    /// Spawned (and exported) as this local id.
    Spawned(u64),
    /// The arguments did not decode.
    BadArguments,
    /// The factory refused or failed, with its reason.
    Failed(String),
    /// The policy does not allow the caller this factory (it was not run).
    Unauthorised,
}

/// Where an ask's end goes: called once, with the encoded answer or `None` for "no answer".
pub(crate) struct Replier {
    send: Box<dyn FnOnce(Option<Vec<u8>>) + Send>,
}

impl Replier {
    pub(crate) fn new(send: impl FnOnce(Option<Vec<u8>>) + Send + 'static) -> Replier {
        Replier {
            send: Box::new(send),
        }
    }

    /// Sends the handler's answer back; one that cannot be encoded is logged and the asker
    /// told there is no answer.
    pub(crate) fn answer<R: Serialize>(self, answer: &R) {
        match postcard::to_stdvec(answer) {
            Ok(bytes) => (self.send)(Some(bytes)),
            Err(error) => {
                tracing::error!(%error, "an answer cannot be encoded; the asker is told NoReply");
                (self.send)(None)
            }
        }
    }

    /// Tells the asker there will be no answer.
    pub(crate) fn no_reply(self) {
        (self.send)(None)
    }
}
