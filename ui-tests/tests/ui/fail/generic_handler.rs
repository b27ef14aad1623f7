use whirl::prelude::*;

#[process]
struct Sink;

#[process]
impl Sink {
    #[handle]
    fn any<M: Message>(&mut self, _: M) {}
}

fn main() {}
