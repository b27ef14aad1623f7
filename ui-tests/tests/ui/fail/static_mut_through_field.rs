use whirl::prelude::*;

static mut TOTAL: u64 = 0;

#[derive(Message)]
struct Add {
    amount: u64,
    total: &'static mut u64,
}

fn main() {
    let _ = Add {
        amount: 1,
        total: unsafe { &mut *std::ptr::addr_of_mut!(TOTAL) },
    };
}
