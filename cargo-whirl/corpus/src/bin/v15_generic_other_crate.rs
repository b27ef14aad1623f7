//! A generic helper in another crate of the workspace, instantiated by the handler.
// expect: NAMES
use whirl::prelude::*;

#[derive(Message)]
struct Name(String);

#[process]
struct Namer;

#[process]
impl Namer {
    #[handle]
    fn name(&mut self, Name(name): Name) {
        corpus_helpers::remember(name);
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Namer).post(Name("x".into()));
    rt.shutdown_graceful();
}
