//! Class 2: the termination notice is recognised by its type, however it is imported.
use whirl::prelude::*;
use whirl::Down as Notice;

#[derive(Message)]
struct Watch(Addr<Worker>);

#[derive(Message, Debug)]
struct Seen(ReplyTo<usize>);

#[derive(Message)]
struct Stop;

#[process]
struct Worker;

#[process]
impl Worker {
    #[handle]
    fn stop(&mut self, _: Stop, ctx: &mut Ctx<Self>) {
        ctx.complete();
    }
}

#[process(system)]
struct Watcher {
    seen: usize,
}

#[process]
impl Watcher {
    #[handle]
    fn watch(&mut self, Watch(worker): Watch, ctx: &mut Ctx<Self>) {
        ctx.monitor(&worker);
    }

    #[handle]
    fn notice(&mut self, _notice: Notice) {
        self.seen += 1;
    }

    #[handle]
    fn seen(&mut self, Seen(reply): Seen) {
        let _ = reply.send(self.seen);
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let watcher = rt.spawn(Watcher { seen: 0 });
    let worker = rt.spawn(Worker);
    watcher.post(Watch(worker.clone())).unwrap();
    rt.block_until_idle();
    worker.post(Stop).unwrap();
    rt.block_until_idle();
    assert_eq!(watcher.request_with(Seen).call().unwrap(), 1);
    rt.shutdown_graceful();
}
