use whirl::prelude::*;

#[process]
struct Parser<'src> {
    input: &'src str,
}

fn main() {}
