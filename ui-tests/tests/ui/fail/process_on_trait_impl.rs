use whirl::prelude::*;

#[process]
struct Counter;

#[process]
impl Default for Counter {
    fn default() -> Self {
        Counter
    }
}

fn main() {}
