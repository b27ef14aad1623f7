//! Addresses cross process boundaries: `Addr<P>` and the type-erased `Recipient<M>`.
use whirl::prelude::*;

#[derive(Message)]
struct Ping {
    round: u32,
    reply_to: Addr<Player>,
}

#[derive(Message)]
struct Done(u32);

#[process]
struct Player {
    referee: Recipient<Done>,
}

#[process]
impl Player {
    #[handle]
    fn ping(&mut self, ping: Ping, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        if ping.round == 10 {
            let _ = self.referee.post(Done(ping.round));
            return Ok(());
        }
        let back = Ping {
            round: ping.round + 1,
            reply_to: ctx.myself(),
        };
        ping.reply_to
            .post(back)
            .map_err(|_| Failure::new("partner gone"))
    }
}

#[derive(Message, Debug)]
struct Result_(ReplyTo<u32>);

#[process]
struct Referee {
    rounds: u32,
}

#[process]
impl Referee {
    #[handle]
    fn done(&mut self, Done(rounds): Done) {
        self.rounds = rounds;
    }

    #[handle]
    fn result(&mut self, Result_(reply): Result_) {
        let _ = reply.send(self.rounds);
    }
}

fn main() {
    let rt = Runtime::builder().threads(2).build().expect("the runtime starts");
    let referee = rt.spawn(Referee { rounds: 0 });
    let a = rt.spawn(Player {
        referee: referee.recipient(),
    });
    let b = rt.spawn(Player {
        referee: referee.recipient(),
    });
    a.post(Ping {
        round: 0,
        reply_to: b,
    })
    .unwrap();
    rt.block_until_idle();
    assert_eq!(referee.request_with(Result_).call().unwrap(), 10);
    rt.shutdown_graceful();
}
