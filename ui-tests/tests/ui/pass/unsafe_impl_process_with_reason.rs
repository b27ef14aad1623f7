//! Class 1: the one way around `#[process]`: an `unsafe impl` whose SAFETY comment carries the
//! isolation argument.
use whirl::prelude::*;

struct Total {
    sum: u64,
}

#[derive(Message)]
struct Add(u64);

#[derive(Message, Debug)]
struct Get(ReplyTo<u64>);

#[derive(Message)]
enum TotalMessage {
    Add(Add),
    Get(Get),
}

// SAFETY: the state is one `u64`; the messages are `Add` and `Get`, both `Message`s.
unsafe impl Process for Total {
    type Message = TotalMessage;

    fn handle(&mut self, msg: TotalMessage, _: &mut Ctx<Self>) -> Result<(), Failure> {
        match msg {
            TotalMessage::Add(Add(n)) => self.sum += n,
            TotalMessage::Get(Get(reply)) => {
                let _ = reply.send(self.sum);
            }
        }
        Ok(())
    }
}

impl Handles<Add> for Total {
    fn into_message(msg: Add) -> TotalMessage {
        TotalMessage::Add(msg)
    }
}

impl Handles<Get> for Total {
    fn into_message(msg: Get) -> TotalMessage {
        TotalMessage::Get(msg)
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let total = rt.spawn(Total { sum: 0 });
    total.post(Add(2)).unwrap();
    total.post(Add(3)).unwrap();
    assert_eq!(total.request_with(Get).call().unwrap(), 5);
    rt.shutdown_graceful();
}
