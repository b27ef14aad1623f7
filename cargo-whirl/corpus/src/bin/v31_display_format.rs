//! A `Display` impl run by `format!` (std's formatting machinery calls it back).
// expect: RENDERED
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static RENDERED: AtomicU64 = AtomicU64::new(0);

struct Price(u64);

impl fmt::Display for Price {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        RENDERED.fetch_add(1, Ordering::Relaxed); //~ RENDERED
        write!(f, "{}.{:02}", self.0 / 100, self.0 % 100)
    }
}

#[derive(Message)]
struct Quote(u64);

#[process]
struct Shop {
    last: String,
}

#[process]
impl Shop {
    #[handle]
    fn quote(&mut self, Quote(cents): Quote) {
        self.last = format!("price: {}", Price(cents));
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt
        .spawn(Shop {
            last: String::new(),
        })
        .post(Quote(250));
    rt.shutdown_graceful();
}
