//! A generic helper whose other instantiation touches a static, but not the one a handler
//! uses: generic code is judged at the instantiation that runs.
// expect:
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static LOUD: AtomicU64 = AtomicU64::new(0);

trait Speak {
    fn speak(&self) -> u64;
}
struct Whisper;
impl Speak for Whisper {
    fn speak(&self) -> u64 {
        1
    }
}
struct Shout;
impl Speak for Shout {
    fn speak(&self) -> u64 {
        LOUD.fetch_add(1, Ordering::Relaxed)
    }
}

fn say<T: Speak>(t: &T) -> u64 {
    t.speak()
}

#[derive(Message)]
struct Talk;

#[process]
struct Speaker {
    said: u64,
}

#[process]
impl Speaker {
    #[handle]
    fn talk(&mut self, _t: Talk) {
        self.said += say(&Whisper);
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Speaker { said: 0 }).post(Talk);
    rt.shutdown_graceful();
    let _ = say(&Shout);
}
