//! Sharing state between processes is outside what whirl checks: the option is spelled with
//! `unsafe`.
use std::sync::{Arc, Mutex};
use whirl::prelude::*;

#[process(shares_state = "rows are shared with the indexer")]
struct Table {
    #[shared]
    rows: Arc<Mutex<Vec<String>>>,
}

fn main() {}
