use whirl::prelude::*;

#[derive(Message)]
struct Request<'a> {
    path: &'a str,
}

fn main() {}
