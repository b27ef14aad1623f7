//! Class 3: a dynamic child's start argument moves into the child: it must be `Isolated`.
use std::sync::{Arc, Mutex};
use whirl::prelude::*;

fn main() {
    let rt = Runtime::new();
    let sup = rt.spawn(Supervisor::new(SupervisorSpec::new("pool")));
    let _ = sup.start_dynamic(Arc::new(Mutex::new(0u64)));
}
