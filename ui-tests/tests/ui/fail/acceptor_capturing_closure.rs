//! Class 3: an acceptor's connection handler lives in the acceptor's state: a closure that
//! captures shared state is refused (implement `Accept` on an isolated type instead).
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use whirl::net::Acceptor;
use whirl::prelude::*;

fn main() {
    let rt = Runtime::new();
    let net = rt.net().unwrap();
    let accepted = Arc::new(AtomicU64::new(0));
    let _ = Acceptor::bind_fn("127.0.0.1:0".parse().unwrap(), net, move |_stream, _peer, _ctx| {
        accepted.fetch_add(1, Ordering::Relaxed);
        Ok(())
    });
}
