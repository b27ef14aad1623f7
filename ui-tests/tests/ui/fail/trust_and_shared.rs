//! A field is shared on purpose or trusted to share nothing, not both.
use std::sync::{Arc, RwLock};
use whirl::prelude::*;

#[process(unsafe(shares_state = "the store locks per row"))]
struct Shard {
    #[shared]
    #[isolated(trust = "it is fine")]
    store: Arc<RwLock<Vec<u8>>>,
}

fn main() {}
