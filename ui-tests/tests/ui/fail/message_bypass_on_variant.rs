use whirl::prelude::*;

#[derive(Message)]
enum Control {
    #[message(bypass_admission)]
    Stop,
    Drain,
}

fn main() {}
