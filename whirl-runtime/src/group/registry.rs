//! The runtime's table of live processes. It owns them: a process lives until it terminates,
//! whether or not anybody still holds its address (it may have timers, monitors, or work to
//! finish), and shutdown can reach every one of them. Sharded so that spawning and
//! terminating on several threads rarely contend.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use rustc_hash::FxBuildHasher;

use super::task::Runnable;
use crate::lifecycle::ProcessId;

const SHARDS: usize = 16;

/// Process ids are unique integers handed out in sequence: the Fx hash (one multiplication)
/// spreads them as well as SipHash does, at a fraction of the cost on every spawn and exit.
type Shard = Mutex<HashMap<u64, Arc<dyn Runnable>, FxBuildHasher>>;

pub(crate) struct Registry {
    shards: [Shard; SHARDS],
}

impl Registry {
    pub(crate) fn new() -> Self {
        Registry {
            shards: std::array::from_fn(|_| Mutex::new(HashMap::with_hasher(FxBuildHasher))),
        }
    }

    fn shard(&self, id: ProcessId) -> &Shard {
        &self.shards[(id.0 as usize) % SHARDS]
    }

    pub(crate) fn insert(&self, id: ProcessId, process: Arc<dyn Runnable>) {
        self.shard(id).lock().insert(id.0, process);
    }

    /// Forgets a terminated process. The returned reference is dropped by the caller outside
    /// the shard lock (dropping a process may run arbitrary `Drop` code).
    pub(crate) fn remove(&self, id: ProcessId) -> Option<Arc<dyn Runnable>> {
        self.shard(id).lock().remove(&id.0)
    }

    /// Puts `process` in the place of the one registered under `id` (a process that moved to
    /// another group); returns the old entry, for the caller to drop outside the shard lock.
    pub(crate) fn replace(
        &self,
        id: ProcessId,
        process: Arc<dyn Runnable>,
    ) -> Option<Arc<dyn Runnable>> {
        self.shard(id).lock().insert(id.0, process)
    }

    /// The live process `id`, if any.
    pub(crate) fn get(&self, id: ProcessId) -> Option<Arc<dyn Runnable>> {
        self.shard(id).lock().get(&id.0).cloned()
    }

    /// Every live process.
    pub(crate) fn live(&self) -> Vec<Arc<dyn Runnable>> {
        self.shards
            .iter()
            .flat_map(|s| s.lock().values().cloned().collect::<Vec<_>>())
            .collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }
}
