use whirl::prelude::*;

#[process(sytem)]
struct Supervisor;

fn main() {}
