//! Process state can be an enum: a state machine whose every variant is checked.
use whirl::prelude::*;

#[derive(Message)]
enum Door {
    Open,
    Close,
    Lock(u32),
}

#[derive(Message, Debug)]
struct IsLocked(ReplyTo<bool>);

#[process]
enum Latch {
    Opened,
    Closed,
    Locked { code: u32 },
}

#[process]
impl Latch {
    #[handle]
    fn door(&mut self, door: Door) -> Result<(), Failure> {
        *self = match (&*self, door) {
            (Latch::Locked { .. }, _) => return Err(Failure::new("locked")),
            (_, Door::Open) => Latch::Opened,
            (_, Door::Close) => Latch::Closed,
            (Latch::Closed, Door::Lock(code)) => Latch::Locked { code },
            (Latch::Opened, Door::Lock(_)) => return Err(Failure::new("cannot lock an open door")),
        };
        Ok(())
    }

    #[handle]
    fn is_locked(&mut self, IsLocked(reply): IsLocked) {
        let _ = reply.send(matches!(self, Latch::Locked { code } if *code > 0));
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let latch = rt.spawn(Latch::Opened);
    latch.post(Door::Open).unwrap();
    latch.post(Door::Close).unwrap();
    latch.post(Door::Lock(1234)).unwrap();
    assert!(latch.request_with(IsLocked).call().unwrap());
    rt.shutdown_graceful();
}
