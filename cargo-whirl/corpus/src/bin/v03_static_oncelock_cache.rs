//! A handler fills a lazily created cache: `static OnceLock<Mutex<HashMap<..>>>`.
// expect: CACHE
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use whirl::prelude::*;

static CACHE: OnceLock<Mutex<HashMap<u64, u64>>> = OnceLock::new();

#[derive(Message)]
struct Square(u64);

#[process]
struct Squarer;

#[process]
impl Squarer {
    #[handle]
    fn square(&mut self, Square(n): Square) {
        let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new())); //~ CACHE
        if let Ok(mut cache) = cache.lock() {
            cache.entry(n).or_insert(n * n);
        }
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Squarer).post(Square(3));
    rt.shutdown_graceful();
}
