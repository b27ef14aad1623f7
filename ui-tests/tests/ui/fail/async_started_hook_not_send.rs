//! An async `#[started]` hook's future moves between workers, as an async handler's does:
//! holding an `Rc` across an `.await` is refused, at the hook.
use std::rc::Rc;
use std::time::Duration;

use whirl::prelude::*;

#[process]
struct Loader;

#[process]
impl Loader {
    #[started]
    async fn open(&mut self) {
        let local = Rc::new(1);
        whirl::time::sleep(Duration::from_millis(1)).await;
        drop(local);
    }
}

fn main() {}
