use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use whirl::prelude::*;

#[derive(Message)]
struct Progress(Arc<AtomicUsize>);

fn main() {}
