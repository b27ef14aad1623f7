use whirl::prelude::*;

#[process]
struct Loader;

#[process]
impl Loader {
    #[started]
    async fn started(&mut self) {}
}

fn main() {}
