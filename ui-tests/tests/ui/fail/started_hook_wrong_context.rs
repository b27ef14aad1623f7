//! A hook with a wrong signature is reported once, at its parameter: the process is still
//! generated from its sound methods, so posting a message it handles is not an error too.
use whirl::prelude::*;

#[derive(Message)]
struct Ping;

#[process]
struct Service;

#[process]
impl Service {
    #[handle]
    fn ping(&mut self, _: Ping) {}

    #[started]
    fn open(&mut self, _ctx: &Ctx<Self>) {}
}

fn main() {
    let rt = Runtime::new();
    let service = rt.spawn(Service);
    let _ = service.post(Ping);
}
