//! `#[isolated(trust)]` needs a reason: the reason is the promise.
use whirl::prelude::*;

mod geo {
    pub struct Point(pub f64, pub f64);
}

#[derive(Message)]
struct Locate {
    #[isolated(trust)]
    at: geo::Point,
}

fn main() {}
