//! Moving a process between nodes, as the core sees it: the kinds it can restore, the
//! hand-over of a process that leaves, and the `Migrate` frames of a process that arrives.
//!
//! The verbs are in `migrate.rs` and the protocol's tables in `moves.rs`. While a process
//! moves, frames for it are held; once it runs elsewhere, its held frames are redirected
//! ([`redirects`](super::redirects)), its remote watchers are told where it went (`Moved`),
//! its names here are withdrawn (the new node registers them), and the node's listeners get
//! [`NodeEvent::Moved`]. A process that could not be handed over gets its held frames bounced
//! as `Terminated`.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use super::Core;
use crate::counts::bump;
use crate::dispatch::RestoreFn;
use crate::remote::tag_of;
use crate::watches::Theirs;
use crate::wire::{self, BounceReason, Header, MigratePayload, Outcome, RemoteExit};
use crate::{DistError, NodeEvent, NodeId, Pid};

impl Core {
    /// Registers how to restore processes of migration kind `kind`, of type `type_id`.
    pub(crate) fn add_migration(
        &self,
        kind: &'static str,
        type_id: std::any::TypeId,
        restore: RestoreFn,
    ) -> Result<u64, DistError> {
        self.claim_tag(kind)?;
        let tag = tag_of(kind);
        self.migrations.write().insert(tag, restore);
        self.migration_kinds.write().insert(type_id, tag);
        Ok(tag)
    }

    /// The migration kind registered for processes of type `type_id`.
    pub(crate) fn migration_kind(&self, type_id: std::any::TypeId) -> Option<u64> {
        self.migration_kinds.read().get(&type_id).copied()
    }

    /// Restores a process of kind `kind` here from `payload`.
    pub(crate) fn restore(&self, kind: u64, payload: &MigratePayload) -> Result<u64, String> {
        let migrations = self.migrations.read();
        let restore = migrations
            .get(&kind)
            .ok_or_else(|| "this node accepts no migrations of that kind".to_owned())?;
        let local = restore(payload)?;
        bump(&self.counts.migrated_in);
        Ok(local)
    }

    /// Starts holding the frames for local process `local`; `false` if it is already moving.
    /// Returns once every message that passed the check for moves before is in the process's
    /// mailbox (the delivery gate), so the hand-over that follows takes it along.
    pub(crate) fn begin_moving(&self, local: u64) -> bool {
        let begun = self.moves.lock().begin(local);
        if begun {
            self.any_moves.store(true, Relaxed);
            drop(self.delivery_gate.write());
        }
        begun
    }

    /// Takes what moves with local process `local`: its remote watchers and its names (those
    /// registered, and those still waiting to be, if it moved here a moment ago).
    pub(crate) fn take_moving_parts(&self, local: u64) -> (Vec<Theirs>, Vec<String>) {
        let watchers = self.watches.lock().ended(local);
        // `unnamed` first: a registration of waiting names holds it until they are in
        // `tokens`, so they are found in one or the other.
        let mut unnamed = self.unnamed.lock();
        let mut names: Vec<String> = self
            .tokens
            .lock()
            .get(&local)
            .map(|regs| regs.iter().map(|(name, _, _)| name.clone()).collect())
            .unwrap_or_default();
        if let Some((_, waiting)) = unnamed.remove(&local) {
            names.extend(waiting);
        }
        (watchers, names)
    }

    /// Adopts the remote watchers of a process that moved here as `local`.
    pub(crate) fn adopt_watchers(&self, local: u64, watchers: &[(u128, u64, bool)]) {
        let mut watches = self.watches.lock();
        for &(node, mref, link) in watchers {
            let node = NodeId::from_u128(node);
            watches.add_theirs(local, Theirs { node, mref, link });
        }
    }

    /// Local process `local` runs as `to` now: its held frames and later ones are
    /// redirected, its watchers told, its names here withdrawn (the new node registers them).
    pub(crate) fn finish_moving(self: &Arc<Self>, local: u64, to: Pid, mut watchers: Vec<Theirs>) {
        self.exports.write().remove(&local);
        loop {
            let held = self.moves.lock().finish(local, to);
            let Some(held) = held else { break };
            for frame in held {
                self.redirect(frame.from, frame.index, &frame.header, &frame.payload, to);
                self.release_held(frame.from, frame.index);
            }
        }
        // Watches placed since the process was handed over did not travel with it: they are
        // told too, and follow it (`on_moved`). Taken once it is no longer moving: a monitor
        // that comes later is answered `Moved` (`on_monitor`).
        watchers.extend(self.watches.lock().ended(local));
        self.any_moves.store(true, Relaxed);
        self.moves.lock().follow_own(self.id, local, to);
        // Fences that waited for these frames to come back may pass now.
        self.recheck_fences();
        // Every peer follows it before anyone here hears of the move (which could lead a
        // sender to the new pid), restored here under a new local id included.
        self.relocate(local, to);
        for w in watchers {
            let header = Header::Moved {
                mref: w.mref,
                node: to.node().as_u128(),
                local: to.local(),
            };
            self.send_control(w.node, wire::encode_raw(self.id, &header, &[]));
        }
        let names = self.tokens.lock().remove(&local).unwrap_or_default();
        self.forget_names(names);
        if to.node() != self.id {
            bump(&self.counts.migrated_out);
        }
        self.announce_move(Pid::new(self.id, local), to);
    }

    /// Local process `local` did not move and does not run any more (it ended before it could
    /// be handed over, or could not be restored): the frames held for it go back to their
    /// senders as for an ended process.
    pub(crate) fn abort_moving(self: &Arc<Self>, local: u64) {
        let held = self.moves.lock().abort(local);
        for frame in held {
            if let Some(back) = frame
                .header
                .given_back(BounceReason::Terminated, frame.index)
            {
                bump(&self.counts.bounced);
                self.bounce(frame.from, &back, &frame.payload);
            }
            self.release_held(frame.from, frame.index);
        }
        self.recheck_fences();
    }

    /// Tells this node's event listeners that `from` moved to `to`.
    fn announce_move(&self, from: Pid, to: Pid) {
        tracing::info!(%from, %to, "process moved");
        let members = self.members.lock();
        self.publish(members, Some(NodeEvent::Moved { from, to }));
    }

    /// Whether this node would take a process of kind `kind` (a migration's first step:
    /// nothing moves before the answer, so a source that gives up waiting leaves nothing here).
    pub(super) fn on_probe(self: &Arc<Self>, from: NodeId, seq: u64, req: u64, kind: u64) {
        let answer = match self.migrations.read().contains_key(&kind) {
            true => Ok(Vec::new()),
            false => Err("this node accepts no migrations of that kind".to_owned()),
        };
        self.answer_migration(from, seq, req, answer);
    }

    /// A process moving here: restore it, answer its new local id. Its source decided: it
    /// sent the process only once this node said it would take one of its kind, and it does
    /// not restore it itself unless this node answers that it did not start it.
    pub(super) fn on_migrate(
        self: &Arc<Self>,
        from: NodeId,
        seq: u64,
        req: u64,
        kind: u64,
        payload: &[u8],
    ) {
        let restored = match wire::decode_payload::<MigratePayload>(payload) {
            Err(_) => Err("the migration payload did not decode".to_owned()),
            Ok(payload) => self.restore(kind, &payload).inspect(|&local| {
                // Registered once every peer follows it (`relocation.rs`).
                self.await_names(from, local, payload.names);
            }),
        };
        let answer = restored.map(|local| postcard::to_stdvec(&local).unwrap_or_default());
        self.answer_migration(from, seq, req, answer);
    }

    /// Answers a migration's probe or its move.
    fn answer_migration(
        self: &Arc<Self>,
        to: NodeId,
        seq: u64,
        req: u64,
        answer: Result<Vec<u8>, String>,
    ) {
        let (outcome, body) = match answer {
            Ok(body) => {
                bump(&self.counts.delivered);
                (Outcome::Answered, body)
            }
            Err(why) => {
                bump(&self.counts.bounced);
                (Outcome::Failed, why.into_bytes())
            }
        };
        let header = Header::Reply { req, outcome, seq };
        self.send_control(to, wire::encode_raw(self.id, &header, &body));
    }

    /// Withdraws the names of local process `local` here, before it is sent elsewhere: a
    /// name has one holder at a time (the target registers it once the process runs there,
    /// or this node again if it is restored here).
    pub(crate) fn withdraw_names(&self, local: u64) {
        let names = self.tokens.lock().remove(&local).unwrap_or_default();
        self.forget_names(names);
    }

    /// Local process `local` was handed over and runs nowhere now, or may run only on a node
    /// that is Down: its held frames go back to their senders as for an ended process, its
    /// watchers are told `exit`, its names are withdrawn.
    pub(crate) fn lost_moving(
        self: &Arc<Self>,
        local: u64,
        watchers: Vec<Theirs>,
        exit: RemoteExit,
    ) {
        self.abort_moving(local);
        let late = self.watches.lock().ended(local);
        for w in watchers.into_iter().chain(late) {
            let header = Header::Down {
                mref: w.mref,
                reason: exit.clone(),
            };
            self.send_control(w.node, wire::encode_raw(self.id, &header, &[]));
        }
        self.withdraw_names(local);
    }

    /// A process this node watches through `mref` moved to `to`: the watch follows it.
    ///
    /// The monitor is sent again where it runs now: the new node adopted the watches that
    /// travelled with the process and keeps this one once, but a watch placed while it was
    /// moving, or on its old pid after it left, is known there only this way.
    pub(super) fn on_moved(self: &Arc<Self>, mref: u64, to: Pid) {
        let from = self.watches.lock().retarget(mref, to);
        let Some(from) = from else { return };
        if from != to {
            self.announce_move(from, to);
        }
        // Where this node cannot send (Down, or never seen Up), it cannot watch.
        if to.node() != self.id && self.link_to(to.node()).is_none() {
            return self.end_mine(mref, RemoteExit::NoConnection);
        }
        let header = Header::Monitor {
            target: to.local(),
            mref,
            link: self.link_watches.lock().contains_key(&mref),
        };
        self.send_control(to.node(), wire::encode_raw(self.id, &header, &[]));
    }
}
