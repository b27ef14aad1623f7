//! Class 2: a generic process spawned with a non-isolated argument is refused at the spawn.
use std::rc::Rc;
use whirl::prelude::*;

#[process]
struct Store<T> {
    items: Vec<T>,
}

#[process]
impl<T: Isolated> Store<T> {}

fn main() {
    let rt = Runtime::new();
    rt.spawn(Store::<Rc<u8>> { items: Vec::new() });
}
