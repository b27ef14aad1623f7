//! A system process receives termination notices as `Down` messages.
use whirl::prelude::*;
use whirl::DeclaredProcess;

#[derive(Message)]
struct Crash;

#[process]
struct Worker;

#[process]
impl Worker {
    #[handle]
    fn crash(&mut self, _: Crash) -> Result<(), Failure> {
        Err(Failure::new("asked to crash"))
    }
}

#[derive(Message)]
struct Watch(Addr<Worker>);

#[derive(Message, Debug)]
struct Seen(ReplyTo<Vec<String>>);

#[process(system)]
struct Supervisor {
    seen: Vec<String>,
}

#[process]
impl Supervisor {
    #[handle]
    fn watch(&mut self, Watch(worker): Watch, ctx: &mut Ctx<Self>) {
        ctx.monitor(&worker);
    }

    #[handle]
    fn down(&mut self, notice: Down) {
        self.seen.push(notice.reason.to_string());
    }

    #[handle]
    fn seen(&mut self, Seen(reply): Seen) {
        let _ = reply.send(self.seen.clone());
    }
}

fn main() {
    const { assert!(<Supervisor as DeclaredProcess>::SYSTEM) };
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let supervisor = rt.spawn(Supervisor { seen: Vec::new() });
    let worker = rt.spawn(Worker);
    supervisor.post(Watch(worker.clone())).unwrap();
    rt.block_until_idle();
    worker.post(Crash).unwrap();
    rt.block_until_idle();
    assert_eq!(supervisor.request_with(Seen).call().unwrap(), ["failed: asked to crash"]);
    assert!(!supervisor.is_terminated());
    rt.shutdown_graceful();
}
