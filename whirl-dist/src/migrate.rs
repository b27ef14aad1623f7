//! Moving a process to another node with its state and its queue (DDE's migration, Erlang's
//! missing piece), and hot deployment on top of it.
//!
//! A process type is made movable on every node that may hold it with
//! [`Node::accept_migrations`]: a stable kind name, the group its processes run in, and how
//! to export a restored one (the same `accept`/`answer` list as when it was first exported).
//! Its state must implement serde's traits.
//!
//! [`Node::migrate`] then moves an exported process:
//!
//! 1. it asks the target whether it takes processes of this kind (the only step the caller's
//!    time limit covers: nothing has moved yet, so giving up leaves nothing on the target,
//!    and the process is untouched, [`MigrateError::Refused`]);
//! 2. frames for the process start being held, in arrival order, and the runtime hands it
//!    over at its next message boundary ([`whirl::Addr::hand_over`]): its state and the
//!    messages queued for it, in order;
//! 3. its names are withdrawn here (a name has one holder at a time), and the state and the
//!    queue (each message encoded by the export's entry for its type) go to the target in
//!    one frame, with the process's remote watchers. Sending is the decision: the target
//!    restores it at once (spawns it in its group, exports it, posts the queue ahead of
//!    anything else, adopts the watchers) and answers its new local id; this node waits for
//!    that answer, or for the target to be Down, with no time limit;
//! 4. the held frames, and every later one, go back to their senders as redirects; every
//!    peer is told where the process went and follows it (`moves.rs` has the protocol), so
//!    each sender's messages reach the process in the order they were sent, through its old
//!    pid or its new one; the target registers the names once every peer follows it;
//!    watchers' watches follow it (they see [`NodeEvent::Moved`](crate::NodeEvent::Moved),
//!    not Down).
//!
//! At most one copy of the process ever runs. The target starts only what it was sent, and
//! this node restores the process only when the target answers that it did not start it
//! ([`MigrateError::Failed`], restored here under a new local id). A target that goes Down
//! before answering may have started it, so it is not restored here
//! ([`MigrateError::InDoubt`]). Messages queued for the process whose type it does not accept
//! from other nodes cannot cross the network: they go to the runtime's dead-letter sink here
//! (counted), and the migration goes on. An ask still queued when the process moves travels
//! as a post (the handler runs at the new node) and its asker is told there is no answer
//! (`RemoteCallError::NoReply`): the reply handle cannot follow.
//!
//! Hot deployment: start a node running the new version, `migrate` each process onto it,
//! then shut the old node down; senders that held the old pids follow the redirects.

use std::any::TypeId;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use whirl::{Addr, Group, HandedOver, Process};

use crate::ask::{AskEnd, Until};
use crate::core::{Core, SendError};
use crate::dispatch::{Export, RestoreFn};
use crate::export::ExportBuilder;
use crate::node::Node;
use crate::watches::Theirs;
use crate::wire::{self, Header, MigratePayload, RemoteExit};
use crate::{DistError, NodeId, Pid};

/// Why [`Node::migrate`] did not move a process. Where the process is then is said in each
/// case.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MigrateError {
    /// No [`Node::accept_migrations`] for this process type on this node. The process was
    /// not touched.
    #[error("this node accepts no migrations of this process type (call accept_migrations)")]
    NotMigratable,
    /// The process is not exported from this node (or has ended). It was not touched.
    #[error("the process is not exported from this node")]
    NotExported,
    /// The target is this node. The process was not touched.
    #[error("the process is already on that node")]
    SameNode,
    /// The target refused to take processes of this type, could not be reached, or did not
    /// answer within the time limit. The process was not touched: nothing was sent yet.
    #[error("the target did not take the process ({why}); it was not touched")]
    Refused {
        /// What the target said, or why it could not be asked.
        why: String,
    },
    /// The process is moving already. It was not touched.
    #[error("the process is already moving")]
    AlreadyMoving,
    /// The process ended, or was asked to, before it could be handed over.
    #[error("the process has ended or is ending")]
    Ended,
    /// The target refused the process when it arrived (restoring it failed there); the
    /// process was restored on this node, with its queue, as `restored_as`, and the target
    /// runs no copy.
    #[error("the migration failed ({why}); the process runs here again as {restored_as}")]
    Failed {
        /// What went wrong.
        why: String,
        /// Its pid now.
        restored_as: Pid,
    },
    /// The migration failed and the process could not be restored here either (its state did
    /// not encode, or restoring it failed): it is gone, and its queue went to the dead-letter
    /// sink. Its remote watchers are told it failed.
    #[error("the migration failed ({0}) and the process could not be restored")]
    Lost(String),
    /// The process was sent and the target went Down before it said whether it started it:
    /// the process may have run there until then, so it is not restored here (two copies
    /// could run if the target was only cut off). It runs nowhere this node can reach; its
    /// remote watchers are told `NoConnection`, and frames held for it go back to their
    /// senders as for an ended process.
    #[error("the target {to} went down with the process ({why}); it was not restored here")]
    InDoubt {
        /// The target.
        to: NodeId,
        /// What happened.
        why: String,
    },
}

impl Node {
    /// Makes processes of type `P` movable to and from this node: `kind` is a stable name
    /// (the same on every node, like a message tag), `group` the group restored processes
    /// run in, and `export` configures the export of a restored one (the messages it accepts
    /// from other nodes: the same list as when it was first exported).
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use whirl::prelude::*;
    /// # use whirl_dist::{Node, NodeConfig, Remote};
    /// # #[derive(Message, Serialize, Deserialize)] struct Deposit(i64);
    /// # impl Remote for Deposit { const TAG: &'static str = "bank.Deposit/1"; }
    /// #[process]
    /// #[derive(Serialize, Deserialize)]
    /// struct Account { balance: i64 }
    /// # #[process] impl Account { #[handle] fn deposit(&mut self, Deposit(c): Deposit) { self.balance += c; } }
    /// # fn main() -> Result<(), whirl_dist::DistError> {
    /// let runtime = Runtime::new();
    /// let node = Node::start(NodeConfig::new("bank").tls("n.pem", "n.key", "ca.pem"))?;
    /// node.accept_migrations::<Account, _>("bank.Account/1", runtime.default_group(), |e| {
    ///     e.accept::<Deposit>()
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn accept_migrations<P, F>(
        &self,
        kind: &'static str,
        group: &Group,
        export: F,
    ) -> Result<(), DistError>
    where
        P: Process + Serialize + DeserializeOwned,
        F: for<'n> Fn(ExportBuilder<'n, P>) -> ExportBuilder<'n, P> + Send + Sync + 'static,
    {
        let core = Arc::downgrade(&self.core);
        let group = group.clone();
        let restore: RestoreFn = Box::new(move |payload: &MigratePayload| {
            let core = core
                .upgrade()
                .ok_or_else(|| "the node is shutting down".to_owned())?;
            let state: P = wire::decode_payload(&payload.state)
                .map_err(|e| format!("the state did not decode: {e}"))?;
            let addr = group.spawn(state);
            let pid = export(ExportBuilder::new(&core, &addr))
                .build()
                .map_err(|e| {
                    // The answer will say it did not start here, so the source may restore it:
                    // this copy stops before it handles anything (nothing is posted to it).
                    addr.exit(whirl::ExitReason::Shutdown);
                    format!("cannot export the restored process: {e}")
                })?;
            let local = pid.local();
            // Its old queue first, ahead of anything sent to it here (nothing can be yet: its
            // pid is not known to anyone before this answer).
            if let Some(export) = core.export_of(local) {
                for (tag, bytes) in &payload.queue {
                    repost(&export, *tag, bytes);
                }
            }
            core.adopt_watchers(local, &payload.watchers);
            // Its names are registered by the caller: at once when restored where it was, once
            // every peer follows it when it moved (`core/relocation.rs`).
            Ok(local)
        });
        self.core.add_migration(kind, TypeId::of::<P>(), restore)?;
        Ok(())
    }

    /// Moves exported process `addr` to node `to` with its state, its queue, its names and
    /// its watchers; returns its new pid. Waits up to `timeout` for the target to say it
    /// takes processes of this type (a refusal or no answer in time: [`MigrateError::Refused`],
    /// the process untouched); then blocks until the process is handed over (after the
    /// handler it is running returns) and until the target says where it runs, or is Down.
    /// Call it from outside processes.
    ///
    /// Frames for the process are held while it moves; the runtime hands it over at its next
    /// message boundary ([`whirl::Addr::hand_over`]); the target restores it from the kind
    /// given to [`accept_migrations`](Node::accept_migrations), posts its old queue ahead of
    /// anything else, adopts its watchers (they get
    /// [`NodeEvent::Moved`](crate::NodeEvent::Moved), and later its real end) and registers its
    /// names once every peer follows it. Senders of the held frames, and of later ones, are
    /// redirected: each fences this node and then sends what came back and what it sent since,
    /// in order, to the new pid, so every sender's messages reach the process in the order
    /// sent, through the old pid or the new one, and this node may leave afterwards (hot
    /// deployment). At most one copy runs: if the target says it did not start the process,
    /// it is restored here ([`MigrateError::Failed`]); if the target goes Down first, it is
    /// not ([`MigrateError::InDoubt`]). Queued messages of types the process does not accept
    /// from other nodes cannot move: they go to this node's dead-letter sink (counted). An ask
    /// still queued moves as a post; its asker is told there is no answer.
    pub fn migrate<P>(
        &self,
        addr: &Addr<P>,
        to: NodeId,
        timeout: Duration,
    ) -> Result<Pid, MigrateError>
    where
        P: Process + Serialize + DeserializeOwned,
    {
        crate::ask::block_on(migration(Arc::clone(&self.core), addr.clone(), to, timeout))
    }
}

/// [`Node::migrate`] as a future: the thread that migrates blocks on it, and a simulator
/// polls it between its steps ([`crate::sim::Migration`]).
pub(crate) async fn migration<P>(
    core: Arc<Core>,
    addr: Addr<P>,
    to: NodeId,
    timeout: Duration,
) -> Result<Pid, MigrateError>
where
    P: Process + Serialize + DeserializeOwned,
{
    let (core, addr) = (&core, &addr);
    let kind = core
        .migration_kind(TypeId::of::<P>())
        .ok_or(MigrateError::NotMigratable)?;
    let local = addr.id().as_u64();
    let export = core.export_of(local).ok_or(MigrateError::NotExported)?;
    if to == core.id() {
        return Err(MigrateError::SameNode);
    }
    probe(core, to, kind, timeout)
        .await
        .map_err(|why| MigrateError::Refused { why })?;
    if !core.begin_moving(local) {
        return Err(MigrateError::AlreadyMoving);
    }
    let handoff = crate::ask::Handoff::<HandedOver<P>>::new();
    let sender = handoff.sender();
    if addr.hand_over(move |handed| sender.send(handed)).is_err() {
        // Nothing to move: frames held meanwhile go back as for an ended process.
        core.abort_moving(local);
        return Err(MigrateError::Ended);
    }
    let Some(handed) = (&*handoff).await else {
        // The receiver panicked or was dropped: the runtime logged it.
        core.abort_moving(local);
        return Err(MigrateError::Lost(
            "the hand-over did not complete".to_owned(),
        ));
    };
    let (watchers, names) = core.take_moving_parts(local);
    let payload = match encode(addr, handed, &export, names, &watchers) {
        Ok(payload) => payload,
        Err(why) => {
            core.lost_moving(local, watchers, RemoteExit::Failed(why.clone()));
            return Err(MigrateError::Lost(why));
        }
    };
    match transfer(core, local, to, kind, &payload).await {
        Ok(new_local) => {
            let new = Pid::new(to, new_local);
            core.finish_moving(local, new, watchers);
            Ok(new)
        }
        Err(Unmoved::NotStarted(why)) => match core.restore(kind, &payload) {
            Ok(new_local) => {
                core.restored_here(new_local, payload.names.clone());
                let restored_as = Pid::new(core.id(), new_local);
                core.finish_moving(local, restored_as, watchers);
                Err(MigrateError::Failed { why, restored_as })
            }
            Err(again) => {
                let why = format!("{why}; restoring here: {again}");
                core.lost_moving(local, watchers, RemoteExit::Failed(why.clone()));
                Err(MigrateError::Lost(why))
            }
        },
        Err(Unmoved::InDoubt(why)) => {
            core.lost_moving(local, watchers, RemoteExit::NoConnection);
            Err(MigrateError::InDoubt { to, why })
        }
    }
}

/// Encodes what moves: the state, and each queued message with the export's entry for its
/// type (one the process does not accept from other nodes is dead-lettered here).
fn encode<P: Process + Serialize>(
    addr: &Addr<P>,
    handed: HandedOver<P>,
    export: &Export,
    names: Vec<String>,
    watchers: &[Theirs],
) -> Result<MigratePayload, String> {
    let state = postcard::to_stdvec(&handed.state)
        .map_err(|e| format!("the state does not encode: {e}"))?;
    let mut queue = Vec::with_capacity(handed.queued.len());
    for message in handed.queued {
        let encoded = export
            .entries
            .iter()
            .find_map(|(tag, entry)| (entry.encode)(&message).map(|bytes| (*tag, bytes)));
        match encoded {
            Some((tag, Ok(bytes))) => queue.push((tag, bytes)),
            Some((_, Err(error))) => {
                tracing::warn!(%error, message_type = message.type_name(), "a queued message does not encode; dead-lettered instead of moved");
                addr.dead_letter_moved(message);
            }
            None => {
                tracing::warn!(message_type = message.type_name(), "a queued message of a type the process does not accept remotely cannot move; dead-lettered");
                addr.dead_letter_moved(message);
            }
        }
    }
    Ok(MigratePayload {
        state,
        queue,
        names,
        watchers: watchers
            .iter()
            .map(|w| (w.node.as_u128(), w.mref, w.link))
            .collect(),
    })
}

/// Why a process did not move.
enum Unmoved {
    /// The target did not start it and never will: it may be restored here.
    NotStarted(String),
    /// The target was sent the process and went Down before saying whether it started it.
    InDoubt(String),
}

/// What a refused send says.
fn send_error(e: SendError) -> String {
    match e {
        SendError::Full => "the link to the target is full".to_owned(),
        SendError::Down => "the target node is down".to_owned(),
        SendError::Encode(e) => format!("the process does not encode: {e}"),
        SendError::TooLarge { size, limit } => {
            format!("the process and its queue take {size} bytes, over the frame limit of {limit}")
        }
    }
}

/// Asks `to` whether it takes processes of kind `kind`, waiting until `timeout`: nothing has
/// moved yet, so giving up here leaves nothing behind on the target.
async fn probe(core: &Arc<Core>, to: NodeId, kind: u64, timeout: Duration) -> Result<(), String> {
    let link = core
        .link_to(to)
        .ok_or_else(|| "the target node is down".to_owned())?;
    let deadline = core.now() + timeout;
    let slot = core
        .start_request(
            Some(&link),
            to,
            |req| Header::Probe { req, kind },
            &(),
            deadline,
        )
        .map_err(send_error)?;
    match (Until {
        slot,
        deadline,
        clock: core.clock(),
    })
    .await
    {
        AskEnd::Answered(_) => Ok(()),
        AskEnd::Failed(why) => Err(format!("the target refused: {why}")),
        AskEnd::Bounced(reason, _) => Err(format!("the target refused: {reason}")),
        AskEnd::NoReply => Err("the target did not answer".to_owned()),
        AskEnd::Timeout => Err("no answer from the target in time".to_owned()),
        AskEnd::NodeDown => Err("the target node went down".to_owned()),
    }
}

/// Sends the process to `to`, which restores it at once; its new local id there, or why not.
/// Sending is the decision: from then on only the target can say it did not start the
/// process, so the answer is waited for without a time limit, until it comes or the target
/// is Down (a frozen target loses its lease). A Down target may have started it, so it is not
/// restored here: at most one copy ever runs.
async fn transfer(
    core: &Arc<Core>,
    local: u64,
    to: NodeId,
    kind: u64,
    payload: &MigratePayload,
) -> Result<u64, Unmoved> {
    let link = core
        .link_to(to)
        .ok_or_else(|| Unmoved::NotStarted("the target node is down".to_owned()))?;
    // One holder at a time: the target registers the names once the process runs there
    // (or this node again, if it is restored here).
    core.withdraw_names(local);
    let deadline = core.now() + ANSWER_WAIT;
    let slot = core
        .start_request(
            Some(&link),
            to,
            |req| Header::Migrate { req, kind },
            payload,
            deadline,
        )
        .map_err(|e| Unmoved::NotStarted(send_error(e)))?;
    match (Until {
        slot,
        deadline,
        clock: core.clock(),
    })
    .await
    {
        AskEnd::Answered(bytes) => wire::decode_payload::<u64>(&bytes)
            .map_err(|_| Unmoved::InDoubt("the target's answer did not decode".to_owned())),
        AskEnd::Failed(why) => Err(Unmoved::NotStarted(format!(
            "the target did not start it: {why}"
        ))),
        AskEnd::Bounced(reason, _) => Err(Unmoved::NotStarted(format!(
            "the target did not start it: {reason}"
        ))),
        AskEnd::NoReply | AskEnd::Timeout => Err(Unmoved::InDoubt(
            "the target did not say whether it started the process".to_owned(),
        )),
        AskEnd::NodeDown => Err(Unmoved::InDoubt(
            "the target went down before saying whether it started the process".to_owned(),
        )),
    }
}

/// How long the target's answer to a move is waited for: in effect until it comes or the
/// target is Down.
const ANSWER_WAIT: Duration = Duration::from_secs(365 * 24 * 3600);

/// Posts one moved message to a restored process.
fn repost(export: &Export, tag: u64, bytes: &[u8]) {
    match export.entries.get(&tag) {
        Some(entry) => {
            if let crate::dispatch::Delivery::Refused(reason) = (entry.repost)(bytes) {
                tracing::warn!(%reason, "a moved message could not be posted to its restored process");
            }
        }
        None => tracing::warn!(
            tag,
            "a moved message's type is not accepted by the restored process"
        ),
    }
}
