//! An async `#[started]` hook answers nobody either: it returns `()` or `Result<(), E>`,
//! reported at its return type.
use whirl::prelude::*;

#[process]
struct Loader;

#[process]
impl Loader {
    #[started]
    async fn open(&mut self) -> u64 {
        7
    }
}

fn main() {}
