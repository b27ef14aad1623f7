//! Trust goes on a field, so that the other fields stay checked; a whole type of one's own is
//! trusted with `trust_isolated!`.
use whirl::prelude::*;

#[derive(Isolated)]
#[isolated(trust = "everything in it is plain")]
struct Everything {
    count: u64,
}

fn main() {}
