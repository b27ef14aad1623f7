//! A library crate of the corpus workspace: handlers in the programs call into it, so the
//! checker must follow calls across the workspace's crates.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// A counter every caller shares.
pub static VISITS: AtomicU64 = AtomicU64::new(0);

/// Counts a visit in the shared counter.
pub fn record_visit() -> u64 {
    VISITS.fetch_add(1, Ordering::Relaxed) //~ VISITS
}

/// A pure function: no state.
pub fn double(n: u64) -> u64 {
    n * 2
}

/// A registry behind a lock.
static NAMES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Generic helper that touches shared state whatever `T` is.
pub fn remember<T: ToString>(value: T) {
    let lock = NAMES.lock(); //~ NAMES
    if let Ok(mut names) = lock {
        names.push(value.to_string());
    }
}
