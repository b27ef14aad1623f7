//! Class 3: a dynamic child's start argument moves into the child. The template's argument
//! type (checked `Isolated` where the template is made) is the supervisor's type argument, so
//! anything else, shared state included, is refused where `start_dynamic` is called.
use std::sync::{Arc, Mutex};
use whirl::prelude::*;
use whirl::supervision::ChildTemplate;

#[process]
#[derive(Clone)]
struct Counter {
    total: u64,
}

#[process]
impl Counter {}

fn main() {
    let rt = Runtime::new();
    let sup = rt.spawn(Supervisor::new(
        SupervisorSpec::new("pool")
            .strategy(RestartStrategy::SimpleOneForOne)
            .template(ChildTemplate::new(|total: u64| {
                ChildSpec::worker("counter", Counter { total })
            })),
    ));
    let _ = sup.start_dynamic(Arc::new(Mutex::new(0u64)));
}
