//! The console's HTTP/1.1 server: an [`Acceptor`] whose [`Accept`](crate::net::Accept) spawns,
//! per connection, a [`SocketConnection`] and an [`HttpConn`] that decodes requests with
//! `whirl-http`'s bounded decoder, checks the token, and answers from the embedded page, the hub
//! (snapshot, metrics, the event stream), the runtime's process table (`processes.rs`) or a
//! [`Panel`]. One request is answered at a time, in order; while one waits for the hub, the
//! next ones wait in the decoder (bounded by its limits). With TLS (feature `tls`,
//! [`ConsoleBuilder::tls`](super::ConsoleBuilder::tls)), each connection's socket process
//! speaks TLS to the peer and plaintext to the HTTP process, which is the same either way.

use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use whirl_http::{DateCache, HttpError, Limits, Method, Request, RequestDecoder, Response};

use super::assets;
use super::hub::Hub;
use super::messages::{ConnMsg, HubMsg, Wanted};
use super::panel::Panel;
use super::processes;
use crate::net::{
    AcceptError, Acceptor, Net, SocketConnection, SocketEvent, SocketLimits, SocketMsg,
};
use crate::prelude::*;
use crate::prometheus::Format;
use crate::time::TimerHandle;
use crate::{RuntimeObserver, SharedClient};

/// A connection with nothing in flight is closed after this long.
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// A request that has not fully arrived after this long is answered 408.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a connection looks at its clocks.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// Bytes queued for a reader of the event stream above which it is disconnected.
const SLOW_READER_BYTES: usize = 1024 * 1024;

/// What every connection of one console shares: immutable configuration and the hub's
/// address.
#[derive(Clone, Isolated)]
pub(crate) struct Config {
    pub(crate) hub: Addr<Hub>,
    pub(crate) token: Option<Arc<str>>,
    pub(crate) panels: Arc<[Arc<dyn Panel>]>,
    pub(crate) max_connections: usize,
    /// Reads the process table (`/api/processes`, `/api/process/<id>`).
    pub(crate) observer: SharedClient<RuntimeObserver>,
    /// When the console started (the `t_ms` of failures count from it).
    pub(crate) epoch: SystemTime,
    /// TLS for every connection, if set.
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<crate::net::tls::TlsConfig>,
}

/// Binds the console's listening socket; connections' processes go to `group`.
pub(crate) fn bind(
    addr: SocketAddr,
    net: Net,
    group: &Group,
    config: Config,
) -> std::io::Result<(Acceptor, SocketAddr)> {
    Acceptor::bind(
        addr,
        net,
        Accepting {
            group: group.clone(),
            config,
        },
    )
}

/// Takes each accepted connection (see the [module docs](self)).
#[derive(Isolated)]
struct Accepting {
    group: Group,
    config: Config,
}

impl crate::net::Accept for Accepting {
    fn accept(
        &mut self,
        stream: TcpStream,
        peer: SocketAddr,
        ctx: &mut Ctx<Acceptor>,
    ) -> Result<(), AcceptError> {
        // Two processes per connection, plus the hub and the acceptor.
        let live = self.group.counts().live_processes();
        if live >= 2 + 2 * self.config.max_connections as u64 {
            // Dropping the stream closes it: the client sees a reset, not a hang.
            return Ok(());
        }
        let socket = match self.socket(stream, peer, ctx)? {
            Some(socket) => socket,
            None => return Ok(()),
        };
        ctx.spawner()
            .group(&self.group)
            .spawn(HttpConn::new(socket, self.config.clone()));
        Ok(())
    }
}

impl Accepting {
    /// The connection's socket process: TLS if the console has a certificate (`None` if
    /// the handshake was refused: the stream is closed), plain TCP otherwise.
    fn socket(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        ctx: &mut Ctx<Acceptor>,
    ) -> Result<Option<Addr<SocketConnection>>, AcceptError> {
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.config.tls {
            use crate::net::tls::{spawn_tls, TlsAcceptError};
            return match spawn_tls(ctx, &self.group, stream, peer, tls.clone()) {
                Ok(socket) => Ok(Some(socket)),
                Err(TlsAcceptError::Shed) => Ok(None),
                Err(e) => Err(e.into()),
            };
        }
        let _ = peer;
        let mut limits = SocketLimits::default();
        limits.close_above = SLOW_READER_BYTES;
        let socket = SocketConnection::with_limits(stream, ctx.net()?, limits)?;
        Ok(Some(ctx.spawner().group(&self.group).spawn(socket)))
    }
}

/// Look at the clocks (a periodic timer).
#[derive(Message, Clone, Copy, Debug)]
struct Check;

/// A request waiting for the hub: how to answer it.
#[derive(Clone, Copy, Debug, Isolated)]
struct Waiting {
    keep_alive: bool,
    head_only: bool,
}

/// One HTTP connection (see the [module docs](self)).
#[process]
pub(crate) struct HttpConn {
    socket: Addr<SocketConnection>,
    config: Config,
    decoder: RequestDecoder,
    dates: DateCache,
    waiting: Option<Waiting>,
    streaming: bool,
    closing: bool,
    /// The peer has sent everything it will send.
    eof: bool,
    last_activity: Instant,
    timer: Option<TimerHandle>,
}

impl std::fmt::Debug for HttpConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConn")
            .field("streaming", &self.streaming)
            .field("closing", &self.closing)
            .finish_non_exhaustive()
    }
}

impl HttpConn {
    fn new(socket: Addr<SocketConnection>, config: Config) -> Self {
        // The console's requests are small: 8 KiB of head (a quarter of the codec's
        // default), no body.
        let limits = Limits {
            max_head_bytes: 8 * 1024,
            max_body_bytes: 0,
            ..Limits::default()
        };
        HttpConn {
            socket,
            config,
            decoder: RequestDecoder::new(limits),
            dates: DateCache::default(),
            waiting: None,
            streaming: false,
            closing: false,
            eof: false,
            last_activity: Instant::now(),
            timer: None,
        }
    }

    fn write(&mut self, bytes: Vec<u8>) {
        let _ = self.socket.post(SocketMsg::Write(bytes));
    }

    fn close(&mut self) {
        if !self.closing {
            self.closing = true;
            let _ = self.socket.post(SocketMsg::Close);
        }
    }

    fn respond(&mut self, response: Response, keep_alive: bool, head_only: bool) {
        let date = self.dates.now().to_owned();
        let closes = response.closes_connection(keep_alive);
        self.write(response.encode(&date, keep_alive, head_only));
        if closes {
            self.close();
        }
    }

    /// Answers the requests the decoder holds, until one must wait for the hub.
    fn serve(&mut self, ctx: &mut Ctx<Self>) {
        while self.waiting.is_none() && !self.streaming && !self.closing {
            match self.decoder.next_request() {
                Ok(Some(request)) => self.answer(request, ctx),
                Ok(None) => return,
                Err(e) => {
                    let response = Response::from_http_error(&e).closing();
                    self.respond(response, false, false);
                }
            }
        }
    }

    fn authorized(&self, request: &Request) -> bool {
        let Some(token) = &self.config.token else {
            return true;
        };
        let from_query = request
            .query
            .as_deref()
            .into_iter()
            .flat_map(|q| q.split('&'))
            .filter_map(|pair| pair.strip_prefix("token="))
            .any(|t| same(t.as_bytes(), token.as_bytes()));
        let from_header = request
            .header("authorization")
            .and_then(|v| v.strip_prefix(b"Bearer "))
            .is_some_and(|t| same(t, token.as_bytes()));
        from_query || from_header
    }

    fn answer(&mut self, request: Request, ctx: &mut Ctx<Self>) {
        let keep_alive = request.keep_alive;
        let head_only = request.method == Method::Head;
        if !matches!(request.method, Method::Get | Method::Head) {
            let response = Response::error(405).with_header("Allow", "GET, HEAD");
            return self.respond(response, keep_alive, head_only);
        }
        if !self.authorized(&request) {
            let response = json(
                401,
                r#"{"error":"a token is required: ?token= or Authorization: Bearer"}"#,
            );
            return self.respond(response, keep_alive, head_only);
        }
        let asset = |content_type: &'static str, body: &'static str| {
            Response::ok(content_type, body.as_bytes().to_vec())
                .with_header("Cache-Control", "no-cache")
        };
        let response = match request.path.as_str() {
            "/" | "/index.html" => asset("text/html; charset=utf-8", assets::INDEX_HTML),
            "/app.js" => asset("text/javascript; charset=utf-8", assets::APP_JS),
            "/app.css" => asset("text/css; charset=utf-8", assets::APP_CSS),
            "/api/snapshot" => return self.fetch(Wanted::Snapshot, keep_alive, head_only, ctx),
            "/metrics" => {
                let accept = request
                    .header("accept")
                    .and_then(|a| std::str::from_utf8(a).ok());
                let wanted = match Format::negotiate(accept) {
                    Format::OpenMetrics => Wanted::OpenMetrics,
                    Format::Classic => Wanted::Metrics,
                };
                return self.fetch(wanted, keep_alive, head_only, ctx);
            }
            "/events" if !head_only => return self.stream(ctx),
            "/api/processes" => {
                let query = request.query.as_deref().unwrap_or("");
                let (status, body) = processes::list(&self.config.observer, query);
                json_owned(status, body)
            }
            path if path.starts_with("/api/process/") => {
                let id = &path["/api/process/".len()..];
                let (status, body) =
                    processes::detail(&self.config.observer, id, self.config.epoch);
                json_owned(status, body)
            }
            path => match path.strip_prefix("/api/") {
                Some(rest) => self.panel(rest, request.query.as_deref().unwrap_or("")),
                None => Response::not_found(),
            },
        };
        self.respond(response, keep_alive, head_only);
    }

    fn panel(&self, rest: &str, query: &str) -> Response {
        let (name, rest) = rest.split_once('/').unwrap_or((rest, ""));
        let Some(panel) = self.config.panels.iter().find(|p| p.name() == name) else {
            return json(404, r#"{"error":"no such endpoint"}"#);
        };
        match panel.get(rest, query) {
            Some((status, body)) => json_owned(status, body),
            None => json(404, r#"{"error":"no such endpoint"}"#),
        }
    }

    fn fetch(&mut self, wanted: Wanted, keep_alive: bool, head_only: bool, ctx: &mut Ctx<Self>) {
        self.waiting = Some(Waiting {
            keep_alive,
            head_only,
        });
        if self
            .config
            .hub
            .post(HubMsg::Fetch(wanted, ctx.myself().into()))
            .is_err()
        {
            self.waiting = None;
            self.respond(Response::service_unavailable(1), keep_alive, head_only);
        }
    }

    fn fetched(&mut self, wanted: Wanted, body: Option<Arc<str>>, ctx: &mut Ctx<Self>) {
        let Some(waiting) = self.waiting.take() else {
            return;
        };
        let response = match (wanted, body) {
            (_, None) => Response::service_unavailable(1),
            (Wanted::Snapshot, Some(body)) => json_owned(200, body.to_string()),
            (Wanted::Metrics, Some(body)) => {
                Response::ok(Format::Classic.content_type(), body.as_bytes().to_vec())
            }
            (Wanted::OpenMetrics, Some(body)) => {
                Response::ok(Format::OpenMetrics.content_type(), body.as_bytes().to_vec())
            }
        };
        self.respond(response, waiting.keep_alive, waiting.head_only);
        self.serve(ctx);
        self.close_if_done();
    }

    /// Closes a connection whose peer has sent everything, once nothing is owed to it.
    fn close_if_done(&mut self) {
        if self.eof && !self.streaming && self.waiting.is_none() {
            self.close();
        }
    }

    fn stream(&mut self, ctx: &mut Ctx<Self>) {
        self.streaming = true;
        if self
            .config
            .hub
            .post(HubMsg::Subscribe(ctx.myself().into()))
            .is_err()
        {
            self.streaming = false;
            return self.respond(Response::service_unavailable(1).closing(), false, false);
        }
        let date = self.dates.now().to_owned();
        let head = format!(
            "HTTP/1.1 200 OK\r\nServer: whirl-console\r\nDate: {date}\r\n\
             Content-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
             Connection: close\r\n\r\nretry: 1000\n\n"
        );
        self.write(head.into_bytes());
    }

    fn check(&mut self) {
        let quiet = self.last_activity.elapsed();
        if self.streaming || self.waiting.is_some() || self.closing {
            return;
        }
        if self.decoder.pending() > 0 && quiet >= REQUEST_TIMEOUT {
            let response = Response::from_http_error(&HttpError::Timeout).closing();
            self.respond(response, false, false);
        } else if quiet >= IDLE_TIMEOUT {
            self.close();
        }
    }
}

#[process]
impl HttpConn {
    #[started]
    fn attach(&mut self, ctx: &mut Ctx<Self>) {
        let _ = self.socket.post(SocketMsg::Attach(ctx.myself().into()));
        self.timer = Some(ctx.post_every(CHECK_EVERY, Check));
    }

    #[handle]
    fn socket_event(&mut self, event: SocketEvent, ctx: &mut Ctx<Self>) {
        match event {
            SocketEvent::Data(bytes) => {
                self.last_activity = Instant::now();
                if self.streaming || self.closing {
                    return;
                }
                self.decoder.feed(&bytes);
                self.serve(ctx);
            }
            // The peer sends nothing more: close once nothing is owed to it.
            SocketEvent::Eof => {
                self.eof = true;
                self.close_if_done();
            }
            SocketEvent::Closed(_) => {
                if let Some(timer) = self.timer.take() {
                    timer.cancel();
                }
                ctx.complete();
            }
            _ => {}
        }
    }

    #[handle]
    fn message(&mut self, msg: ConnMsg, ctx: &mut Ctx<Self>) {
        match msg {
            ConnMsg::Fetched(wanted, body) => self.fetched(wanted, body, ctx),
            ConnMsg::Tick(tick) => {
                if self.streaming && !self.closing {
                    let mut event = String::with_capacity(tick.len() + 24);
                    event.push_str("event: tick\ndata: ");
                    event.push_str(&tick);
                    event.push_str("\n\n");
                    self.write(event.into_bytes());
                }
            }
            ConnMsg::Refused => {
                self.close();
            }
        }
    }

    #[handle]
    fn clocks(&mut self, _: Check) {
        self.check();
    }
}

/// Compares two secrets in time independent of where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn json(status: u16, body: &'static str) -> Response {
    json_owned(status, body.to_owned())
}

fn json_owned(status: u16, body: String) -> Response {
    let mut response = Response::new(status)
        .with_header("Content-Type", "application/json")
        .with_header("Cache-Control", "no-cache");
    response.body = body.into_bytes();
    response
}
