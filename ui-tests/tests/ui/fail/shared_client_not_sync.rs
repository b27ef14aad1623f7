//! Class 5: `SharedClient` is for clients that synchronise themselves: a `RefCell` does not.
use std::cell::RefCell;
use whirl::SharedClient;

fn main() {
    let _client = SharedClient::new(RefCell::new(0u8), "a counter");
}
