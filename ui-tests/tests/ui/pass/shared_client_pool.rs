//! Class 5: the sanctioned way to share a thread-safe client between processes, without a
//! dedicated group: `SharedClient`, with the reason.
use std::sync::{Arc, Mutex};
use whirl::prelude::*;
use whirl::SharedClient;

/// Stands in for a connection pool from another crate: internally shared and synchronised.
struct Pool {
    rows: Mutex<Vec<String>>,
}

#[process]
struct Repository {
    pool: SharedClient<Arc<Pool>>,
}

#[derive(Message)]
struct Insert(String);

#[derive(Message, Debug)]
struct Count(ReplyTo<usize>);

#[process]
impl Repository {
    #[handle]
    fn insert(&mut self, Insert(row): Insert) {
        self.pool.rows.lock().unwrap().push(row);
    }

    #[handle]
    fn count(&mut self, Count(reply): Count) {
        let _ = reply.send(self.pool.rows.lock().unwrap().len());
    }
}

fn main() {
    let rt = Runtime::builder().threads(2).build().expect("the runtime starts");
    let pool = SharedClient::new(
        Arc::new(Pool { rows: Mutex::new(Vec::new()) }),
        "a connection pool: the database is the shared state, the pool synchronises access",
    );
    assert!(format!("{pool:?}").contains("connection pool"));
    let a = rt.spawn(Repository { pool: pool.clone() });
    let b = rt.spawn(Repository { pool });
    a.post(Insert("x".into())).unwrap();
    b.post(Insert("y".into())).unwrap();
    rt.block_until_idle();
    assert_eq!(a.request_with(Count).call().unwrap(), 2);
    rt.shutdown_graceful();
}
