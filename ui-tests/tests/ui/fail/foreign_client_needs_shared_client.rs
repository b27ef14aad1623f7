//! Class 5: a client type from another crate (here std's `mpsc::Sender`, which shares its
//! channel) cannot derive `Isolated` nor be `unsafe impl`ed (the orphan rule): the error names
//! the sanctioned way, `SharedClient`.
use std::sync::mpsc::SyncSender;
use whirl::prelude::*;

#[process]
struct Logger {
    sink: SyncSender<String>,
}

fn main() {}
