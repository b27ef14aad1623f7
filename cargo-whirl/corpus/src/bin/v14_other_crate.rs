//! A handler calls a helper in another crate of the workspace, which touches that crate's
//! static: the walk follows calls across the workspace.
// expect: VISITS
use whirl::prelude::*;

#[derive(Message)]
struct Visit;

#[process]
struct Guestbook;

#[process]
impl Guestbook {
    #[handle]
    fn visit(&mut self, _v: Visit) {
        let _count = corpus_helpers::record_visit();
        let _pure = corpus_helpers::double(2);
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Guestbook).post(Visit);
    rt.shutdown_graceful();
}
