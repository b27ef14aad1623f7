//! The drain (SIGTERM, SIGINT): the server stops taking work and lets what it has finish,
//! within a deadline, without a connection ever closing on a request it has not answered.
//!
//! [`Drainer::run`] runs it (`Server::drain`), from the thread that got the signal:
//!
//! 1. Readiness goes false (`/readyz` answers 503): load balancers stop sending.
//! 2. The acceptor stops: the listening socket is closed, new connections are refused.
//! 3. Every connection is told [`Drain::Begin`] (they all joined the process group
//!    [`CONNECTIONS`] when they started; one accepted after this sees the phase instead).
//!    From then on (`HttpConnection`'s drain methods), a connection's next answer carries `Connection: close` and the
//!    connection closes after it; requests in flight are answered first. A connection with
//!    nothing to answer is closed once it has been quiet for [`IDLE_GRACE`] (at once if it
//!    has been already): closing one that has just been answered would race with the
//!    client's next request, which would then meet a closed connection instead of an
//!    answer with `Connection: close`.
//! 4. When every connection has closed, the drain is over. If some are still open at the
//!    deadline, each is told [`Drain::Deadline`]: the request it is waiting on (or has
//!    queued, or is receiving) is answered `503 Service Unavailable` with `Retry-After` and
//!    `Connection: close`, later ones are not (a client reads in that header that they were
//!    not served), and the connection closes. The drain waits up to [`FLUSH`] for those
//!    answers to be written.
//!
//! The caller then shuts the runtime down: what still runs (a handler still busy with a
//! request already answered 503) is stopped.

use std::sync::Arc;
use std::time::{Duration, Instant};

use whirl::net::{Acceptor, AcceptorMsg};
use whirl::prelude::*;
use whirl::routing::ProcessGroups;

use crate::ops::{Ops, Phase};

/// The process group every connection joins, to be told of the drain.
pub const CONNECTIONS: &str = "iris_http connections";
/// How long a connection with nothing to answer may stay quiet, once draining, before it
/// is closed (see the module documentation): `Options::drain_grace`'s default.
pub const IDLE_GRACE: Duration = Duration::from_secs(1);
/// After the deadline, how long the connections have to write their 503s and close.
pub const FLUSH: Duration = Duration::from_secs(2);
/// How often the drain looks at what is still open.
const POLL: Duration = Duration::from_millis(10);

/// What a drain tells the connections.
#[derive(Message, Clone, Copy, Debug, PartialEq, Eq)]
#[message(bypass_admission)]
pub enum Drain {
    /// The drain has begun: close after the next answer, or once quiet.
    Begin,
    /// The deadline has passed: answer what is waiting 503 and close.
    Deadline,
}

/// How a drain went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrainReport {
    /// Connections still open at the deadline (0: every one closed in time).
    pub at_deadline: usize,
    /// Connections still open after the deadline's answers had [`FLUSH`] to go out.
    pub left: usize,
    /// How long it took.
    pub took: Duration,
}

/// What a drain needs of a server: its phase and counts, its acceptor, its connections.
pub struct Drainer {
    pub ops: Arc<Ops>,
    pub acceptor: Addr<Acceptor>,
    pub process_groups: ProcessGroups,
}

impl Drainer {
    /// Drains the server (see the module documentation): returns once every connection has
    /// closed, or `timeout` and then [`FLUSH`] have passed.
    pub fn run(&self, timeout: Duration) -> DrainReport {
        let began = Instant::now();
        let deadline = began + timeout;
        self.ops.advance(Phase::Draining);
        self.stop_accepting();
        let connections = self.process_groups.group::<Drain>(CONNECTIONS);
        let _ = connections.post_all(Drain::Begin);
        let at_deadline = self.wait_for_connections(deadline);
        let mut left = at_deadline;
        if at_deadline > 0 {
            self.ops.advance(Phase::Deadline);
            let _ = connections.post_all(Drain::Deadline);
            left = self.wait_for_connections(Instant::now() + FLUSH);
        }
        DrainReport {
            at_deadline,
            left,
            took: began.elapsed(),
        }
    }

    /// Closes the listening socket: new connections are refused.
    pub fn stop_accepting(&self) {
        let _ = self.acceptor.post(AcceptorMsg::Stop);
    }

    /// Waits until the acceptor has stopped and no connection is open, or `until`; returns
    /// how many are open.
    fn wait_for_connections(&self, until: Instant) -> usize {
        loop {
            let open = usize::try_from(self.ops.metrics.connections.get()).unwrap_or(0);
            if open == 0 && self.acceptor.is_terminated() {
                return 0;
            }
            if Instant::now() >= until {
                return open;
            }
            std::thread::sleep(POLL);
        }
    }
}
