//! A `lazy_static!` `Mutex`: reported under the name the user wrote, at the line that uses it.
// expect: QUEUE
use std::collections::VecDeque;
use std::sync::Mutex;

use lazy_static::lazy_static;
use whirl::prelude::*;

lazy_static! {
    static ref QUEUE: Mutex<VecDeque<u64>> = Mutex::new(VecDeque::new());
}

#[derive(Message)]
struct Enqueue(u64);

#[process]
struct Producer;

#[process]
impl Producer {
    #[handle]
    fn enqueue(&mut self, Enqueue(job): Enqueue) {
        let lock = QUEUE.lock(); //~ QUEUE
        if let Ok(mut queue) = lock {
            queue.push_back(job);
        }
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Producer).post(Enqueue(3));
    rt.shutdown_graceful();
}
