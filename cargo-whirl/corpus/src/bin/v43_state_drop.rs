//! A part of the state whose `Drop` touches a static, dropped when a handler replaces it.
// expect: CLOSED
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static CLOSED: AtomicU64 = AtomicU64::new(0);

#[derive(Isolated)]
#[allow(dead_code)]
struct Connection {
    id: u64,
}

impl Drop for Connection {
    fn drop(&mut self) {
        CLOSED.fetch_add(1, Ordering::Relaxed); //~ CLOSED
    }
}

#[derive(Message)]
struct Reconnect(u64);

#[process]
struct Client {
    connection: Connection,
}

#[process]
impl Client {
    #[handle]
    fn reconnect(&mut self, Reconnect(id): Reconnect) {
        self.connection = Connection { id };
    }
}

fn main() {
    let rt = Runtime::new();
    let client = Client {
        connection: Connection { id: 0 },
    };
    let _ = rt.spawn(client).post(Reconnect(1));
    rt.shutdown_graceful();
}
