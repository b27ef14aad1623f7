// An empty reason is no reason.
use std::sync::atomic::AtomicU64;

#[whirl::allow_shared(reason = "  ")]
static SERVED: AtomicU64 = AtomicU64::new(0);

fn main() {}
