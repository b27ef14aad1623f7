use whirl::prelude::*;

#[derive(Message)]
struct Ping;

struct Pinger {
    pings: u64,
}

#[process]
impl Pinger {
    #[handle]
    fn ping(&mut self, _: Ping) {
        self.pings += 1;
    }
}

fn main() {}
