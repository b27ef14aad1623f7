//! What the server's processes share: the site (immutable, behind an `Arc`) and how a refused
//! request is answered. A leaf of the server's modules: every process may read it, and it
//! names no process but the session store it addresses.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use whirl::prelude::*;
use whirl::SharedClient;
use whirl_http::{Limits, Response};

use super::session_store::SessionStore;
use crate::ops::Ops;
use crate::store::Store;

/// What a 503 asks the client to wait, seconds.
pub const RETRY_AFTER_SECS: u32 = 2;

/// How a request refused under overload is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Isolated)]
pub struct ShedPolicy {
    /// The 503 is written this long after the refusal (the connection's later answers wait
    /// behind it, in order). A client that retries at once, as closed-loop load generators
    /// and impatient users do, then costs the server one refusal per `delay` instead of as
    /// many as it can send: refusals stop competing for the CPU with admitted work.
    pub delay: Duration,
    /// Whether the 503 closes the connection. Keeping it open (the default) spares a client
    /// that retries the reconnection and a new session (each reconnection of a cookie-less
    /// client is a new principal).
    pub close: bool,
}

impl Default for ShedPolicy {
    fn default() -> Self {
        ShedPolicy {
            delay: Duration::from_millis(50),
            close: false,
        }
    }
}

impl ShedPolicy {
    /// The 503 for a refused request.
    pub fn response(&self) -> Response {
        let mut response = Response::service_unavailable(RETRY_AFTER_SECS);
        response.close = self.close;
        response
    }
}

/// HTTP/2: whether it is spoken (ALPN `h2` over TLS, h2c by prior knowledge in the clear),
/// how many streams a client may open at once, and how a refused stream is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Isolated)]
pub struct H2Policy {
    pub enabled: bool,
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` (RFC 9113 §6.5.2 asks for at least 100); streams
    /// past it are refused by the codec with `REFUSED_STREAM`.
    pub max_streams: u32,
    pub refusal: H2Refusal,
}

impl Default for H2Policy {
    fn default() -> Self {
        H2Policy {
            enabled: true,
            max_streams: 100,
            refusal: H2Refusal::Status503,
        }
    }
}

/// How an HTTP/2 stream refused under overload is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Isolated)]
pub enum H2Refusal {
    /// 503 with `Retry-After`, after the shed delay, as over HTTP/1.1: the client is told
    /// to wait, and the session's next requests are refused locally meanwhile.
    Status503,
    /// `RST_STREAM` with `REFUSED_STREAM` (RFC 9113 §8.7: not processed, safe to retry).
    /// Browsers retry such a stream at once, so a refusal turns back into load: use it for
    /// clients that back off by themselves.
    RefusedStream,
}

/// What the processes share, immutable.
#[derive(Isolated)]
pub struct Site {
    pub root: PathBuf,
    pub store: Store,
    /// Simulated CPU time per unit of work (a resource lookup is 1 unit, a listing 2, a
    /// low-quality file 1, a high-quality file 8); zero but in the overload demo.
    pub work: Duration,
    pub limits: Limits,
    /// A keep-alive connection with nothing to do is closed after this long.
    pub idle_timeout: Duration,
    /// A request whose head and body have not fully arrived after this long is answered 408
    /// and its connection closed (slow clients hold no connection forever).
    pub request_timeout: Duration,
    pub dispatcher_group: Group,
    pub sessions: Addr<SessionStore>,
    /// Whether a file handler has an `AsyncFile` process (in the "files-io" group, whose
    /// controller adds threads while reads block) open and read its file, as in the paper,
    /// or does it itself (the default). Itself saves two process hops per request, a third
    /// of a small file's cost; what it may block on is an `open` and `fstat` and a read of
    /// less than `SENDFILE_MIN` (64 KiB): larger bodies are not read at all, the socket
    /// process sends them from the page cache (`sendfile`). A cold disk then blocks one
    /// "files" thread for one small read, as it blocks an nginx worker.
    pub file_io_process: bool,
    /// How refusals are answered.
    pub shed: ShedPolicy,
    /// Where a client without a session is given an anonymous one (decoded path prefixes,
    /// see `routes::starts_session`); elsewhere it is served on its connection's session.
    pub session_paths: Vec<String>,
    /// Answers go over TLS: cookies are `Secure`, and HSTS may be sent.
    pub tls: bool,
    /// `Strict-Transport-Security: max-age` sent with every answer over TLS, if set.
    pub hsts: Option<Duration>,
    /// Once draining, how long a connection with nothing to answer may stay quiet before it
    /// is closed (`server/drain.rs`).
    pub drain_grace: Duration,
    /// HTTP/2 on or off, and its limits.
    pub h2: H2Policy,
    /// Metrics, the access log, the drain's phase: shared with the server.
    pub ops: SharedClient<Arc<Ops>>,
}
