//! Trusting one field checks every other field as before: the `Rc` is refused.
use std::rc::Rc;
use whirl::prelude::*;

mod geo {
    pub struct Point(pub f64, pub f64);
}

#[derive(Message)]
struct Locate {
    #[isolated(trust = "two f64s")]
    at: geo::Point,
    user: Rc<str>,
}

fn main() {}
