//! A value dropped in a handler runs a `Drop` impl that touches a static.
// expect: RELEASED
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static RELEASED: AtomicU64 = AtomicU64::new(0);

struct Ticket(u64);

impl Drop for Ticket {
    fn drop(&mut self) {
        RELEASED.fetch_add(self.0, Ordering::Relaxed); //~ RELEASED
    }
}

#[derive(Message)]
struct Issue(u64);

#[process]
struct Office;

#[process]
impl Office {
    #[handle]
    fn issue(&mut self, Issue(n): Issue) {
        let tickets = vec![Ticket(n)];
        drop(tickets);
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Office).post(Issue(1));
    rt.shutdown_graceful();
}
