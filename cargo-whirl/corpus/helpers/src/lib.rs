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

/// Formats counted in a statistic every caller shares.
static AUDITED_FORMATS: AtomicU64 = AtomicU64::new(0);

fn plain_format(n: u64) -> String {
    n.to_string()
}

fn audited_format(n: u64) -> String {
    AUDITED_FORMATS.fetch_add(1, Ordering::Relaxed); //~ AUDITED_FORMATS
    format!("#{n}")
}

/// A table of `fn`s, called through in the programs: its entries are only named here.
pub static FORMATS: [fn(u64) -> String; 2] = [plain_format, audited_format];

/// Parsers that keep a statistic every caller shares.
static PARSED: AtomicU64 = AtomicU64::new(0);

fn parse_plain(text: &str) -> u64 {
    text.len() as u64
}

fn parse_counted(text: &str) -> u64 {
    PARSED.fetch_add(1, Ordering::Relaxed); //~ PARSED
    text.bytes().filter(u8::is_ascii_digit).count() as u64
}

/// The parsers a program installs, as `fn` pointers made here.
pub fn parsers() -> Vec<fn(&str) -> u64> {
    vec![parse_plain, parse_counted]
}

fn checksum_plain(bytes: &[u8]) -> u8 {
    bytes.iter().fold(0, |a, b| a.wrapping_add(*b))
}

fn checksum_doubled(bytes: &[u8]) -> u8 {
    checksum_plain(bytes).wrapping_mul(2)
}

/// Pure checksums, as `fn` pointers made here.
pub const CHECKSUMS: [fn(&[u8]) -> u8; 2] = [checksum_plain, checksum_doubled];
