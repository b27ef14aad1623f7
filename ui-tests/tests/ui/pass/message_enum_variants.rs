//! The generated message enum: one variant per handler, named after the message type it holds;
//! where two handled types end in the same name, named after the handlers instead.
use whirl::prelude::*;

mod a {
    #[derive(whirl::Message)]
    pub struct Ping;
}

mod b {
    #[derive(whirl::Message)]
    pub struct Ping;
}

#[derive(Message)]
struct Reset;

#[derive(Message)]
struct Wrapper<T: whirl::Isolated>(T);

#[process]
struct Counter;

#[process]
impl Counter {
    #[handle]
    fn reset(&mut self, _: Reset) {}

    #[handle]
    fn wrapped(&mut self, _: Wrapper<u8>) {}

    #[handle]
    fn ping_a(&mut self, _: a::Ping) {}

    #[handle]
    fn on_b_ping(&mut self, _: b::Ping) {}
}

/// The enum is the process's `Process::Message`; it has no other name.
type Msg = <Counter as Process>::Message;

fn main() {
    // Named after the types...
    let _ = Msg::Reset(Reset);
    let _ = Msg::Wrapper(Wrapper(1));
    // ...or, for the two types both named `Ping`, after their handlers.
    let _ = Msg::PingA(a::Ping);
    let _ = Msg::OnBPing(b::Ping);
    // Each message type converts into the enum.
    let _: Msg = Reset.into();
}
