//! A `PhantomData<T>` marker needs only `T: Send`, but that it does: an `Rc` is refused.
use std::marker::PhantomData;
use std::rc::Rc;
use whirl::prelude::*;

#[derive(Message)]
struct Tagged<T> {
    n: u64,
    _tag: PhantomData<T>,
}

fn crosses<T: Isolated>() {}

fn main() {
    crosses::<Tagged<Rc<u8>>>();
}
