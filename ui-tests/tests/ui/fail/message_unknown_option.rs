use whirl::prelude::*;

#[derive(Message)]
#[message(priority = 3)]
struct Job;

fn main() {}
