//! `#[started]` runs before the first message, `#[terminated]` exactly once at the end.
use whirl::prelude::*;

#[derive(Message)]
struct Event(&'static str);

#[derive(Message, Debug)]
struct Events(ReplyTo<Vec<&'static str>>);

#[process]
struct Observer {
    events: Vec<&'static str>,
}

#[process]
impl Observer {
    #[handle]
    fn event(&mut self, Event(what): Event) {
        self.events.push(what);
    }

    #[handle]
    fn events(&mut self, Events(reply): Events) {
        let _ = reply.send(self.events.clone());
    }
}

#[derive(Message)]
struct Stop;

#[process]
struct Session {
    observer: Recipient<Event>,
}

#[process]
impl Session {
    #[started]
    fn open(&mut self, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        self.observer
            .post(Event("started"))
            .map_err(|_| Failure::new("observer gone"))
    }

    #[handle]
    fn stop(&mut self, _: Stop, ctx: &mut Ctx<Self>) {
        let _ = self.observer.post(Event("stop"));
        ctx.complete();
    }

    #[terminated]
    fn close(&mut self, reason: &ExitReason) {
        let what = if reason.is_failure() {
            "failed"
        } else {
            "terminated"
        };
        let _ = self.observer.post(Event(what));
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let observer = rt.spawn(Observer { events: Vec::new() });
    let session = rt.spawn(Session {
        observer: observer.recipient(),
    });
    session.post(Stop).unwrap();
    rt.block_until_idle();
    assert!(session.is_terminated());
    assert_eq!(
        observer.request_with(Events).call().unwrap(),
        ["started", "stop", "terminated"]
    );
    rt.shutdown_graceful();
}
