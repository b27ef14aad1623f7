//! A `From` impl run by `?` converting an error (std's `FromResidual` calls it back).
// expect: FAILURES
use std::num::ParseIntError;
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static FAILURES: AtomicU64 = AtomicU64::new(0);

struct BadInput;

impl From<ParseIntError> for BadInput {
    fn from(_: ParseIntError) -> Self {
        FAILURES.fetch_add(1, Ordering::Relaxed); //~ FAILURES
        BadInput
    }
}

fn parse(text: &str) -> Result<u64, BadInput> {
    let n: u64 = text.parse()?;
    Ok(n)
}

#[derive(Message)]
struct Input(String);

#[process]
struct Parser {
    sum: u64,
}

#[process]
impl Parser {
    #[handle]
    fn input(&mut self, Input(text): Input) {
        if let Ok(n) = parse(&text) {
            self.sum += n;
        }
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Parser { sum: 0 }).post(Input("12".into()));
    rt.shutdown_graceful();
}
