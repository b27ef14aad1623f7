//! The runtime's table of live processes. It owns them: a process lives until it terminates,
//! whether or not anybody still holds its address (it may have timers, monitors, or work to
//! finish), and shutdown can reach every one of them. Sharded so that spawning and
//! terminating on several threads rarely contend.

use std::sync::Arc;

use hashbrown::hash_table::{Entry, HashTable};
use parking_lot::Mutex;

use super::task::Runnable;
use crate::lifecycle::ProcessId;

const SHARDS: usize = 16;
/// Processes [`Registry::visit`] looks at per hold of a shard's lock.
const VISIT_CHUNK: usize = 256;
/// Entries a shard's table may have room for however few it holds.
const SHRINK_ABOVE: usize = 1024;

/// A live process and its id. The id is kept beside the handle, not read through it: growing a
/// table rehashes every entry, and comparing or rehashing through the handle would touch each
/// process's cell (a cache miss per process, a sixth of a spawn's time with a million alive).
struct Registered {
    id: ProcessId,
    process: Arc<dyn Runnable>,
}

/// The processes of one shard, found by id.
type Shard = Mutex<HashTable<Registered>>;

/// Where `id` goes in its shard's table. Ids are handed out in sequence and a shard holds every
/// sixteenth one, so `id / SHARDS` in the low bits puts processes spawned one after another in
/// neighbouring buckets (a spawn storm writes the table in order instead of missing the cache
/// on every insert) and they never collide while the live ids span less than the table. The
/// top seven bits, which hashbrown compares before calling the equality test, get a
/// multiplicative mix of the id, so a probe rarely compares more than one entry.
fn hash(id: ProcessId) -> u64 {
    const TAG_MIX: u64 = 0x9E37_79B9_7F4A_7C15;
    let position = id.0 / SHARDS as u64;
    let tag = id.0.wrapping_mul(TAG_MIX) & (0x7F << 57);
    (position & !(0x7F << 57)) | tag
}

fn rehash(entry: &Registered) -> u64 {
    hash(entry.id)
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
        let mut shard = self.shard(id).lock();
        let removed = match shard.find_entry(hash(id), |e| e.id == id) {
            Ok(entry) => entry.remove().0.process,
            Err(_) => return None,
        };
        // A table does not shrink by itself: after a million processes have come and gone it
        // would keep room for a million. Halving it once it is an eighth full costs O(1) per
        // removal, amortised, and keeps room for the next burst of spawns to double again.
        if shard.capacity() > SHRINK_ABOVE && shard.len() < shard.capacity() / 8 {
            let keep = shard.len() * 2;
            shard.shrink_to(keep, rehash);
        }
        Some(removed)
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
            .entry(hash(id), |e| e.id == id, rehash)
        {
            Entry::Occupied(mut entry) => {
                Some(std::mem::replace(&mut entry.get_mut().process, process))
            }
            Entry::Vacant(entry) => {
                entry.insert(Registered { id, process });
                None
            }
        }
    }

    /// The live process `id`, if any.
    pub(crate) fn get(&self, id: ProcessId) -> Option<Arc<dyn Runnable>> {
        self.shard(id)
            .lock()
            .find(hash(id), |e| e.id == id)
            .map(|e| Arc::clone(&e.process))
    }

    /// Every live process.
    pub(crate) fn live(&self) -> Vec<Arc<dyn Runnable>> {
        self.shards
            .iter()
            .flat_map(|s| {
                s.lock()
                    .iter()
                    .map(|e| Arc::clone(&e.process))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Calls `f` with every live process, a shard at a time, never holding a lock for long:
    /// the shard's ids are copied under its lock (a scan of its table, which never touches a
    /// process), then looked up again [`VISIT_CHUNK`] at a time, each chunk under the lock,
    /// so a spawn or a termination in that shard waits for one chunk at most. Workers never
    /// take these locks on the message path. A process spawned during the walk may be missed
    /// and one that terminated is skipped. `f` must not spawn, terminate or look up processes
    /// (it runs under a shard's lock).
    pub(crate) fn visit(&self, mut f: impl FnMut(&dyn Runnable)) {
        let mut ids = Vec::new();
        for shard in &self.shards {
            ids.clear();
            ids.extend(shard.lock().iter().map(|e| e.id));
            for chunk in ids.chunks(VISIT_CHUNK) {
                let table = shard.lock();
                for &id in chunk {
                    if let Some(entry) = table.find(hash(id), |e| e.id == id) {
                        f(&*entry.process);
                    }
                }
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::group::task::Recorder;
    use crate::lifecycle::ExitReason;
    use crate::principal::Principal;

    /// A process that only has an id.
    struct Bare(ProcessId);

    impl Runnable for Bare {
        fn run(self: Arc<Self>, _: bool, _: &Recorder) -> usize {
            0
        }
        fn abandon(self: Arc<Self>) {}
        fn kill(self: Arc<Self>, _: ExitReason) {}
        fn id(&self) -> ProcessId {
            self.0
        }
        fn principal(&self) -> Option<&Principal> {
            None
        }
        fn group_name(&self) -> &str {
            "bare"
        }
        fn request_move(
            self: Arc<Self>,
            _: &dyn std::any::Any,
        ) -> Result<(), crate::group::MoveError> {
            Err(crate::group::MoveError::SharesState("bare".into()))
        }
    }

    fn register(registry: &Registry, id: u64) {
        let id = ProcessId(id);
        registry.insert(id, Arc::new(Bare(id)));
    }

    /// Ids far apart, close together, wrapping past the tag bits and reused after removal are
    /// all found again: the position bits only decide where the search starts.
    #[test]
    fn every_live_id_is_found_and_removed_ones_are_not() {
        let registry = Registry::new();
        let far = [u64::MAX, u64::MAX - 16, 1 << 57, (1 << 57) + 16, 1 << 63];
        let ids: Vec<u64> = (1..=20_000).chain(far).collect();
        for &id in &ids {
            register(&registry, id);
        }
        assert_eq!(registry.len(), ids.len());
        // A window of live ids moving on, as when old processes end and new ones start.
        for &id in ids.iter().filter(|id| *id % 3 != 0) {
            let removed = registry.remove(ProcessId(id)).expect("registered");
            assert_eq!(removed.id(), ProcessId(id));
        }
        for id in 20_001..=30_000 {
            register(&registry, id);
        }
        for id in ids.iter().copied().chain(20_001..=30_000) {
            let live = id % 3 == 0 || id > 20_000 && !far.contains(&id);
            let found = registry.get(ProcessId(id));
            assert_eq!(
                found.map(|p| p.id()),
                live.then_some(ProcessId(id)),
                "id {id}"
            );
        }
        assert_eq!(registry.remove(ProcessId(1)).map(|p| p.id()), None);
        assert_eq!(registry.live().len(), registry.len());
        let mut visited = Vec::new();
        registry.visit(|p| visited.push(p.id()));
        visited.sort();
        let mut live: Vec<ProcessId> = registry.live().iter().map(|p| p.id()).collect();
        live.sort();
        assert_eq!(visited, live);
    }

    /// After a burst of processes has come and gone, the tables give their room back.
    #[test]
    fn tables_shrink_when_processes_are_gone() {
        let registry = Registry::new();
        let room = |r: &Registry| r.shards.iter().map(|s| s.lock().capacity()).sum::<usize>();
        for id in 1..=200_000 {
            register(&registry, id);
        }
        let full = room(&registry);
        assert!(full >= 200_000);
        for id in 1..=199_990 {
            registry.remove(ProcessId(id)).expect("registered");
        }
        assert!(
            room(&registry) <= SHARDS * 2 * SHRINK_ABOVE,
            "room for {} processes kept for 10",
            room(&registry)
        );
        for id in 199_991..=200_000 {
            assert!(registry.get(ProcessId(id)).is_some());
        }
    }

    #[test]
    fn replacing_returns_the_old_handle() {
        let registry = Registry::new();
        register(&registry, 7);
        let id = ProcessId(7);
        let newer: Arc<dyn Runnable> = Arc::new(Bare(id));
        let old = registry.replace(id, Arc::clone(&newer)).expect("was there");
        assert!(!Arc::ptr_eq(&old, &newer));
        let now = registry.get(id).expect("still there");
        assert!(Arc::ptr_eq(&now, &newer));
        assert_eq!(registry.len(), 1);
    }
}
