use whirl::prelude::*;

#[derive(Message)]
struct Fetch;

#[process]
struct Fetcher;

#[process]
impl Fetcher {
    #[handle]
    async fn fetch(&mut self, _: Fetch) {}
}

fn main() {}
