//! Class 2: a field of another module's type with the same name as the message is fine when
//! owned.
use whirl::prelude::*;

mod other {
    #[derive(whirl::Isolated)]
    pub struct SameName<T>(pub T);
}

#[derive(Message)]
struct SameName<T> {
    inner: Box<other::SameName<T>>,
}

fn isolated<T: Isolated>() {}

fn main() {
    isolated::<SameName<String>>();
    let msg = SameName { inner: Box::new(other::SameName(5u8)) };
    assert_eq!(msg.inner.0, 5);
}
