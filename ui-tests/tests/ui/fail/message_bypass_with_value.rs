use whirl::prelude::*;

#[derive(Message)]
#[message(bypass_admission = true)]
struct Reply;

fn main() {}
