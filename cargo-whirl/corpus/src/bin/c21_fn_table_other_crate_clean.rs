//! A table of pure `fn`s built in another crate of the workspace (a `const` of the helpers
//! crate), called through by a handler here; the helpers' other tables, whose entries touch
//! statics, have other types and are only used in `main`.
// expect:
use corpus_helpers::{parsers, CHECKSUMS, FORMATS};
use whirl::prelude::*;

#[derive(Message)]
struct Sum(usize, Vec<u8>);

#[process]
struct Summer {
    last: u8,
}

#[process]
impl Summer {
    #[handle]
    fn sum(&mut self, Sum(which, bytes): Sum) {
        if let Some(checksum) = CHECKSUMS.get(which) {
            self.last = checksum(&bytes);
        }
    }
}

fn main() {
    println!("{} {}", FORMATS[1](3), parsers()[1]("42"));
    let rt = Runtime::new();
    let _ = rt.spawn(Summer { last: 0 }).post(Sum(1, vec![1, 2]));
    rt.shutdown_graceful();
}
