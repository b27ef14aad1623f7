//! An overloaded operator: `a + b` on a user type runs an `Add` impl that touches a static.
// expect: ADDITIONS
use std::ops::Add;
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static ADDITIONS: AtomicU64 = AtomicU64::new(0);

#[derive(Clone, Copy, Isolated)]
struct Money(u64);

impl Add for Money {
    type Output = Money;
    fn add(self, other: Money) -> Money {
        ADDITIONS.fetch_add(1, Ordering::Relaxed); //~ ADDITIONS
        Money(self.0 + other.0)
    }
}

#[derive(Message)]
struct Deposit(u64);

#[process]
struct Account {
    balance: Money,
}

#[process]
impl Account {
    #[handle]
    fn deposit(&mut self, Deposit(n): Deposit) {
        self.balance = self.balance + Money(n);
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Account { balance: Money(0) }).post(Deposit(5));
    rt.shutdown_graceful();
}
