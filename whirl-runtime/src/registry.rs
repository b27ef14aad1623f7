//! The runtime's table of live processes, so shutdown can reach every one of them.
//! Sharded so that spawning and terminating on several threads rarely contend.

use std::collections::HashMap;
use std::sync::Weak;

use parking_lot::Mutex;

use crate::cell::Runnable;
use crate::process::ProcessId;

const SHARDS: usize = 16;

pub(crate) struct Registry {
    shards: [Mutex<HashMap<u64, Weak<dyn Runnable>>>; SHARDS],
}

impl Registry {
    pub(crate) fn new() -> Self {
        Registry {
            shards: std::array::from_fn(|_| Mutex::new(HashMap::new())),
        }
    }

    fn shard(&self, id: ProcessId) -> &Mutex<HashMap<u64, Weak<dyn Runnable>>> {
        &self.shards[(id.0 as usize) % SHARDS]
    }

    pub(crate) fn insert(&self, id: ProcessId, process: Weak<dyn Runnable>) {
        self.shard(id).lock().insert(id.0, process);
    }

    pub(crate) fn remove(&self, id: ProcessId) {
        self.shard(id).lock().remove(&id.0);
    }

    /// Every live process (that is still reachable).
    pub(crate) fn live(&self) -> Vec<std::sync::Arc<dyn Runnable>> {
        self.shards
            .iter()
            .flat_map(|s| {
                s.lock()
                    .values()
                    .filter_map(Weak::upgrade)
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }
}
