//! A `ChildTemplate`'s function: the supervisor calls it inside its process for every
//! dynamic child, and it touches a static.
// expect: SESSIONS_MADE
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;
use whirl::supervision::{ChildSpec, ChildTemplate, RestartStrategy, Supervisor, SupervisorSpec};

static SESSIONS_MADE: AtomicU64 = AtomicU64::new(0);

#[derive(Message)]
struct Touch;

#[process]
#[derive(Clone)]
struct Session {
    user: String,
}

#[process]
impl Session {
    #[handle]
    fn touch(&mut self, _t: Touch) {
        self.user.push('!');
    }
}

fn session(user: String) -> ChildSpec {
    SESSIONS_MADE.fetch_add(1, Ordering::Relaxed); //~ SESSIONS_MADE
    ChildSpec::worker("session", Session { user })
}

fn main() {
    let rt = Runtime::new();
    let spec = SupervisorSpec::new("sessions")
        .strategy(RestartStrategy::SimpleOneForOne)
        .template(ChildTemplate::new(session));
    let sessions = rt.spawn(Supervisor::new(spec));
    let _ = sessions.start_dynamic(String::from("ada"));
    rt.shutdown_graceful();
}
