//! User impls that third-party crates call back (`Display` from `itertools::join`,
//! `Serialize` from `serde_json`, `Iterator` from `Itertools`) without shared state, beside an
//! impl that touches a static but that only `main` runs through a dependency.
// expect:
use itertools::Itertools;
use serde::ser::{Serialize, SerializeSeq, Serializer};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static BOOT_LINES: AtomicU64 = AtomicU64::new(0);

#[derive(Isolated)]
struct Word(String);
impl fmt::Display for Word {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

struct BootLine(u64);
impl fmt::Display for BootLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        BOOT_LINES.fetch_add(1, Ordering::Relaxed);
        write!(f, "boot {}", self.0)
    }
}

struct Totals(Vec<u64>);
impl Serialize for Totals {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for total in &self.0 {
            seq.serialize_element(total)?;
        }
        seq.end()
    }
}

struct Evens(u64);
impl Iterator for Evens {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        self.0 = self.0.checked_sub(2)?;
        Some(self.0)
    }
}

#[derive(Message)]
struct Add(String, u64);

#[process]
struct Ledger {
    words: Vec<Word>,
    totals: Vec<u64>,
    out: Vec<String>,
}

#[process]
impl Ledger {
    #[handle]
    fn add(&mut self, Add(word, total): Add) {
        self.words.push(Word(word));
        self.totals.push(total);
        self.out.push(itertools::join(&self.words, " "));
        self.out.push(self.words.iter().join("/"));
        let json = serde_json::to_string(&Totals(self.totals.clone())).unwrap_or_default();
        self.out.push(json);
        self.out
            .push(format!("{:?}", Evens(total).sorted().collect_vec()));
    }
}

fn main() {
    println!("{}", itertools::join([BootLine(1), BootLine(2)], "\n"));
    let rt = Runtime::new();
    let ledger = Ledger {
        words: Vec::new(),
        totals: Vec::new(),
        out: Vec::new(),
    };
    let _ = rt.spawn(ledger).post(Add("rent".into(), 10));
    rt.shutdown_graceful();
}
