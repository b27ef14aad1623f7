//! A generic process instantiated only with a backend that keeps its state in itself: another
//! backend touches a static, but no process is ever built with it.
// expect:
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static DISK_READS: AtomicU64 = AtomicU64::new(0);

trait Backend: Isolated + 'static {
    fn load(&mut self, key: u64) -> Option<u64>;
}

#[derive(Isolated)]
struct MapBackend {
    entries: Vec<(u64, u64)>,
}

impl Backend for MapBackend {
    fn load(&mut self, key: u64) -> Option<u64> {
        self.entries
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }
}

#[derive(Isolated)]
struct DiskBackend;

impl Backend for DiskBackend {
    fn load(&mut self, key: u64) -> Option<u64> {
        DISK_READS.fetch_add(1, Ordering::Relaxed);
        Some(key)
    }
}

#[derive(Message)]
struct Get(u64);

#[process]
struct Cache<B: Backend> {
    backend: B,
    hits: u64,
}

#[process]
impl<B: Backend> Cache<B> {
    #[handle]
    fn get(&mut self, Get(key): Get) {
        if self.backend.load(key).is_some() {
            self.hits += 1;
        }
    }
}

fn main() {
    let rt = Runtime::new();
    let cache = Cache {
        backend: MapBackend {
            entries: vec![(1, 2)],
        },
        hits: 0,
    };
    let _ = rt.spawn(cache).post(Get(1));
    rt.shutdown_graceful();
    let _ = DiskBackend.load(3);
}
