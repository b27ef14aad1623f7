use whirl::prelude::*;

#[derive(Message)]
struct Buffer {
    ptr: *mut u8,
    len: usize,
}

fn main() {}
