//! `HttpConnection`: decodes a socket's bytes into requests, finds each request's session,
//! hands requests to the session's dispatcher, and writes the answers back in request order,
//! each with the `Date` header. A request that expects `100 Continue` gets it once the answers
//! before it are written (an interim answer must not overtake them), unless its body arrives
//! first, and only if its body will be read: a request the server is about to refuse (no
//! such path, a method the path does not take, a session being shed) gets its final answer
//! instead, and the connection closes after it, its body unread (RFC 9110 §10.1.1).
//!
//! A client without a session is served on a session of its connection (no cookie, no
//! entry in the session table) until it asks for a path where sessions start
//! (`Site::session_paths`): then the session store starts an anonymous session, whose
//! cookie the answer to that request sets. Static files and 304s never set it. Every answer
//! passes through `outgoing::seal` (cookie attributes, `Cache-Control`, HSTS).
//!
//! `/healthz`, `/readyz` and `/metrics` are answered here, in order with the rest, without a
//! session or a dispatcher (`ops::endpoints`). Every answer written is counted and logged
//! (`record.rs`). A drain (`server/drain.rs`) changes how a connection ends: from
//! [`Drain::Begin`] on, every answer closes the connection, and a connection with nothing to
//! answer closes once quiet for `Site::drain_grace`; at [`Drain::Deadline`], what it still
//! owes an answer is answered 503 with `Retry-After`, and it closes.
//!
//! **HTTP/2.** The protocol is chosen per connection (`state::Wire`): by ALPN over TLS
//! (`SocketEvent::Negotiated`), else by the first bytes (HTTP/2's preface, h2c by prior
//! knowledge, or HTTP/1.1). Over HTTP/2, `http2.rs` turns streams into the same requests,
//! which take the same path (session, dispatcher, admission) and are answered out of order
//! on their streams; the drain is a `GOAWAY`, and the end of the codec a lingering close
//! (`SocketMsg::CloseWrite`, then `Close` on the peer's end or after `LINGER`).

mod http2;
mod record;
mod state;

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use whirl::net::{SocketConnection, SocketEvent, SocketMsg};
use whirl::prelude::*;
use whirl_http::{DateCache, HttpError, Method, Request, RequestDecoder, Response, READ_CHUNK};

use super::dispatcher::Dispatcher;
use super::drain::{Drain, CONNECTIONS};
use super::messages::{
    FileRegion, H2Wake, IdleCheck, Resolve, Respond, RespondFile, Retire, Route, SessionResolved,
    Shed,
};
use super::outgoing;
use super::site::{Site, RETRY_AFTER_SECS};
use crate::ops::{endpoints, Phase};
use crate::routes;
use crate::sessions::{session_token, Resolved, Session, SESSION_COOKIE};
use http2::{H2Wire, Sniffed};
use record::{Requested, Served};
use state::{Current, Pending, Wire};

/// Requests decoded or in flight per connection before the connection stops reading: a
/// pipelining client cannot queue unbounded work.
const MAX_QUEUED: usize = 32;
/// Requests handed to the dispatcher and not yet answered.
const MAX_IN_FLIGHT: usize = 8;
/// How long an HTTP/2 connection whose codec has ended (after its `GOAWAY`) reads and drops
/// the peer's bytes before it closes, unless the peer closes first.
const LINGER: Duration = Duration::from_secs(2);
/// The interim answer to `Expect: 100-continue` (RFC 9110 §15.2.1): no headers needed.
const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

#[process(group = "http")]
pub struct HttpConnection {
    #[isolated(
        trust = "the h2 codec's connection, its stream handles and the in-memory pipe \
                        share state only among themselves, all owned by this process and \
                        never sent; their waker posts to this connection's own address"
    )]
    wire: Wire,
    site: Arc<Site>,
    socket: Addr<SocketConnection>,
    /// The client's address.
    peer: IpAddr,
    /// The client's address and port.
    remote: SocketAddr,
    /// A drain has begun: the next answer closes the connection (`drain.rs`).
    draining: bool,
    decoder: RequestDecoder,
    /// Decoded, waiting for their session or for room in flight.
    waiting: VecDeque<Request>,
    in_flight: VecDeque<Pending>,
    next_seq: u64,
    current: Option<Current>,
    resolving: bool,
    paused: bool,
    /// The peer sent everything it will send.
    eof: bool,
    /// A response that closes the connection has been queued: nothing after it is served.
    closing: bool,
    /// The stream cannot go on after the requests in `waiting` (it became undecodable, a
    /// request was too slow to arrive, or one is refused before its body is read): this
    /// answer, which closes the connection, follows theirs.
    broken: Option<Response>,
    /// Since when an HTTP/2 connection whose codec has ended reads and drops the peer's
    /// bytes before closing (see `drive_h2`).
    lingering: Option<Instant>,
    /// When the peer last sent something or was last answered.
    last_activity: Instant,
    /// Since when part of a request has been waiting for the rest.
    partial_since: Option<Instant>,
    /// The request whose body is awaited expects `100 Continue`, not sent yet because
    /// earlier requests are still unanswered.
    continue_owed: bool,
    /// The `Date` value, formatted once a second.
    date: DateCache,
    /// The session was refused (shed) and told to retry after this instant: its requests
    /// until then are refused here, without being dispatched, as the groups' session-
    /// consistent predicates would refuse them (a refusal then costs a timer, not a process).
    shed_until: Option<Instant>,
    /// The pending idle check, cancelled when the connection ends: a pending timer holds
    /// the connection's address, and under a reconnect storm thousands of them would keep
    /// ended connections' memory until they fire.
    idle_timer: Option<whirl::time::TimerHandle>,
}

impl HttpConnection {
    /// A connection over `socket` from `remote`; counted open from now until it is dropped.
    pub fn new(site: Arc<Site>, socket: Addr<SocketConnection>, remote: SocketAddr) -> Self {
        site.ops.metrics.connections.inc();
        HttpConnection {
            wire: match site.h2.enabled {
                true => Wire::Undecided(Vec::new()),
                false => Wire::Http1,
            },
            decoder: RequestDecoder::new(site.limits),
            site,
            socket,
            peer: remote.ip(),
            remote,
            draining: false,
            waiting: VecDeque::new(),
            // Room for one: a client that does not pipeline never has more in flight, and
            // the first push would otherwise make room for four (about 1 KiB per connection).
            in_flight: VecDeque::with_capacity(1),
            next_seq: 0,
            current: None,
            resolving: false,
            paused: false,
            eof: false,
            closing: false,
            broken: None,
            lingering: None,
            last_activity: Instant::now(),
            partial_since: None,
            continue_owed: false,
            date: DateCache::default(),
            shed_until: None,
            idle_timer: None,
        }
    }

    fn decode(&mut self, bytes: &[u8]) {
        if self.broken.is_some() {
            return;
        }
        self.last_activity = Instant::now();
        // The decoder stays within its buffer bound when fed at most a chunk at a time and
        // drained in between.
        for chunk in bytes.chunks(READ_CHUNK) {
            self.decoder.feed(chunk);
            loop {
                match self.decoder.next_request() {
                    Ok(Some(request)) => {
                        // Its body arrived: an owed `100 Continue` was for it, and is moot.
                        self.continue_owed = false;
                        self.waiting.push_back(request);
                    }
                    Ok(None) => break,
                    Err(error) => {
                        // Answered, and the connection closed, once the requests before it
                        // are (see `pump`).
                        self.continue_owed = false;
                        self.broken = Some(Response::from_http_error(&error));
                        return;
                    }
                }
            }
        }
        if self.decoder.take_continue() {
            match self.refusal_before_body() {
                Some(refusal) => {
                    self.broken = Some(refusal.closing());
                    return;
                }
                None => self.continue_owed = true,
            }
        }
        self.partial_since = match (self.decoder.pending(), self.partial_since) {
            (0, _) => None,
            (_, Some(since)) => Some(since),
            (_, None) => Some(self.last_activity),
        };
    }

    /// The final answer for the request awaiting its body, if it is one the server would
    /// refuse without reading that body: one the router refuses (400, 404, 405), or any
    /// while the connection's session is being shed (503).
    fn refusal_before_body(&self) -> Option<Response> {
        let head = self.decoder.awaiting_body()?;
        let route = routes::route(head);
        if let Some(status) = route.error_status() {
            let response = Response::error(status);
            return Some(match route {
                routes::Route::MethodNotAllowed { allow } => response.with_header("Allow", allow),
                _ => response,
            });
        }
        self.shed_until
            .is_some_and(|until| Instant::now() < until)
            .then(|| self.site.shed.response())
    }

    /// Closes a connection idle for too long, and answers 408 to a request that is too slow
    /// to arrive; then looks again later.
    fn check_idle(&mut self, ctx: &mut Ctx<Self>) {
        if let Wire::Http2(_) = self.wire {
            self.check_idle_h2(ctx);
            return self.arm_idle_check(ctx);
        }
        if self.closing {
            return;
        }
        let now = Instant::now();
        let busy = !self.in_flight.is_empty() || !self.waiting.is_empty() || self.resolving;
        if !busy {
            if let Some(since) = self.partial_since {
                if now.saturating_duration_since(since) >= self.site.request_timeout {
                    self.broken = Some(Response::from_http_error(&HttpError::Timeout));
                    self.pump(ctx);
                    return;
                }
            } else if now.saturating_duration_since(self.last_activity) >= self.idle_limit() {
                self.closing = true;
                let _ = self.socket.post(SocketMsg::Close);
                return;
            }
        }
        self.arm_idle_check(ctx);
    }

    fn arm_idle_check(&mut self, ctx: &mut Ctx<Self>) {
        let every =
            (self.idle_limit().min(self.site.request_timeout) / 2).max(Duration::from_millis(10));
        self.idle_timer = Some(ctx.post_after(every, IdleCheck));
    }

    /// Reserves the next place in the answer order, for a request `requested`, served by
    /// `served`.
    fn enqueue(
        &mut self,
        keep_alive: bool,
        head_only: bool,
        set_cookie: Option<String>,
        (requested, served): (Requested, Served),
    ) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        let pending = Pending {
            seq,
            keep_alive,
            head_only,
            set_cookie,
            response: None,
            region: None,
            requested,
            served,
        };
        match &mut self.wire {
            Wire::Http2(wire) => wire.bind(seq, pending),
            _ => self.in_flight.push_back(pending),
        }
        record::received(&self.site.ops);
        seq
    }

    /// What the metrics and the access log take of `request`.
    fn requested(&self, request: &Request) -> Requested {
        Requested::of(request, self.site.ops.access_log.is_some())
    }

    /// Answers `request`, for one of the operational endpoints, here and now.
    fn serve_endpoint(&mut self, endpoint: endpoints::Endpoint, request: Request) {
        let requested = self.requested(&request);
        let head_only = request.method == Method::Head;
        let seq = self.enqueue(
            request.keep_alive,
            head_only,
            None,
            (requested, Served::default()),
        );
        let response = endpoints::answer(endpoint, &request, &self.site.ops);
        self.answer(seq, response);
    }

    /// Starts what can be started (resolves sessions, dispatches requests); over HTTP/2,
    /// drives the codec too, which sends the answers given it and brings new requests.
    fn pump(&mut self, ctx: &mut Ctx<Self>) {
        self.start_requests(ctx);
        for _ in 0..4 {
            if !self.drive_h2(ctx) {
                return;
            }
            self.start_requests(ctx);
        }
        // Still arriving: hand what was answered to the codec, and come back for the rest.
        if self.drive_h2(ctx) {
            let _ = ctx.myself().post(H2Wake);
        }
    }

    /// Resolves sessions and dispatches the requests waiting, as far as it can.
    fn start_requests(&mut self, ctx: &mut Ctx<Self>) {
        while !self.closing && !self.resolving && self.in_flight.len() < MAX_IN_FLIGHT {
            let Some(request) = self.waiting.front() else {
                break;
            };
            if let Some(endpoint) = endpoints::endpoint(request) {
                if let Some(request) = self.waiting.pop_front() {
                    self.serve_endpoint(endpoint, request);
                }
                continue;
            }
            let token = session_token(request).map(str::to_owned);
            let start = crate::routes::starts_session(request, &self.site.session_paths);
            let known = match (&self.current, &token) {
                // The same client, before it has our cookie; on the connection's own session
                // only where no session starts.
                (Some(current), None) => current.token.is_some() || !start,
                (Some(current), Some(t)) => {
                    current.token.as_ref() == Some(t)
                        || (current.presented.as_ref() == Some(t)
                            && (current.token.is_some() || !start))
                }
                (None, _) => false,
            };
            if !known && token.is_none() && !start {
                // Nothing to look up and nothing to start: the connection's own session,
                // without a trip to the session store.
                let resolved = Resolved {
                    session: Session::for_connection(ctx.id()),
                    new_token: None,
                };
                self.adopt(resolved, ctx);
                continue;
            }
            if !known {
                self.resolving = true;
                let asked = self.site.sessions.post(Resolve {
                    token,
                    start,
                    conn: ctx.myself().into(),
                    peer: self.peer,
                });
                if asked.is_err() {
                    self.resolving = false;
                    let requested = match self.waiting.pop_front() {
                        Some(request) => self.requested(&request),
                        None => Requested::none(),
                    };
                    let seq = self.enqueue(false, false, None, (requested, Served::default()));
                    self.answer(seq, Response::error(500).closing());
                }
                break;
            }
            if let Some(request) = self.waiting.pop_front() {
                self.dispatch(request, ctx);
            }
        }
        if self.waiting.is_empty() && !self.closing {
            if let Some(refusal) = self.broken.take() {
                let seq = self.enqueue(false, false, None, (Requested::none(), Served::default()));
                self.answer(seq, refusal);
            }
        }
        self.send_continue();
        self.flow_control();
    }

    fn dispatch(&mut self, request: Request, ctx: &mut Ctx<Self>) {
        let Some(current) = self.current.as_mut() else {
            return;
        };
        // A new session's cookie goes on the answer to a request that starts sessions (the
        // one that started it, or a later one if that one could not carry it): never on a
        // static file's.
        let set_cookie = match crate::routes::starts_session(&request, &self.site.session_paths) {
            true => current.set_cookie.take(),
            false => None,
        };
        let dispatcher = current.dispatcher.clone();
        let served = current.served.clone();
        let head_only = request.method == Method::Head;
        let requested = self.requested(&request);
        let seq = self.enqueue(
            request.keep_alive,
            head_only,
            set_cookie,
            (requested, served),
        );
        if self.shed_until.is_some_and(|until| Instant::now() < until) {
            let response = self.site.shed.response();
            self.shed(seq, response, ctx);
            return;
        }
        // The request's own trace: what the dispatcher and the handlers do for it is in it
        // (whirl's message spans, when `whirl::message` is enabled at `DEBUG`).
        let span = tracing::debug_span!(
            parent: None,
            "http_request",
            method = ?request.method,
            path = %request.path,
            seq,
        );
        let posted = {
            let _inside = span.enter();
            dispatcher.post(Route { request, seq })
        };
        match posted {
            Ok(()) => {}
            // The dispatcher group is overloaded: the paper's last line of defence.
            Err(PostError::Rejected(_)) => {
                let response = self.site.shed.response();
                self.shed(seq, response, ctx);
            }
            // Terminated (the dispatcher failed), or a failure a later version adds.
            Err(_) => self.answer(seq, Response::error(500).closing()),
        }
    }

    /// Answers a refused request after the shed delay; the session's requests are refused
    /// until its `Retry-After` has passed.
    fn shed(&mut self, seq: u64, response: Response, ctx: &mut Ctx<Self>) {
        let retry = Duration::from_secs(u64::from(RETRY_AFTER_SECS));
        self.shed_until = Some(Instant::now() + retry);
        if self.site.shed.delay.is_zero() {
            self.answer(seq, response);
        } else {
            let _ = ctx.post_after(self.site.shed.delay, Shed { seq, response });
        }
    }

    fn resolved(&mut self, resolved: Resolved, ctx: &mut Ctx<Self>) {
        self.resolving = false;
        self.adopt(resolved, ctx);
        self.pump(ctx);
    }

    /// Serves the requests from the first waiting one on with `resolved`'s session: a
    /// dispatcher of its own, on behalf of its principal.
    fn adopt(&mut self, resolved: Resolved, ctx: &mut Ctx<Self>) {
        let session = resolved.session;
        let presented = self
            .waiting
            .front()
            .and_then(|request| session_token(request))
            .map(str::to_owned);
        let token = match (&resolved.new_token, &presented) {
            (Some(new), _) => Some(new.clone()),
            (None, _) if session.is_connection() => None,
            (None, presented) => presented.clone(),
        };
        if let Some(old) = self.current.take() {
            let _ = old.dispatcher.post(Retire);
        }
        // Another session: its own admission.
        self.shed_until = None;
        let principal = Principal::builder(session.id)
            .priority(session.role.priority())
            .class(session.role.class())
            .build()
            .expect("a valid principal");
        let dispatcher = ctx
            .spawner()
            .group(&self.site.dispatcher_group)
            .principal(principal)
            .spawn(Dispatcher::new(
                Arc::clone(&self.site),
                ctx.myself().into(),
                ctx.myself().into(),
                session.role,
                self.peer,
            ));
        self.current = Some(Current {
            token,
            presented,
            dispatcher,
            set_cookie: resolved.new_token,
            served: Served {
                principal: Some(session.id),
                user: session.user.clone(),
            },
        });
    }

    /// Records the answer to `seq` and writes every answer that is next in order.
    fn answer(&mut self, seq: u64, response: Response) {
        self.answer_with(seq, response, None);
    }

    /// The same, the body being `region` of a file when there is one.
    fn answer_with(&mut self, seq: u64, response: Response, region: Option<FileRegion>) {
        if let Wire::Http2(_) = self.wire {
            return self.answer_h2(seq, response, region);
        }
        let Some(front) = self.in_flight.front() else {
            return;
        };
        let Some(slot) = seq
            .checked_sub(front.seq)
            .and_then(|i| self.in_flight.get_mut(usize::try_from(i).ok()?))
        else {
            return;
        };
        slot.response = Some(response);
        slot.region = region;
        while self.in_flight.front().is_some_and(|p| p.response.is_some()) {
            let Some(mut done) = self.in_flight.pop_front() else {
                break;
            };
            let Some(response) = done.response.take() else {
                break;
            };
            if self.closing {
                record::abandoned(&self.site.ops, 1);
                continue;
            }
            let response = self.finish(done.set_cookie.take(), response);
            let closes = response.closes_connection(done.keep_alive);
            self.last_activity = Instant::now();
            let sent = match done.region.take() {
                None => {
                    let bytes = response.encode(self.date.now(), done.keep_alive, done.head_only);
                    let sent = bytes.len() as u64;
                    let _ = self.socket.post(SocketMsg::Write(bytes));
                    sent
                }
                Some(FileRegion { file, offset, len }) => {
                    let head = response.encode_head(self.date.now(), done.keep_alive, len);
                    let mut sent = head.len() as u64;
                    let _ = self.socket.post(SocketMsg::Write(head));
                    if !done.head_only {
                        sent += len;
                        let _ = self.socket.post(SocketMsg::SendFile { file, offset, len });
                    }
                    sent
                }
            };
            let facts = (done.requested, done.served);
            record::answered(&self.site.ops, self.remote, facts, response.status, sent);
            if closes {
                self.closing = true;
                self.waiting.clear();
                let _ = self.socket.post(SocketMsg::Close);
            }
        }
        if self.eof && self.in_flight.is_empty() && self.waiting.is_empty() && !self.closing {
            // (HTTP/1.1 only: an HTTP/2 connection is never in `answer_with` this far.)
            self.closing = true;
            let _ = self.socket.post(SocketMsg::Close);
        }
    }

    /// `response` as it leaves: with the session cookie `set_cookie` if it may carry it, the
    /// site's rules applied, closing the connection once draining.
    fn finish(&mut self, set_cookie: Option<String>, mut response: Response) -> Response {
        if let Some(token) = set_cookie {
            // Unless the response sets the session itself (a login), or may not set a
            // cookie at all (a 304 is a cached answer's confirmation): then the next
            // answer sets it.
            let sets_session = response.headers.iter().any(|(name, value)| {
                name.eq_ignore_ascii_case("set-cookie")
                    && value.starts_with(&format!("{SESSION_COOKIE}="))
            });
            if response.status == 304 {
                self.owe_cookie(token);
            } else if !sets_session {
                response = response.with_cookie(SESSION_COOKIE, &token);
            }
        }
        let mut response = outgoing::seal(&self.site, response);
        if self.draining {
            response.close = true;
        }
        response
    }

    /// Gives back the cookie of the current session an answer could not carry, for the next
    /// one that starts a session to set.
    fn owe_cookie(&mut self, token: String) {
        if let Some(current) = self.current.as_mut() {
            if current.token.as_ref() == Some(&token) && current.set_cookie.is_none() {
                current.set_cookie = Some(token);
            }
        }
    }

    /// Sends an owed `100 Continue` once every earlier request is answered.
    fn send_continue(&mut self) {
        if self.continue_owed
            && !self.closing
            && self.broken.is_none()
            && self.waiting.is_empty()
            && self.in_flight.is_empty()
        {
            self.continue_owed = false;
            let _ = self.socket.post(SocketMsg::Write(CONTINUE.to_vec()));
        }
    }

    /// Stops reading while this connection holds as many requests as it may (HTTP/1.1: an
    /// HTTP/2 connection bounds its streams and its pipe itself).
    fn flow_control(&mut self) {
        if let Wire::Http2(_) = self.wire {
            return;
        }
        let queued = self.waiting.len() + self.in_flight.len();
        if !self.paused && queued >= MAX_QUEUED {
            self.paused = true;
            let _ = self.socket.post(SocketMsg::Pause);
        } else if self.paused && queued < MAX_QUEUED / 2 {
            self.paused = false;
            let _ = self.socket.post(SocketMsg::Resume);
        }
    }
}

/// The connection's HTTP/2 side (the codec is in `http2.rs`).
impl HttpConnection {
    /// Bytes from the socket, for the protocol the connection speaks (decided first, from
    /// them, if ALPN did not say).
    fn on_data(&mut self, bytes: Vec<u8>, ctx: &mut Ctx<Self>) {
        self.last_activity = Instant::now();
        let bytes = match &mut self.wire {
            Wire::Undecided(first) => {
                first.extend_from_slice(&bytes);
                let sniffed = http2::sniff(first);
                if sniffed == Sniffed::Undecided {
                    self.partial_since.get_or_insert(self.last_activity);
                    return;
                }
                let first = std::mem::take(first);
                self.partial_since = None;
                match sniffed {
                    Sniffed::Http2 => self.start_h2(ctx),
                    _ => self.wire = Wire::Http1,
                }
                first
            }
            _ => bytes,
        };
        match self.wire.http2() {
            Some(wire) => wire.receive(&bytes),
            None => self.decode(&bytes),
        }
        self.pump(ctx);
    }

    /// ALPN's choice, told before the first bytes over TLS.
    fn negotiated(&mut self, alpn: Option<Vec<u8>>, ctx: &mut Ctx<Self>) {
        if !matches!(&self.wire, Wire::Undecided(first) if first.is_empty()) {
            return;
        }
        match alpn.as_deref() {
            Some(b"h2") => {
                self.start_h2(ctx);
                self.pump(ctx);
            }
            Some(_) => self.wire = Wire::Http1,
            // No ALPN: the first bytes tell (RFC 9113 §3.3 allows prior knowledge).
            None => {}
        }
    }

    fn start_h2(&mut self, ctx: &mut Ctx<Self>) {
        self.partial_since = None;
        let wire = H2Wire::new(self.site.h2, self.site.limits, ctx.myself().into());
        self.wire = Wire::Http2(Box::new(wire));
        self.site.ops.metrics.h2_connections.inc();
    }

    /// Drives the HTTP/2 codec; whether requests arrived (now waiting to be started).
    fn drive_h2(&mut self, ctx: &mut Ctx<Self>) -> bool {
        let Wire::Http2(wire) = &mut self.wire else {
            return false;
        };
        let arrived = wire.drive(&self.socket, self.date.now());
        for status in wire.take_answered() {
            record::received(&self.site.ops);
            let facts = (Requested::none(), Served::default());
            record::answered(&self.site.ops, self.remote, facts, status, 0);
        }
        if wire.take_calmed() {
            self.site.ops.metrics.h2_calm_goaways.inc();
        }
        if wire.is_done() && wire.peer_closed() {
            self.close();
        } else if wire.is_done() && self.lingering.is_none() && !self.closing {
            // The codec's last frames (`GOAWAY`) are posted to the socket. Closing now, with
            // the peer's bytes unread, would send a reset, and the peer's kernel would drop
            // the `GOAWAY` unread: end the sending side and read and drop its bytes for a
            // while (a lingering close), until it closes (`Eof`) or `LINGER` has passed.
            self.lingering = Some(Instant::now());
            let _ = self.socket.post(SocketMsg::CloseWrite);
            let _ = ctx.post_after(LINGER, IdleCheck);
        }
        if arrived.is_empty() {
            return false;
        }
        self.last_activity = Instant::now();
        self.waiting.extend(arrived);
        true
    }

    /// Closes the socket once what was posted to it is written.
    fn close(&mut self) {
        if !self.closing {
            self.closing = true;
            let _ = self.socket.post(SocketMsg::Close);
        }
    }

    /// Answers request `seq` on its stream, out of order.
    fn answer_h2(&mut self, seq: u64, response: Response, region: Option<FileRegion>) {
        let Wire::Http2(wire) = &mut self.wire else {
            return;
        };
        let Some((mut done, answer)) = wire.take(seq) else {
            return;
        };
        let response = self.finish(done.set_cookie.take(), response);
        let Wire::Http2(wire) = &mut self.wire else {
            return;
        };
        let status = response.status;
        if response.close {
            wire.shut_down();
        }
        self.last_activity = Instant::now();
        let sent = wire.answer(answer, response, region, done.head_only, self.date.now());
        let facts = (done.requested, done.served);
        record::answered(&self.site.ops, self.remote, facts, status, sent);
    }

    /// The idle check of an HTTP/2 connection: streams whose client stopped reading their
    /// answer are reset; a connection quiet with nothing open is shut down (`GOAWAY`), and
    /// one quiet for the request timeout with requests still arriving is closed.
    fn check_idle_h2(&mut self, ctx: &mut Ctx<Self>) {
        if let Some(since) = self.lingering {
            // A peer that reads nothing keeps even the last bytes queued: then drop them.
            match since.elapsed() {
                waited if waited >= 2 * LINGER => drop(self.socket.post(SocketMsg::Abort)),
                waited if waited >= LINGER => self.close(),
                _ => {}
            }
            return;
        }
        let (idle, timeout) = (self.idle_limit(), self.site.request_timeout);
        let quiet = self.waiting.is_empty() && !self.resolving;
        if let Some(wire) = self.wire.http2() {
            wire.tick(idle, timeout, quiet, self.date.now());
        }
        self.pump(ctx);
    }

    /// At the drain's deadline: 503 to every request owed an answer, then `GOAWAY`.
    fn deadline_h2(&mut self, refusal: Response, ctx: &mut Ctx<Self>) {
        while let Some(request) = self.waiting.pop_front() {
            let facts = (self.requested(&request), Served::default());
            let seq = self.enqueue(request.keep_alive, false, None, facts);
            self.answer(seq, refusal.clone());
        }
        let owed: Vec<u64> = self
            .wire
            .http2()
            .map(|w| w.owed().collect())
            .unwrap_or_default();
        for seq in owed {
            self.answer(seq, refusal.clone());
        }
        if let Wire::Http2(wire) = &mut self.wire {
            wire.refuse_arrivals(refusal);
            wire.shut_down();
        }
        self.drive_h2(ctx);
    }
}

/// The connection's part in a drain.
impl HttpConnection {
    /// Joins the connections a drain tells; drains at once if one has begun (the phase is
    /// read after joining, so that a drain is never missed between the two).
    fn join_drain(&mut self, ctx: &mut Ctx<Self>) {
        ctx.process_groups()
            .group::<Drain>(CONNECTIONS)
            .join(&ctx.myself());
        match self.site.ops.phase() {
            Phase::Serving => {}
            Phase::Draining => self.on_drain(Drain::Begin, ctx),
            Phase::Deadline => self.on_drain(Drain::Deadline, ctx),
        }
    }

    fn on_drain(&mut self, drain: Drain, ctx: &mut Ctx<Self>) {
        match drain {
            Drain::Begin => self.start_draining(ctx),
            Drain::Deadline => {
                self.start_draining(ctx);
                self.at_deadline(ctx);
            }
        }
    }

    /// How long the connection may stay quiet with nothing to answer.
    fn idle_limit(&self) -> Duration {
        match self.draining {
            true => self.site.idle_timeout.min(self.site.drain_grace),
            false => self.site.idle_timeout,
        }
    }

    fn start_draining(&mut self, ctx: &mut Ctx<Self>) {
        if self.draining {
            return;
        }
        self.draining = true;
        if let Wire::Http2(wire) = &mut self.wire {
            wire.shut_down();
        }
        if let Some(timer) = self.idle_timer.take() {
            timer.cancel();
        }
        // Closes the connection if it has been quiet long enough, else looks again sooner
        // than it did (`idle_limit` is shorter now).
        self.check_idle(ctx);
    }

    /// Answers 503 what the connection owes an answer, and closes it.
    fn at_deadline(&mut self, ctx: &mut Ctx<Self>) {
        if self.closing {
            return;
        }
        let refusal = Response::service_unavailable(RETRY_AFTER_SECS).closing();
        if let Wire::Http2(_) = self.wire {
            return self.deadline_h2(refusal, ctx);
        }
        // The first request not answered yet (those answered before it have been written):
        // its 503 closes the connection, and the rest are not answered.
        if let Some(seq) = self.in_flight.front().map(|pending| pending.seq) {
            self.answer(seq, refusal);
            return;
        }
        let owed = !self.waiting.is_empty()
            || self.resolving
            || self.partial_since.is_some()
            || self.broken.is_some();
        if owed {
            let requested = match self.waiting.front() {
                Some(request) => self.requested(request),
                None => Requested::none(),
            };
            let seq = self.enqueue(false, false, None, (requested, Served::default()));
            self.answer(seq, refusal);
            return;
        }
        self.closing = true;
        let _ = self.socket.post(SocketMsg::Close);
    }
}

#[process]
impl HttpConnection {
    #[started]
    fn attach(&mut self, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        self.socket
            .post(SocketMsg::Attach(ctx.myself().into()))
            .map_err(|_| Failure::new("the socket closed before the connection started"))?;
        self.arm_idle_check(ctx);
        // After the socket has its owner: a drain under way may close it at once.
        self.join_drain(ctx);
        Ok(())
    }

    #[handle]
    fn idle_check(&mut self, _: IdleCheck, ctx: &mut Ctx<Self>) {
        self.check_idle(ctx);
    }

    #[handle]
    fn socket_event(&mut self, event: SocketEvent, ctx: &mut Ctx<Self>) {
        match event {
            SocketEvent::Data(bytes) if !self.closing => self.on_data(bytes, ctx),
            SocketEvent::Negotiated { alpn } => self.negotiated(alpn, ctx),
            SocketEvent::Eof if self.lingering.is_some() => self.close(),
            SocketEvent::Eof | SocketEvent::Drained if matches!(self.wire, Wire::Http2(_)) => {
                if let Some(wire) = self.wire.http2() {
                    wire.socket_event(&event);
                }
                self.pump(ctx);
            }
            SocketEvent::Eof => {
                self.eof = true;
                if self.in_flight.is_empty() && self.waiting.is_empty() && !self.closing {
                    self.closing = true;
                    let _ = self.socket.post(SocketMsg::Close);
                }
            }
            SocketEvent::Closed(_) => ctx.complete(),
            // Events a later version adds.
            _ => {}
        }
    }

    #[handle]
    fn session_resolved(&mut self, msg: SessionResolved, ctx: &mut Ctx<Self>) {
        self.resolved(msg.resolved, ctx);
    }

    #[handle]
    fn respond(&mut self, msg: Respond, ctx: &mut Ctx<Self>) {
        match msg.response.status {
            // A handler group refused it: answered after the shed delay.
            503 => self.shed(msg.seq, msg.response, ctx),
            _ => self.answer(msg.seq, msg.response),
        }
        self.pump(ctx);
    }

    #[handle]
    fn shed_answer(&mut self, msg: Shed, ctx: &mut Ctx<Self>) {
        self.answer(msg.seq, msg.response);
        self.pump(ctx);
    }

    #[handle]
    fn respond_file(&mut self, msg: RespondFile, ctx: &mut Ctx<Self>) {
        self.answer_with(msg.seq, msg.response, Some(msg.region));
        self.pump(ctx);
    }

    #[handle]
    fn h2_wake(&mut self, _: H2Wake, ctx: &mut Ctx<Self>) {
        self.pump(ctx);
    }

    #[handle]
    fn drain(&mut self, msg: Drain, ctx: &mut Ctx<Self>) {
        self.on_drain(msg, ctx);
    }

    #[terminated]
    fn closed(&mut self, _: &ExitReason) {
        let owed = match &self.wire {
            Wire::Http2(wire) => {
                self.site.ops.metrics.h2_connections.dec();
                wire.owed().count()
            }
            _ => self.in_flight.len(),
        };
        record::abandoned(&self.site.ops, owed);
        if let Some(timer) = self.idle_timer.take() {
            timer.cancel();
        }
        if let Some(current) = self.current.take() {
            let _ = current.dispatcher.post(Retire);
        }
        let _ = self.socket.post(SocketMsg::Close);
    }
}

impl Drop for HttpConnection {
    fn drop(&mut self) {
        self.site.ops.metrics.connections.dec();
    }
}
