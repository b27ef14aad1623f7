//! A channel's sender in a message shares the channel: refused (send an `Addr` instead).
use std::sync::mpsc::Sender;
use whirl::prelude::*;

#[derive(Message)]
struct Report {
    to: Sender<String>,
}

fn main() {}
