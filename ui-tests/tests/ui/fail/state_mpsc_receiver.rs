//! A channel's receiver shares the channel with every sender: refused in process state.
use std::sync::mpsc::Receiver;
use whirl::prelude::*;

#[process]
struct Drain {
    input: Receiver<u64>,
}

fn main() {}
