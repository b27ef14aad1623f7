//! User impls that std calls back (`Display`, `From`, `Default`, `Iterator`) without shared
//! state, beside impls that do touch a static but that no process reaches.
// expect:
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static STARTUP: AtomicU64 = AtomicU64::new(0);

struct Name(String);
impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{}>", self.0)
    }
}

struct Loud(u64);
impl fmt::Display for Loud {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        STARTUP.fetch_add(1, Ordering::Relaxed);
        write!(f, "{}!", self.0)
    }
}

struct Meters(f64);
struct Feet(f64);
impl From<Meters> for Feet {
    fn from(m: Meters) -> Self {
        Feet(m.0 * 3.28)
    }
}

#[derive(Default, Isolated)]
struct Buffer {
    items: Vec<u8>,
}

struct Countdown(u64);
impl Iterator for Countdown {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        self.0 = self.0.checked_sub(1)?;
        Some(self.0)
    }
}

#[derive(Message)]
struct Work(String);

#[process]
struct Worker {
    log: Vec<String>,
    buffer: Buffer,
    feet: f64,
}

#[process]
impl Worker {
    #[handle]
    fn work(&mut self, Work(who): Work) {
        self.log.push(format!("{}", Name(who)));
        self.log.push(Name("x".into()).to_string());
        let feet: Feet = Meters(2.0).into();
        self.feet = feet.0;
        let old = std::mem::take(&mut self.buffer);
        self.log.push(old.items.len().to_string());
        let steps: Vec<u64> = Countdown(5).take(3).collect();
        self.log.push(format!("{steps:?}"));
    }
}

fn main() {
    println!("{}", Loud(1));
    let rt = Runtime::new();
    let worker = Worker {
        log: Vec::new(),
        buffer: Buffer::default(),
        feet: 0.0,
    };
    let _ = rt.spawn(worker).post(Work("ada".into()));
    rt.shutdown_graceful();
}
