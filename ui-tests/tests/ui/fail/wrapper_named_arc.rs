//! Class 2: a type of one's own named `Arc` is checked by what it holds, not its name.
use whirl::prelude::*;

#[derive(Isolated)]
struct Arc<T>(std::sync::Arc<std::sync::Mutex<T>>);

fn main() {}
