//! A live web console (feature `console`): the runtime's groups, controllers, principals,
//! supervision trees, dead letters and slow turns in a browser, updated every half second;
//! its processes (a table sortable by queue length, turns, failures, activity..., and a page
//! per process with its monitors, links, supervisor and recent failures); worker utilisation,
//! the node's memory and CPU, half an hour of history; and Prometheus text at `/metrics`.
//!
//! ```no_run
//! use whirl::console::Console;
//! use whirl::Runtime;
//!
//! let rt = Runtime::new();
//! let console = Console::builder(&rt).port(9090).start()?;
//! println!("console at http://{}/", console.local_addr());
//! # Ok::<(), whirl::console::ConsoleError>(())
//! ```
//!
//! # What it serves
//!
//! | path | what |
//! |---|---|
//! | `/` | the page: the node's memory and CPU; a card per group with live charts of queue length, admission and handling rates, latency percentiles and worker utilisation (the last two minutes, or the last half hour downsampled); the process table (top by queue length by default, sortable by any column; a click opens the process's page); the controllers' decisions over time; principals; the supervision trees; dead letters; slow turns; benchmark history when a [`Panel`] named `bench` is given |
//! | `/events` | server-sent events, one `tick` per sample |
//! | `/api/snapshot` | the same data as JSON, with the history |
//! | `/api/processes?sort=queue&limit=100&group=` | the process table ([`Runtime::processes`](crate::Runtime::processes)) |
//! | `/api/process/<id>` | one process in detail ([`Runtime::process_info`](crate::Runtime::process_info)) |
//! | `/metrics` | Prometheus text, every metric named `whirl_` (see [`Runtime::record_metrics`](crate::Runtime::record_metrics)) |
//! | `/api/<panel>/...` | a [`Panel`]'s JSON |
//!
//! The JSON shapes are in `whirl/src/console/API.md`.
//!
//! # How it works
//!
//! A sampler thread reads the runtime's statistics ([`RuntimeObserver`](crate::RuntimeObserver))
//! every [`interval`](ConsoleBuilder::interval), asks each supervisor given to
//! [`ConsoleBuilder::supervisor`] for its tree (with a timeout, so a busy supervisor cannot
//! stall it), keeps the history, and hands the result to a hub process. Connections are
//! whirl processes in a group of their own (`whirl-console`, one thread, so the user's
//! overloaded groups cannot starve the console, and the console cannot take their workers):
//! one [`SocketConnection`](crate::net::SocketConnection) and one HTTP process per
//! connection, speaking HTTP/1.1 with `whirl-http`'s bounded decoder. Nothing is shared
//! between them but immutable, reference-counted text.
//!
//! # Security
//!
//! The console binds to 127.0.0.1 unless told otherwise; bound to any other address it
//! requires a [token](ConsoleBuilder::token), carried as `?token=` or
//! `Authorization: Bearer`. Requests are bounded (8 KiB of head, no body), connections are
//! limited ([`ConsoleBuilder::max_connections`]), idle ones closed after 30 s, half-sent
//! requests answered 408 after 10 s, and a reader of the event stream that does not keep
//! up is disconnected (its browser reconnects).
//!
//! # Remote access
//!
//! With the `tls` feature, [`ConsoleBuilder::tls`] serves the console over HTTPS with a
//! certificate of yours ([`tls::server_config`](crate::net::tls::server_config) reads PEM
//! files); bind it to a public address with a [token](ConsoleBuilder::token):
//!
//! ```no_run
//! # #[cfg(feature = "tls")] {
//! use whirl::console::Console;
//! use whirl::net::tls;
//!
//! let rt = whirl::Runtime::new();
//! let config = tls::server_config("cert.pem".as_ref(), "key.pem".as_ref())?;
//! let console = Console::builder(&rt)
//!     .bind("0.0.0.0:9443".parse()?)
//!     .token(std::env::var("CONSOLE_TOKEN")?)
//!     .tls(config)
//!     .start()?;
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Or keep it on loopback behind a reverse proxy that terminates TLS; `README.md`'s console
//! section has an nginx configuration (the event stream needs buffering off).

mod assets;
mod history;
mod hub;
mod messages;
mod model;
mod node;
mod panel;
mod processes;
mod sampler;
mod server;

pub use panel::Panel;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use crate::request::Sender as _;
use crate::supervision::Supervisor;
use crate::{Addr, Runtime};

use hub::Hub;
use messages::HubMsg;
use sampler::{Sampler, SupervisorSource};

/// Why a console could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConsoleError {
    /// Bound to an address other than loopback without a token.
    #[error("a console bound to {0} (not loopback) needs a token: call `ConsoleBuilder::token`")]
    TokenRequired(IpAddr),
    /// A panel's name is not one path segment of `[a-z0-9-]`, or is taken (by another panel,
    /// or by the console: `process`, `processes`, `snapshot`).
    #[error("panel name {0:?} is not a single path segment of [a-z0-9-], or is taken")]
    PanelName(String),
    /// The listening socket or the poller could not be set up.
    #[error("cannot listen on {addr}")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The console's group could not be built (a group named `whirl-console` exists).
    #[error("cannot build the console's group")]
    Group(#[source] crate::GroupError),
    /// The sampler thread could not start.
    #[error("cannot start the console's sampler thread")]
    Thread(#[source] std::io::Error),
}

/// Configures a [`Console`]: [`Console::builder`], the settings that differ, then
/// [`start`](ConsoleBuilder::start).
#[must_use = "a builder does nothing until `start` is called"]
pub struct ConsoleBuilder<'rt> {
    runtime: &'rt Runtime,
    addr: SocketAddr,
    token: Option<String>,
    interval: Duration,
    max_connections: usize,
    supervisors: Vec<SupervisorSource>,
    panels: Vec<Arc<dyn Panel>>,
    registry: Option<prometheus_client::registry::Registry>,
    #[cfg(feature = "tls")]
    tls: Option<crate::net::tls::TlsConfig>,
}

impl<'rt> ConsoleBuilder<'rt> {
    /// Listens on `port` of 127.0.0.1 (default 0: any free port; see
    /// [`Console::local_addr`]).
    pub fn port(mut self, port: u16) -> Self {
        self.addr.set_port(port);
        self
    }

    /// Listens on `addr`. Any address other than loopback needs a [token](Self::token).
    pub fn bind(mut self, addr: SocketAddr) -> Self {
        self.addr = addr;
        self
    }

    /// Requires `token` on every request (`?token=` or `Authorization: Bearer`), wherever
    /// the console is bound.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// How often the runtime is sampled and the page updated (default 500 ms, at least
    /// 100 ms).
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval.max(Duration::from_millis(100));
        self
    }

    /// Connections served at once (default 64); more are closed as they arrive.
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// Shows the supervision tree under `root`, named `name`.
    pub fn supervisor<A: 'static>(
        mut self,
        name: impl Into<String>,
        root: &Addr<Supervisor<A>>,
    ) -> Self {
        let root = root.clone();
        let id = root.id();
        self.supervisors.push(SupervisorSource {
            name: name.into(),
            id,
            children: Box::new(move |timeout| root.which_children_timeout(timeout)),
        });
        self
    }

    /// Serves the console over TLS (feature `tls`): HTTPS and the event stream over it, with
    /// the certificate and key of `config` ([`server_config`](crate::net::tls::server_config)
    /// reads them from PEM files). A token is still required off loopback: TLS keeps the
    /// token secret on the way, it does not say who may read the console.
    #[cfg(feature = "tls")]
    pub fn tls(mut self, config: crate::net::tls::TlsConfig) -> Self {
        self.tls = Some(config);
        self
    }

    /// Serves `panel` under `/api/<name>/`.
    pub fn panel(mut self, panel: impl Panel) -> Self {
        self.panels.push(Arc::new(panel));
        self
    }

    /// Serves the metrics registered in `registry` (your own, with `prometheus-client`) at
    /// `/metrics` too, after the runtime's: the console registers
    /// [`whirl::prometheus::register`](crate::prometheus::register)'s collectors into it.
    /// Default: a registry of the runtime's metrics only.
    pub fn registry(mut self, registry: prometheus_client::registry::Registry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// Starts the console: binds, spawns its processes and its sampler thread.
    pub fn start(self) -> Result<Console, ConsoleError> {
        let ip = self.addr.ip();
        let token = match self.token {
            Some(t) => Some(t),
            None if ip.is_loopback() => None,
            None => return Err(ConsoleError::TokenRequired(ip)),
        };
        let mut names: Vec<String> = Vec::new();
        for panel in &self.panels {
            let name = panel.name();
            let valid = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
            // `/api/process/` and `/api/processes` are the console's own.
            let reserved = matches!(name, "process" | "processes" | "snapshot");
            if !valid || reserved || names.iter().any(|n| n == name) {
                return Err(ConsoleError::PanelName(name.to_owned()));
            }
            names.push(name.to_owned());
        }
        let listen = |source| ConsoleError::Listen {
            addr: self.addr,
            source,
        };
        let group = self
            .runtime
            .group("whirl-console")
            .threads(1)
            .build()
            .map_err(ConsoleError::Group)?;
        let net = self.runtime.net().map_err(listen)?;
        let hub = self
            .runtime
            .spawner()
            .group(&group)
            .spawn(Hub::new(self.max_connections));
        let config = server::Config {
            hub: hub.clone(),
            token: token.map(Arc::from),
            panels: Arc::from(self.panels),
            max_connections: self.max_connections,
            observer: crate::SharedClient::new(
                self.runtime.observer(),
                "reads the runtime's process table; holds no state of any process",
            ),
            epoch: std::time::SystemTime::now(),
            #[cfg(feature = "tls")]
            tls: self.tls,
        };
        let (acceptor, local) = server::bind(self.addr, net, &group, config).map_err(listen)?;
        let acceptor = self.runtime.spawner().group(&group).spawn(acceptor);
        let mut registry = self.registry.unwrap_or_default();
        crate::prometheus::register(&mut registry, self.runtime);
        let sampler = Sampler::start(
            self.runtime.observer(),
            hub.clone(),
            self.interval,
            self.supervisors,
            names,
            registry,
        )
        .map_err(ConsoleError::Thread)?;
        Ok(Console {
            local,
            hub,
            acceptor,
            sampler: Some(sampler),
        })
    }
}

/// A running console. Dropping it stops it (its listening socket closes; open connections
/// end with the runtime or when their peers leave).
#[derive(Debug)]
pub struct Console {
    local: SocketAddr,
    hub: Addr<Hub>,
    acceptor: Addr<crate::net::Acceptor>,
    sampler: Option<Sampler>,
}

impl Console {
    /// A console for `runtime`, on 127.0.0.1, any free port, no token.
    pub fn builder(runtime: &Runtime) -> ConsoleBuilder<'_> {
        ConsoleBuilder {
            runtime,
            addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
            token: None,
            interval: Duration::from_millis(500),
            max_connections: 64,
            supervisors: Vec::new(),
            panels: Vec::new(),
            registry: None,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Stops it (the same as dropping it).
    pub fn stop(self) {}
}

impl Drop for Console {
    fn drop(&mut self) {
        if let Some(sampler) = self.sampler.take() {
            sampler.stop();
        }
        let _ = self.acceptor.post(crate::net::AcceptorMsg::Stop);
        let _ = self.hub.post(HubMsg::Stop);
    }
}
