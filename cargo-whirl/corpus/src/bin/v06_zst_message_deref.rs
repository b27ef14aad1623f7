//! A zero-sized message whose `Deref` reaches a static `Mutex`: the message carries nothing,
//! yet every receiver reaches the same state through it.
// expect: BOARD
use std::ops::Deref;
use std::sync::Mutex;
use whirl::prelude::*;

static BOARD: Mutex<Vec<String>> = Mutex::new(Vec::new());

#[derive(Message)]
struct Board;

impl Deref for Board {
    type Target = Mutex<Vec<String>>;
    fn deref(&self) -> &Self::Target {
        &BOARD //~ BOARD
    }
}

#[process]
struct Poster;

#[process]
impl Poster {
    #[handle]
    fn post_to(&mut self, board: Board) {
        if let Ok(mut board) = board.lock() {
            board.push("pinned".into());
        }
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Poster).post(Board);
    rt.shutdown_graceful();
}
