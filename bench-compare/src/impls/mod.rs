//! The implementations, one module each. Each has `run(workload, sizes) -> Outcome`, which
//! sets up its runtime, runs the workload once, checks its counts (panicking on a wrong one)
//! and returns how long the measured part took.

pub mod actix;
pub mod kameo;
pub mod ractor;
pub mod sequential;
pub mod threads;
pub mod tokio;
pub mod whirl;

use crate::common::{Outcome, Sizes, Workload};

/// The implementations, in the order of the table's columns.
pub const ALL: [&str; 7] = [
    "whirl",
    "actix",
    "kameo",
    "ractor",
    "tokio",
    "threads",
    "sequential",
];

/// The actor crates whirl is compared with ("best actor crate" in the ratio table).
pub const ACTOR_CRATES: [&str; 3] = ["actix", "kameo", "ractor"];

/// Runs `workload` on the implementation called `name`; `None` for an unknown name.
pub fn run(name: &str, workload: Workload, sizes: &Sizes) -> Option<Outcome> {
    let run: fn(Workload, &Sizes) -> Outcome = match name {
        "whirl" => whirl::run,
        "actix" => actix::run,
        "kameo" => kameo::run,
        "ractor" => ractor::run,
        "tokio" => tokio::run,
        "threads" => threads::run,
        "sequential" => sequential::run,
        _ => return None,
    };
    Some(run(workload, sizes))
}
