// A message meant for another node (serde, as whirl-dist's `Remote` requires) holding a local
// process address: the error says to send a `Pid`.
use serde::{Deserialize, Serialize};
use whirl::prelude::*;

#[process]
struct Counter;

#[process]
impl Counter {}

#[derive(Message, Serialize, Deserialize)]
struct Subscribe {
    to: Addr<Counter>,
}

fn main() {}
