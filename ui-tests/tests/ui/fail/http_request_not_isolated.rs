//! An `http::Request` is not isolated, even with whirl's `http` feature: its extensions are a
//! type-erased map that may hold any `Clone + Send + Sync` value, an `Arc<Mutex<_>>` included.
//! Send the parts the receiver needs (method, `Uri`, `HeaderMap`, body) instead.
use whirl::prelude::*;

#[derive(Message)]
struct Forward {
    request: http::Request<String>,
}

fn main() {}
