//! An async handler's future moves between workers: holding an `Rc` across an `.await` is
//! refused.
use std::rc::Rc;
use std::time::Duration;

use whirl::prelude::*;

#[derive(Message)]
struct Fetch;

#[process]
struct Fetcher;

#[process]
impl Fetcher {
    #[handle]
    async fn fetch(&mut self, _: Fetch) {
        let local = Rc::new(1);
        whirl::time::sleep(Duration::from_millis(1)).await;
        drop(local);
    }
}

fn main() {}
