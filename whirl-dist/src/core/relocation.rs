//! After a process moved: every peer is told, and its names are registered where it runs
//! once every peer follows it.
//!
//! A sender may reach a moved process two ways: through the pid it held (its frames come back
//! as redirects, `redirects.rs`) or through the new pid, found by name. So that the second
//! cannot overtake the first, the node a process left tells every peer (`Relocated`); a peer
//! starts following the process as at a first redirect (its messages to either pid wait for
//! the fence, `moves.rs`) and answers with a `Fence`. Once every peer has answered (or is
//! Down), the old node tells the new one (`NamesFree`), which registers the process's names
//! only then: a sender finds the new pid by name only after it follows the old one, and its
//! messages to the new pid wait behind those still coming back.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use rustc_hash::FxHashSet;

use super::Core;
use crate::moves::Relocating;
use crate::wire::{self, Header};
use crate::{DistError, NodeId, Pid};

impl Core {
    /// Local process `local` now runs as `to` on another node: tell every peer; the names
    /// are freed once all follow it.
    pub(super) fn relocate(self: &Arc<Self>, local: u64, to: Pid) {
        let peers: FxHashSet<NodeId> = self
            .up
            .read()
            .iter()
            .copied()
            .filter(|&p| p != self.id)
            .collect();
        if peers.is_empty() {
            return self.free_names(to);
        }
        let told: Vec<NodeId> = peers.iter().copied().collect();
        self.relocating
            .lock()
            .insert(local, Relocating { to, waiting: peers });
        let header = Header::Relocated {
            old: local,
            node: to.node().as_u128(),
            local: to.local(),
        };
        for peer in told {
            self.send_control(peer, wire::encode_raw(self.id, &header, &[]));
        }
    }

    /// `peer` follows this node's process `old` now (its fence for it came in, or it is
    /// Down): once every peer does, its names are freed where it runs.
    pub(super) fn follows(self: &Arc<Self>, peer: NodeId, old: u64) {
        let done = {
            let mut relocating = self.relocating.lock();
            let Some(entry) = relocating.get_mut(&old) else {
                return;
            };
            entry.waiting.remove(&peer);
            match entry.waiting.is_empty() {
                true => relocating.remove(&old).map(|e| e.to),
                false => None,
            }
        };
        if let Some(to) = done {
            self.free_names(to);
        }
    }

    /// `peer` is Down: it follows nothing, and processes that moved to it need nothing
    /// more; names waiting for a process that came from it are registered.
    pub(super) fn relocation_peer_down(self: &Arc<Self>, peer: NodeId) {
        let freed: Vec<Pid> = {
            let mut relocating = self.relocating.lock();
            relocating.retain(|_, e| e.to.node() != peer);
            let mut freed = Vec::new();
            relocating.retain(|_, e| {
                e.waiting.remove(&peer);
                let done = e.waiting.is_empty();
                if done {
                    freed.push(e.to);
                }
                !done
            });
            // In a fixed order, whatever the table's: so a simulated run replays.
            freed.sort_unstable();
            freed
        };
        for to in freed {
            self.free_names(to);
        }
        let mut orphans: Vec<u64> = self
            .unnamed
            .lock()
            .iter()
            .filter(|(_, (from, _))| *from == peer)
            .map(|(local, _)| *local)
            .collect();
        orphans.sort_unstable();
        for local in orphans {
            self.register_awaited(local);
        }
    }

    /// Tells the node `to` runs on that its names may be registered.
    fn free_names(self: &Arc<Self>, to: Pid) {
        let header = Header::NamesFree { local: to.local() };
        self.send_control(to.node(), wire::encode_raw(self.id, &header, &[]));
    }

    /// The names of local process `local`, restored from a process of `from`, wait for
    /// `from`'s `NamesFree`.
    pub(super) fn await_names(&self, from: NodeId, local: u64, names: Vec<String>) {
        if !names.is_empty() {
            self.unnamed.lock().insert(local, (from, names));
        }
    }

    /// Every peer of `from` follows the process it moved here as `local`: register its names.
    pub(super) fn on_names_free(self: &Arc<Self>, from: NodeId, local: u64) {
        let ours = matches!(self.unnamed.lock().get(&local), Some((source, _)) if *source == from);
        if ours {
            self.register_awaited(local);
        }
    }

    /// Registers the waiting names of local process `local`, off this thread. They stay in
    /// `unnamed` until they are in `tokens` (the lock is held across), so a move that starts
    /// meanwhile takes them from one or the other (`take_moving_parts`).
    ///
    /// A process being handed over to another node is no longer exported here (its local
    /// instance ended), so its names cannot be registered here: they go back to `unnamed`,
    /// where the move takes them with the process (dropping them lost the name for good when
    /// a move began right after the names were freed).
    fn register_awaited(self: &Arc<Self>, local: u64) {
        self.defer(move |core| {
            let mut unnamed = core.unnamed.lock();
            let Some((from, names)) = unnamed.remove(&local) else {
                return;
            };
            let moving = || core.moves.lock().is_moving(local);
            if !core.exports.read().contains_key(&local) {
                if moving() {
                    unnamed.insert(local, (from, names));
                }
                return;
            }
            let pid = Pid::new(core.id, local);
            let mut leaving = Vec::new();
            for name in names {
                match core.register(&name, pid) {
                    Ok(()) => {}
                    Err(DistError::NotExported(_)) if moving() => leaving.push(name),
                    Err(error) => {
                        tracing::warn!(%name, %pid, %error, "a moved process's name could not be registered again");
                    }
                }
            }
            if !leaving.is_empty() {
                unnamed.insert(local, (from, leaving));
            }
            drop(unnamed);
        });
    }

    /// Local process `local` was restored here after a migration that failed (as `local`,
    /// a new pid): its names wait, as for a process that moved here, until every peer
    /// follows its old pid (`relocate`, from `finish_moving`); a sender that finds it by name
    /// then waits behind what it sent to the old one.
    pub(crate) fn restored_here(&self, local: u64, names: Vec<String>) {
        self.await_names(self.id, local, names);
    }

    /// Node `from` says its process `old` moved to `to`: follow it from now on (this node's
    /// messages to either pid wait for the fence), and answer with the fence.
    pub(super) fn on_relocated(self: &Arc<Self>, from: NodeId, old: u64, to: Pid) {
        self.any_moves.store(true, Relaxed);
        self.fence(from, old, |core| core.moves.lock().relocated(from, old, to));
    }
}
