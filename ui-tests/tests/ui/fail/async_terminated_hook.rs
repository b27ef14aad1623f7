//! A `#[terminated]` hook cannot be `async`: the process is terminating, and no turn is left
//! to await in.
use whirl::prelude::*;

#[process]
struct Loader;

#[process]
impl Loader {
    #[terminated]
    async fn close(&mut self) {}
}

fn main() {}
