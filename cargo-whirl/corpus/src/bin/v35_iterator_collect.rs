//! A user `Iterator::next` driven by std's `take` and `collect`.
// expect: DRAWN
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static DRAWN: AtomicU64 = AtomicU64::new(0);

struct Tickets;

impl Iterator for Tickets {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        Some(DRAWN.fetch_add(1, Ordering::Relaxed)) //~ DRAWN
    }
}

#[derive(Message)]
struct Draw(usize);

#[process]
struct Lottery {
    drawn: Vec<u64>,
}

#[process]
impl Lottery {
    #[handle]
    fn draw(&mut self, Draw(n): Draw) {
        self.drawn = Tickets.take(n).collect();
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Lottery { drawn: Vec::new() }).post(Draw(3));
    rt.shutdown_graceful();
}
