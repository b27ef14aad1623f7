//! A generic process whose handler calls a method on its type parameter: walked at the
//! instantiation `main` spawns (`Cache<MemBackend>`), the call resolves to `MemBackend`'s
//! method, which touches a static.
// expect: MEMORY
use std::collections::HashMap;
use std::sync::Mutex;
use whirl::prelude::*;

static MEMORY: Mutex<Option<HashMap<u64, u64>>> = Mutex::new(None);

trait Backend: Isolated + 'static {
    fn load(&mut self, key: u64) -> Option<u64>;
}

#[derive(Isolated)]
struct MemBackend;

impl Backend for MemBackend {
    fn load(&mut self, key: u64) -> Option<u64> {
        let map = MEMORY.lock().ok()?; //~ MEMORY
        map.as_ref()?.get(&key).copied()
    }
}

#[derive(Isolated)]
struct NullBackend;

impl Backend for NullBackend {
    fn load(&mut self, _key: u64) -> Option<u64> {
        None
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

fn start<B: Backend>(rt: &Runtime, backend: B) {
    let _ = rt.spawn(Cache { backend, hits: 0 }).post(Get(1));
}

fn main() {
    let rt = Runtime::new();
    start(&rt, MemBackend);
    let _ = rt
        .spawn(Cache {
            backend: NullBackend,
            hits: 0,
        })
        .post(Get(2));
    rt.shutdown_graceful();
}
