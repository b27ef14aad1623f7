//! `tracing`'s macros keep callsite statics with atomics, `log` and `metrics` reach their
//! global recorders: these facades are made to be shared and are allowed.
// expect:
use whirl::prelude::*;

#[derive(Message)]
struct Event(u32);

#[process]
struct Traced {
    events: u32,
}

#[process]
impl Traced {
    #[handle]
    fn event(&mut self, Event(n): Event) {
        let span = tracing::info_span!("event", n);
        let _guard = span.enter();
        tracing::info!(n, "event received");
        tracing::debug!(total = self.events, "so far");
        log::info!("event {n}");
        metrics::counter!("events").increment(u64::from(n));
        metrics::histogram!("event_size", "kind" => "plain").record(f64::from(n));
        self.events += n;
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Traced { events: 0 }).post(Event(1));
    rt.shutdown_graceful();
}
