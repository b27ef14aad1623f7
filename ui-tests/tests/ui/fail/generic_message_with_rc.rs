use std::rc::Rc;
use whirl::prelude::*;

#[derive(Message)]
struct Envelope<T> {
    body: T,
}

#[process]
struct Mailbox {
    received: usize,
}

#[process]
impl Mailbox {
    #[handle]
    fn envelope(&mut self, _msg: Envelope<Rc<String>>) {
        self.received += 1;
    }
}

fn main() {}
