//! The server's processes and groups: the paper's figure 2 on real sockets.
//!
//! ```text
//! Acceptor ─▶ SocketConnection ◀─▶ HttpConnection ─▶ Dispatcher ─▶ FileHandler ─▶ AsyncFile
//!  (default)    ("sockets")           ("http")       ("dispatcher")  ("files")    ("files-io",
//!                                                                                  --file-io-process)
//!                                        │  ▲                   ResourceHandler ─▶ DbConnection
//!                                        ▼  │                     ("resources")       ("db")
//!                                    SessionStore
//!                                    ("sessions")
//! ```
//!
//! The groups, their schedulers, controllers and predicates are assembled from `iris.toml`
//! (by `whirl-config`, in `main`); the server starts its processes in them.
//!
//! No process is started per request: a connection's socket, HTTP connection and dispatcher
//! live as long as it does, and each session's dispatcher starts one handler of each kind at
//! its first request of that kind (the resource handler its one connection to the store),
//! which serves the session's requests in turn and ends after the dispatcher.
//!
//! Every process serving a request carries the session's principal (priority admin 2 >
//! user 1 > anonymous 0). The dispatcher group and the handler groups have predicates that
//! shed whole sessions, lowest priority first; the file group also counts cost, so that it
//! can refuse a high-quality file and accept the low-quality one (figure 3). A refusal by a
//! handler group becomes a 503 from the dispatcher, a refusal by the dispatcher group a 503
//! from the connection. Groups shed only while overloaded (their response time over its
//! target). A 503 carries `Retry-After`, keeps the connection open and is written after a
//! short delay ([`ShedPolicy`]), so that clients retrying at once do not turn refusals into
//! the server's main work.

mod connection;
mod dispatcher;
pub mod drain;
mod handlers;
mod messages;
mod outgoing;
mod session_store;
mod site;

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use whirl::net::tls::{self, TlsAcceptError, TlsConfig};
use whirl::net::{Accept, AcceptError, Acceptor, SocketConnection};
use whirl::prelude::*;
use whirl::{GroupError, SharedClient};
use whirl_http::Limits;

pub use connection::HttpConnection;
use drain::{DrainReport, Drainer};
#[cfg(test)]
pub use handlers::SENDFILE_MIN;
use session_store::SessionStore;
pub use site::{H2Policy, H2Refusal};
use site::{ShedPolicy, Site};

use crate::config::Users;
use crate::ops::access_log::Sink;
use crate::ops::Ops;
use crate::sessions::SessionLimits;
use crate::store::Store;

/// How to run the server.
#[derive(Clone, Debug)]
pub struct Options {
    pub root: PathBuf,
    pub users: Users,
    /// See [`Site::work`].
    pub work: Duration,
    /// See [`Site::idle_timeout`].
    pub idle_timeout: Duration,
    /// See [`Site::request_timeout`].
    pub request_timeout: Duration,
    /// Serve HTTPS with this configuration (`--tls-cert`, `--tls-key`) instead of HTTP.
    pub tls: Option<TlsConfig>,
    /// See [`Site::file_io_process`].
    pub file_io_process: bool,
    /// See [`Site::shed`].
    pub shed: ShedPolicy,
    /// The session table's limits and expiry.
    pub sessions: SessionLimits,
    /// How large a request may be (`--max-header-line-bytes`, `--max-head-bytes`,
    /// `--max-headers`).
    pub limits: Limits,
    /// See [`Site::session_paths`] (`--session-path`).
    pub session_paths: Vec<String>,
    /// See [`Site::hsts`] (`--hsts-max-age`).
    pub hsts: Option<Duration>,
    /// Where the access log's lines go (`--access-log`), if anywhere.
    pub access_log: Option<Sink>,
    /// See [`Site::drain_grace`].
    pub drain_grace: Duration,
    /// See [`Site::h2`] (`--no-h2`, `--h2-max-streams`, `--h2-refusal`).
    pub h2: H2Policy,
}

/// Where anonymous sessions start by default: the demo site's dynamic part.
pub const SESSION_PATHS: [&str; 1] = ["/resources"];

impl Options {
    /// The static file server iris_http is with no flags: no simulated work, anonymous
    /// sessions under [`SESSION_PATHS`] only.
    pub fn new(root: PathBuf, users: Users) -> Self {
        Options {
            root,
            users,
            work: Duration::ZERO,
            idle_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(10),
            tls: None,
            file_io_process: false,
            shed: ShedPolicy::default(),
            sessions: SessionLimits::default(),
            limits: Limits::default(),
            session_paths: SESSION_PATHS.map(String::from).to_vec(),
            hsts: None,
            access_log: None,
            drain_grace: drain::IDLE_GRACE,
            h2: H2Policy::default(),
        }
    }
}

/// What the acceptor does with each connection: a `SocketConnection` in the "sockets" group
/// and an `HttpConnection` speaking HTTP over it.
///
/// With TLS, the socket runs on behalf of the client address's principal
/// (`tls::peer_principal`) and its handshake is offered to the "sockets" group's predicate
/// first (`tls::spawn_tls`): a refused handshake (a flood of them piling up) closes the
/// connection at once, before any cryptography, and no `HttpConnection` is spawned for it.
/// Plain connections never meet that predicate: every other socket message bypasses it.
#[derive(Isolated)]
struct Serve {
    sockets: Group,
    site: Arc<Site>,
    tls: Option<TlsConfig>,
}

impl Accept for Serve {
    fn accept(
        &mut self,
        stream: TcpStream,
        peer: SocketAddr,
        ctx: &mut Ctx<Acceptor>,
    ) -> Result<(), AcceptError> {
        // Answers are written whole (a head and its body in one write, or the head then a
        // file region): Nagle's algorithm would only hold the tail of a large body back
        // until the peer's delayed ACK. nginx sets it too (`tcp_nodelay on`).
        stream.set_nodelay(true)?;
        let socket = match &self.tls {
            None => ctx
                .spawner()
                .group(&self.sockets)
                .spawn(SocketConnection::new(stream, ctx.net()?)?),
            Some(config) => {
                match tls::spawn_tls(ctx, &self.sockets, stream, peer, config.clone()) {
                    Ok(socket) => socket,
                    // Counted in the group's statistics (rejected); nothing to log per connection.
                    Err(TlsAcceptError::Shed) => return Ok(()),
                    Err(e) => return Err(e.into()),
                }
            }
        };
        ctx.spawn(HttpConnection::new(Arc::clone(&self.site), socket, peer));
        Ok(())
    }
}

/// A running server.
pub struct Server {
    pub addr: SocketAddr,
    /// Its metrics, access log and phase.
    ops: Arc<Ops>,
    drainer: Drainer,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// One of its groups could not be built.
    #[error(transparent)]
    Group(#[from] GroupError),
    /// The poller or the listening socket failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The assembly file did not define one of [`GROUPS`].
    #[error("the configuration defines no group `{0}` (iris_http needs {GROUPS:?})")]
    MissingGroup(&'static str),
}

/// The groups the server runs in; an assembly file must define them all.
pub const GROUPS: [&str; 8] = [
    "sockets",
    "http",
    "sessions",
    "db",
    "files-io",
    "dispatcher",
    "files",
    "resources",
];

impl Server {
    /// Starts the session store and the acceptor on `bind`, in the groups [`GROUPS`] already
    /// built on `rt` (by the assembly file, `iris.toml`).
    pub fn start(rt: &Runtime, bind: SocketAddr, options: Options) -> Result<Server, StartError> {
        let group = |name: &'static str| rt.group_named(name).ok_or(StartError::MissingGroup(name));
        for name in GROUPS {
            group(name)?;
        }
        let sockets = group("sockets")?;
        let dispatcher = group("dispatcher")?;
        let sessions = rt.spawn(SessionStore::new(options.users.clone(), options.sessions));
        let ops = Arc::new(Ops::new(rt, options.access_log.clone()));
        let site = Arc::new(Site {
            root: options.root.clone(),
            store: Store::demo(1000),
            work: options.work,
            limits: options.limits,
            idle_timeout: options.idle_timeout,
            request_timeout: options.request_timeout,
            dispatcher_group: dispatcher,
            sessions,
            file_io_process: options.file_io_process,
            shed: options.shed,
            session_paths: options.session_paths,
            tls: options.tls.is_some(),
            hsts: options.hsts,
            drain_grace: options.drain_grace,
            h2: options.h2,
            ops: SharedClient::new(
                Arc::clone(&ops),
                "iris_http's metrics (atomics), the access log's channel sender, and the drain \
                 phase (an atomic): each synchronises itself, and none holds a process's state",
            ),
        });
        let net = rt.net()?;
        let serve = Serve {
            sockets,
            site,
            tls: options.tls,
        };
        let (acceptor, addr) = Acceptor::bind(bind, net, serve)?;
        let acceptor = rt.spawn(acceptor);
        let drainer = Drainer {
            ops: Arc::clone(&ops),
            acceptor,
            process_groups: rt.process_groups(),
        };
        Ok(Server { addr, ops, drainer })
    }

    /// Stops accepting connections (those open are served until they close); a drain's
    /// second step, alone.
    #[cfg(test)]
    pub fn stop_accepting(&self) {
        self.drainer.stop_accepting();
    }

    /// Its metrics, access log and phase.
    pub fn ops(&self) -> &Arc<Ops> {
        &self.ops
    }

    /// Drains the server (`drain.rs`): returns once every connection has closed, or
    /// `timeout` and then `drain::FLUSH` have passed.
    pub fn drain(&self, timeout: Duration) -> DrainReport {
        self.drainer.run(timeout)
    }
}
