//! Class 5: `SharedClient` needs a client that can move between threads: `Rc` cannot.
use std::rc::Rc;
use whirl::SharedClient;

fn main() {
    let _client = SharedClient::new(Rc::new(0u8), "a counter");
}
