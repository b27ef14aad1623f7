//! A misspelt option is reported at the option, with the form to write.
use whirl::prelude::*;

mod geo {
    pub struct Point(pub f64, pub f64);
}

#[process]
struct Tracker {
    #[isolated(trusted = "two f64s")]
    at: geo::Point,
}

fn main() {}
