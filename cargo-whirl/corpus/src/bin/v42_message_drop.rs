//! A message whose `Drop` touches a static: the handler that takes it drops it, and the
//! report names that handler.
// expect: RECEIPTS
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static RECEIPTS: AtomicU64 = AtomicU64::new(0);

#[derive(Message)]
struct Order(u64);

impl Drop for Order {
    fn drop(&mut self) {
        RECEIPTS.fetch_add(self.0, Ordering::Relaxed); //~ RECEIPTS
    }
}

#[process]
struct Till {
    orders: u64,
}

#[process]
impl Till {
    #[handle]
    fn order(&mut self, order: Order) {
        self.orders += order.0;
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Till { orders: 0 }).post(Order(2));
    rt.shutdown_graceful();
}
