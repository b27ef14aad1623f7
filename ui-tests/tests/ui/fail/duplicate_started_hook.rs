use whirl::prelude::*;

#[process]
struct Service;

#[process]
impl Service {
    #[started]
    fn open(&mut self) {}

    #[started]
    fn open_again(&mut self) {}
}

fn main() {}
