//! Class 3: a supervised worker is rebuilt from its initial state, which must be `Isolated`: a
//! process that shares state is not.
use std::sync::{Arc, Mutex};
use whirl::prelude::*;

#[process(unsafe(shares_state = "rows shared with the indexer"))]
#[derive(Clone)]
struct Table {
    #[shared]
    rows: Arc<Mutex<Vec<String>>>,
}

#[process]
impl Table {}

fn main() {
    let rows = Arc::new(Mutex::new(Vec::new()));
    let _spec = ChildSpec::worker("table", Table { rows });
}
