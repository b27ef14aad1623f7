//! A pure helper in another crate of the workspace.
// expect:
use whirl::prelude::*;

#[derive(Message)]
struct Double(u64);

#[process]
struct Doubler {
    last: u64,
}

#[process]
impl Doubler {
    #[handle]
    fn double(&mut self, Double(n): Double) {
        self.last = corpus_helpers::double(n);
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Doubler { last: 0 }).post(Double(2));
    rt.shutdown_graceful();
}
