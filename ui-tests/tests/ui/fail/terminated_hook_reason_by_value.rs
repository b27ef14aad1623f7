//! `#[terminated]` takes the exit reason by reference; the error is the only one, though
//! `main` posts the message the process handles.
use whirl::prelude::*;

#[derive(Message)]
struct Ping;

#[process]
struct Service;

#[process]
impl Service {
    #[handle]
    fn ping(&mut self, _: Ping) {}

    #[terminated]
    fn close(&mut self, _reason: ExitReason) {}
}

fn main() {
    let rt = Runtime::new();
    let service = rt.spawn(Service);
    let _ = service.post(Ping);
}
