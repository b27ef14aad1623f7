//! Class 5: a `SharedClient` can be handed to another process in a message.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use whirl::prelude::*;
use whirl::SharedClient;

#[derive(Message)]
struct UseClient(SharedClient<Arc<AtomicU64>>);

#[process]
struct User;

#[process]
impl User {
    #[handle]
    fn use_client(&mut self, UseClient(client): UseClient) {
        client.fetch_add(1, Ordering::Relaxed);
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let metrics = Arc::new(AtomicU64::new(0));
    let client = SharedClient::new(Arc::clone(&metrics), "a metrics counter exported to the host");
    let user = rt.spawn(User);
    user.post(UseClient(client)).unwrap();
    rt.block_until_idle();
    assert_eq!(metrics.load(Ordering::Relaxed), 1);
    rt.shutdown_graceful();
}
