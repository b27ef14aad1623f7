//! A hook answers nobody: it returns `()` or `Result<(), E>`.
use whirl::prelude::*;

#[process]
struct Loader;

#[process]
impl Loader {
    #[started]
    fn started(&mut self) -> u64 {
        7
    }
}

fn main() {}
