//! A handler with a wrong signature is reported at its token, once: the other handlers are
//! still generated, so posting their messages is not an error too.
use whirl::prelude::*;

#[derive(Message)]
struct Ping;

#[derive(Message)]
struct Pong;

#[process]
struct Service;

#[process]
impl Service {
    #[handle]
    fn ping(&mut self, _: Ping) {}

    #[handle]
    fn pong(&mut self, _: &Pong) {}
}

fn main() {
    let rt = Runtime::new();
    let service = rt.spawn(Service);
    let _ = service.post(Ping);
}
