//! A handler writes a `static mut` in an `unsafe` block.
// expect: TOTAL
use whirl::prelude::*;

static mut TOTAL: u64 = 0;

#[derive(Message)]
struct Add(u64);

#[process]
struct Adder;

#[process]
impl Adder {
    #[handle]
    fn add(&mut self, Add(n): Add) {
        // SAFETY: none; this is the bug the checker must find.
        unsafe {
            TOTAL += n; //~ TOTAL
        }
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Adder).post(Add(2));
    rt.shutdown_graceful();
}
