//! Spawning on another node from registered factories (DDE's `addIsolate`), with the
//! principal the work is done for.
//!
//! A node offers **factories**: named functions that take serde-encoded arguments, spawn a
//! process in that node's runtime, and export it ([`Node::add_factory`](crate::Node::add_factory)).
//! Any node can then [`spawn_on`](crate::Node::spawn_on) a named node: the request travels as
//! a data frame (it uses the credit window like a post), the factory runs on the receiving
//! node's network thread (so it must only spawn and export, never block), and the new
//! process's [`Pid`] comes back. The principal given travels with the request, so the new
//! process serves the same principal there: its group's predicates and scheduler see it.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use whirl::{Addr, Principal, Process};

use crate::ask::{AskEnd, Until};
use crate::core::{Core, SendError};
use crate::export::ExportBuilder;
use crate::remote::tag_of;
use crate::wire::{self, BounceReason, Header, WirePrincipal};
use crate::{NodeId, Pid};

/// What a factory gets besides its arguments: the principal the caller spawns for, and the
/// node to export the new process with.
pub struct FactoryCtx<'a> {
    pub(crate) core: &'a Arc<Core>,
    pub(crate) principal: Option<Principal>,
}

impl FactoryCtx<'_> {
    /// The principal the caller spawns for (with its id, priority, class and utility), if
    /// any: spawn with `group.spawner().principal(p)` so the new process serves it.
    pub fn principal(&self) -> Option<&Principal> {
        self.principal.as_ref()
    }

    /// Takes the principal out (to pass it to `Spawner::principal` by value).
    pub fn take_principal(&mut self) -> Option<Principal> {
        self.principal.take()
    }

    /// Exports the new process with this node, as [`Node::export`](crate::Node::export).
    pub fn export<P: Process>(&self, addr: &Addr<P>) -> ExportBuilder<'_, P> {
        ExportBuilder::new(self.core, addr)
    }
}

/// Why a remote spawn did not produce a process.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnRemoteError {
    /// The target node has no factory by that name.
    #[error("the node has no factory named {0:?}")]
    NoFactory(String),
    /// The arguments did not decode as the factory's argument type.
    #[error("the arguments do not decode as the factory's argument type")]
    BadArguments,
    /// The factory refused or failed, with its reason.
    #[error("the factory failed: {0}")]
    Failed(String),
    /// The node's [`Policy`](crate::Policy) does not allow this node to call the factory.
    #[error("the node's policy does not allow this node to call factory {0:?}")]
    Unauthorised(String),
    /// The credit window to the node is full; try later.
    #[error("the link to the node is full")]
    Rejected,
    /// The node is Down, or went Down before answering (a process may have been spawned).
    #[error("the node is down")]
    NodeDown,
    /// No answer within the time limit (a process may have been spawned).
    #[error("no answer within the time limit")]
    Timeout,
    /// The arguments cannot be encoded, or exceed the frame limit.
    #[error("the arguments cannot be sent: {0}")]
    Encode(String),
}

/// How a factory call went, for the factory's author: return it from the factory function.
pub enum Spawned {
    /// The process was spawned and exported as this pid.
    Pid(Pid),
    /// The factory refuses (bad values, no capacity): the reason goes back to the caller.
    Refused(String),
}

impl fmt::Debug for Spawned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Spawned::Pid(pid) => write!(f, "Pid({pid})"),
            Spawned::Refused(why) => write!(f, "Refused({why:?})"),
        }
    }
}

impl From<Pid> for Spawned {
    fn from(pid: Pid) -> Spawned {
        Spawned::Pid(pid)
    }
}

impl<E: fmt::Display> From<Result<Pid, E>> for Spawned {
    fn from(result: Result<Pid, E>) -> Spawned {
        match result {
            Ok(pid) => Spawned::Pid(pid),
            Err(e) => Spawned::Refused(e.to_string()),
        }
    }
}

/// The error for a bounced spawn request.
pub(crate) fn bounced(reason: BounceReason, factory: &str) -> SpawnRemoteError {
    match reason {
        BounceReason::NoProcess => SpawnRemoteError::NoFactory(factory.to_owned()),
        BounceReason::Incompatible => SpawnRemoteError::BadArguments,
        BounceReason::Quarantined => SpawnRemoteError::NodeDown,
        BounceReason::Unauthorised => SpawnRemoteError::Unauthorised(factory.to_owned()),
        other => SpawnRemoteError::Failed(other.to_string()),
    }
}

/// Sends a spawn request to `node` (as [`Node::spawn_on`](crate::Node::spawn_on)); the
/// future ends with the new pid, or why not, by `timeout` on the node's clock at the latest.
/// A thread blocks on it; a simulator polls it.
pub(crate) fn start<A: Serialize + ?Sized>(
    core: &Arc<Core>,
    node: NodeId,
    factory: &str,
    args: &A,
    principal: Option<&Principal>,
    timeout: Duration,
) -> Result<impl Future<Output = Result<Pid, SpawnRemoteError>> + 'static, SpawnRemoteError> {
    let link = match node == core.id() {
        true => None,
        false => Some(core.link_to(node).ok_or(SpawnRemoteError::NodeDown)?),
    };
    let principal = principal.map(WirePrincipal::of);
    let tag = tag_of(factory);
    let deadline = core.now() + timeout;
    let slot = core
        .start_request(
            link.as_deref(),
            node,
            |req| Header::Spawn {
                req,
                factory: tag,
                principal,
            },
            args,
            deadline,
        )
        .map_err(|e| match e {
            SendError::Full => SpawnRemoteError::Rejected,
            SendError::Down => SpawnRemoteError::NodeDown,
            SendError::Encode(e) => SpawnRemoteError::Encode(e.to_string()),
            SendError::TooLarge { size, limit } => {
                SpawnRemoteError::Encode(format!("{size} bytes, over the limit of {limit}"))
            }
        })?;
    let (until, factory) = (
        Until {
            slot,
            deadline,
            clock: core.clock(),
        },
        factory.to_owned(),
    );
    Ok(async move {
        match until.await {
            AskEnd::Answered(bytes) => wire::decode_payload::<u64>(&bytes)
                .map(|local| Pid::new(node, local))
                .map_err(|_| SpawnRemoteError::Failed("the answer did not decode".to_owned())),
            AskEnd::Bounced(reason, _) => Err(bounced(reason, &factory)),
            AskEnd::Failed(why) => Err(SpawnRemoteError::Failed(why)),
            AskEnd::NoReply => Err(SpawnRemoteError::Failed("no answer".to_owned())),
            AskEnd::Timeout => Err(SpawnRemoteError::Timeout),
            AskEnd::NodeDown => Err(SpawnRemoteError::NodeDown),
        }
    })
}
