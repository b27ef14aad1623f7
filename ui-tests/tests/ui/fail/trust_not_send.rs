//! A trusted field must still be `Send`: trust cannot move an `Rc` to another thread.
use std::rc::Rc;
use whirl::prelude::*;

#[derive(Message)]
struct Locate {
    #[isolated(trust = "I promise")]
    user: Rc<str>,
}

fn main() {}
