//! A generic process: its handlers are walked at the instantiation `main` spawns
//! (`Store<u32>`); the access in the handler's body, and in a helper it calls, are found.
// expect: STORED, EVICTIONS
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static STORED: AtomicU64 = AtomicU64::new(0);
static EVICTIONS: AtomicU64 = AtomicU64::new(0);

fn evict(n: usize) {
    EVICTIONS.fetch_add(n as u64, Ordering::Relaxed); //~ EVICTIONS
}

#[derive(Message)]
struct Put<T>(T);

#[process]
struct Store<T> {
    items: Vec<T>,
}

#[process]
impl<T> Store<T>
where
    T: Isolated,
{
    #[handle]
    fn put(&mut self, Put(item): Put<T>) {
        STORED.fetch_add(1, Ordering::Relaxed); //~ STORED
        self.items.push(item);
        if self.items.len() > 8 {
            self.items.clear();
            evict(8);
        }
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Store { items: Vec::new() }).post(Put(1u32));
    rt.shutdown_graceful();
}
