//! Class 2: a message of one's own named `Down` is an ordinary message of a non-system process.
use whirl::prelude::*;

#[derive(Message)]
struct Down(u8);

#[derive(Message, Debug)]
struct Level(ReplyTo<u8>);

#[process]
struct Elevator {
    level: u8,
}

#[process]
impl Elevator {
    #[handle]
    fn down(&mut self, Down(n): Down) {
        self.level = self.level.saturating_sub(n);
    }

    #[handle]
    fn level(&mut self, Level(reply): Level) {
        let _ = reply.send(self.level);
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let lift = rt.spawn(Elevator { level: 5 });
    lift.post(Down(2)).unwrap();
    assert_eq!(lift.request_with(Level).call().unwrap(), 3);
    rt.shutdown_graceful();
}
