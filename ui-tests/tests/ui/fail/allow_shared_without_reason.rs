// `#[allow_shared]` must say why: a reviewer reads the reason.
use std::sync::atomic::AtomicU64;

#[whirl::allow_shared]
static SERVED: AtomicU64 = AtomicU64::new(0);

fn main() {}
