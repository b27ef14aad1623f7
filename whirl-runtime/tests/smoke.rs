use whirl_runtime::*;

struct Echo {
    seen: u64,
}
enum EchoMsg {
    Hit(u64),
    Ask(ReplyTo<u64>),
}
impl Process for Echo {
    type Message = EchoMsg;
    fn handle(&mut self, msg: EchoMsg, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        match msg {
            EchoMsg::Hit(n) => self.seen += n,
            EchoMsg::Ask(r) => {
                let _ = r.send(self.seen);
            }
        }
        Ok(())
    }
}
impl Handles<u64> for Echo {
    fn into_message(m: u64) -> EchoMsg {
        EchoMsg::Hit(m)
    }
}
impl Handles<ReplyTo<u64>> for Echo {
    fn into_message(m: ReplyTo<u64>) -> EchoMsg {
        EchoMsg::Ask(m)
    }
}

#[test]
fn smoke() {
    let rt = Runtime::new();
    let a = rt.spawn(Echo { seen: 0 });
    for i in 0..100_000u64 {
        a.post(i).unwrap();
    }
    rt.block_until_idle();
    let total = a.call(|r: ReplyTo<u64>| r).unwrap();
    assert_eq!(total, (0..100_000u64).sum::<u64>());
    let c = rt.counts();
    assert_eq!(c.posted, 100_001);
    assert_eq!(c.handled, 100_001);
    rt.shutdown_graceful();
}
