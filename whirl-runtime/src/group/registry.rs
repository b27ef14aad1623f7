//! The runtime's table of live processes. It owns them: a process lives until it terminates,
//! whether or not anybody still holds its address (it may have timers, monitors, or work to
//! finish), and shutdown can reach every one of them. Sharded so that spawning and
//! terminating on several threads rarely contend.

use std::hash::BuildHasher;
use std::sync::Arc;

use hashbrown::hash_table::{Entry, HashTable};
use parking_lot::Mutex;
use rustc_hash::FxBuildHasher;

use super::task::Runnable;
use crate::lifecycle::ProcessId;

const SHARDS: usize = 16;

/// The processes of one shard, found by their id (`Runnable::id`), which each process keeps
/// itself: a table of bare handles instead of a map from ids to handles saves a word per live
/// process (I6).
type Shard = Mutex<HashTable<Arc<dyn Runnable>>>;

/// Process ids are unique integers handed out in sequence: the Fx hash (one multiplication)
/// spreads them as well as SipHash does, at a fraction of the cost on every spawn and exit.
fn hash(id: ProcessId) -> u64 {
    FxBuildHasher.hash_one(id.0)
}

fn rehash(process: &Arc<dyn Runnable>) -> u64 {
    hash(process.id())
}

pub(crate) struct Registry {
    shards: [Shard; SHARDS],
}

impl Registry {
    pub(crate) fn new() -> Self {
        Registry {
            shards: std::array::from_fn(|_| Mutex::new(HashTable::new())),
        }
    }

    fn shard(&self, id: ProcessId) -> &Shard {
        &self.shards[(id.0 as usize) % SHARDS]
    }

    pub(crate) fn insert(&self, id: ProcessId, process: Arc<dyn Runnable>) {
        self.replace(id, process);
    }

    /// Forgets a terminated process. The returned reference is dropped by the caller outside
    /// the shard lock (dropping a process may run arbitrary `Drop` code).
    pub(crate) fn remove(&self, id: ProcessId) -> Option<Arc<dyn Runnable>> {
        match self.shard(id).lock().find_entry(hash(id), |p| p.id() == id) {
            Ok(entry) => Some(entry.remove().0),
            Err(_) => None,
        }
    }

    /// Puts `process` in the place of the one registered under `id` (a process that moved to
    /// another group); returns the old entry, for the caller to drop outside the shard lock.
    pub(crate) fn replace(
        &self,
        id: ProcessId,
        process: Arc<dyn Runnable>,
    ) -> Option<Arc<dyn Runnable>> {
        match self
            .shard(id)
            .lock()
            .entry(hash(id), |p| p.id() == id, rehash)
        {
            Entry::Occupied(mut entry) => Some(std::mem::replace(entry.get_mut(), process)),
            Entry::Vacant(entry) => {
                entry.insert(process);
                None
            }
        }
    }

    /// The live process `id`, if any.
    pub(crate) fn get(&self, id: ProcessId) -> Option<Arc<dyn Runnable>> {
        self.shard(id)
            .lock()
            .find(hash(id), |p| p.id() == id)
            .cloned()
    }

    /// Every live process.
    pub(crate) fn live(&self) -> Vec<Arc<dyn Runnable>> {
        self.shards
            .iter()
            .flat_map(|s| s.lock().iter().cloned().collect::<Vec<_>>())
            .collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }
}
