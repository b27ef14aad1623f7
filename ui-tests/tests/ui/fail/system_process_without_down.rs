use whirl::prelude::*;

#[derive(Message)]
struct Start;

#[process(system)]
struct Supervisor;

#[process]
impl Supervisor {
    #[handle]
    fn start(&mut self, _: Start) {}
}

fn main() {}
