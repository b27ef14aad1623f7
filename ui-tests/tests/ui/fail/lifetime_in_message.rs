use std::marker::PhantomData;
use whirl::prelude::*;

#[derive(Message)]
enum Event<'buf> {
    Data(Vec<u8>),
    Mark(PhantomData<&'buf [u8]>),
}

fn main() {}
