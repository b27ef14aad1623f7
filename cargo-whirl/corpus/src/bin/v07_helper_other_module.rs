//! A handler calls a helper in another module, which touches a static.
// expect: REQUESTS
use whirl::prelude::*;

mod stats {
    use std::sync::atomic::{AtomicUsize, Ordering};

    pub static REQUESTS: AtomicUsize = AtomicUsize::new(0);

    pub fn count_request() {
        REQUESTS.fetch_add(1, Ordering::SeqCst); //~ REQUESTS
    }
}

#[derive(Message)]
struct Request;

#[process]
struct Server;

#[process]
impl Server {
    #[handle]
    fn request(&mut self, _r: Request) {
        stats::count_request();
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Server).post(Request);
    rt.shutdown_graceful();
}
