//! HTTP/2 on one connection (RFC 9113), for `HttpConnection`: the `h2` crate's server codec,
//! driven from the connection's own handlers, its streams turned into the same
//! `whirl_http::Request`s an HTTP/1.1 connection decodes.
//!
//! **The pipe.** `h2` reads and writes an `AsyncRead + AsyncWrite`; here that is one end of an
//! in-memory pipe (`tokio::io::duplex`, a bounded buffer: no tokio runtime, no thread). The
//! connection writes the socket's bytes into the other end ([`H2Wire::receive`]) and posts
//! what `h2` wrote there to the socket as `SocketMsg::Write`.
//!
//! **Driving.** Every handler of the connection that touches HTTP/2 ends with
//! [`H2Wire::drive`]: a few passes of feeding the pipe, polling the codec (handshake, then
//! accepting streams), reading request bodies, sending response bodies as flow control
//! allows, and draining the pipe to the socket. The codec's waker is [`SelfWake`]: woken
//! while a drive runs, it asks for another pass; woken between turns (never, in practice:
//! every handle lives in this process) it posts `H2Wake` to the connection.
//!
//! **Streams as requests.** A stream whose request (head and body) has arrived is handed to
//! the connection in arrival order ([`H2Wire::drive`] returns them); the connection gives it
//! a place in its answer order ([`H2Wire::bind`]), routes it through the session's dispatcher
//! exactly as an HTTP/1.1 request, and answers it whenever its answer comes
//! ([`H2Wire::answer`]), out of order. Requests the codec refuses (malformed, over
//! `SETTINGS_MAX_CONCURRENT_STREAMS`) never get here; those too large are answered 413 or
//! 431 here, counted in [`H2Wire::take_answered`].
//!
//! **Bounds.** At most [`MAX_OPEN`] streams per connection between arrival and their last
//! byte sent (more wait in the codec's accept queue, and past the advertised limit the codec
//! refuses them with `REFUSED_STREAM`); request bodies held are bounded per stream by
//! `Limits::max_body_bytes` and per connection by [`BODY_BUDGET`] (past it, the client's
//! window stays shut); bytes posted to the socket and not yet written by
//! [`UNDRAINED_MAX`] (then the connection waits for `SocketEvent::Drained`); bytes from the
//! socket not yet taken by the codec by [`PAUSE_ABOVE`] (then the socket stops reading).
//! A client that resets more than [`RESET_LIMIT`] streams in [`RESET_WINDOW`], over half of
//! those it opened (the rapid-reset attack, CVE-2023-44487), is sent `GOAWAY` with
//! `ENHANCE_YOUR_CALM`; the codec itself bounds CONTINUATION floods, HPACK bombs, and the
//! SETTINGS and PING answers it owes.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::future::Future;
use std::os::unix::fs::FileExt;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::server::{Builder, Connection, Handshake, SendResponse};
use h2::{Reason, RecvStream, SendStream};
use http::header::{HeaderName, HeaderValue};
use tokio::io::{AsyncRead, AsyncWrite, DuplexStream, ReadBuf};
use whirl::net::{SocketEvent, SocketMsg};
use whirl::prelude::*;
use whirl_http::{Limits, Method, Request, Response, SERVER};

use crate::server::messages::{FileRegion, H2Wake};
use crate::server::site::{H2Policy, H2Refusal};

/// How long a connection shutting down with nothing open may wait for the client's
/// acknowledgement of its `GOAWAY` before it is aborted.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The client connection preface (RFC 9113 §3.4), which starts both h2 over TLS and h2c by
/// prior knowledge.
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// The pipe's buffer, each way.
const PIPE: usize = 64 * 1024;
/// Socket bytes waiting for the pipe above which the socket stops reading...
const PAUSE_ABOVE: usize = 128 * 1024;
/// ...and below which it reads again.
const RESUME_BELOW: usize = 32 * 1024;
/// Bytes posted to the socket before the connection waits for them to be written.
const UNDRAINED_MAX: usize = 256 * 1024;
/// Streams between arrival and their last byte sent, per connection.
pub const MAX_OPEN: usize = 32;
/// Request body bytes held per connection.
const BODY_BUDGET: usize = 4 * 1024 * 1024;
/// Response body bytes held in memory per connection (file regions are not read ahead):
/// past it, no new stream is accepted.
const OUTPUT_BUDGET: usize = 1024 * 1024;
/// The most a response body is given to the codec at once.
const CHUNK: usize = 64 * 1024;
/// Passes of one drive before it yields to other processes (by posting `H2Wake`).
const PASSES: usize = 8;
/// Client resets tolerated in a window...
const RESET_LIMIT: u32 = 100;
/// ...this long.
const RESET_WINDOW: Duration = Duration::from_secs(10);

/// What a connection's first bytes say it speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sniffed {
    Http1,
    Http2,
    /// The bytes so far are a proper prefix of the HTTP/2 preface.
    Undecided,
}

/// Whether `first` (the connection's first bytes) starts HTTP/2's preface. No HTTP/1.x
/// request starts with `PRI`.
pub fn sniff(first: &[u8]) -> Sniffed {
    let n = first.len().min(PREFACE.len());
    if first[..n] != PREFACE[..n] {
        Sniffed::Http1
    } else if n == PREFACE.len() {
        Sniffed::Http2
    } else {
        Sniffed::Undecided
    }
}

/// The SETTINGS frame's type.
const SETTINGS: u8 = 0x4;

/// How far the start of the connection has been checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Start {
    /// This many bytes seen, the first frame's type not among them yet.
    Seen(usize),
    /// The preface was followed by SETTINGS.
    Checked,
    /// It was not: the connection is to be ended...
    Bad,
    /// ...and was.
    Refused,
}

/// The codec's waker: see the module documentation.
struct SelfWake {
    conn: Recipient<H2Wake>,
    state: AtomicU8,
}

const IDLE: u8 = 0;
const DRIVING: u8 = 1;
const WOKEN: u8 = 2;
const POSTED: u8 = 3;

impl Wake for SelfWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        match self
            .state
            .compare_exchange(IDLE, POSTED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => {
                if self.conn.post(H2Wake).is_err() {
                    // The connection is gone: nothing to drive.
                    self.state.store(IDLE, Ordering::Release);
                }
            }
            Err(DRIVING) => {
                let _ = self.state.compare_exchange(
                    DRIVING,
                    WOKEN,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
            }
            Err(_) => {} // already coming
        }
    }
}

impl SelfWake {
    fn begin(&self) {
        self.state.store(DRIVING, Ordering::Release);
    }

    /// Ends a pass; whether something woke the codec meanwhile.
    fn end(&self) -> bool {
        self.state
            .compare_exchange(DRIVING, IDLE, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
    }
}

enum Phase {
    Handshake(Pin<Box<Handshake<DuplexStream, Bytes>>>),
    Serving(Box<Connection<DuplexStream, Bytes>>),
    Done,
}

/// A stream whose request body is still arriving.
struct Incoming {
    head: http::request::Parts,
    body: RecvStream,
    respond: SendResponse<Bytes>,
    read: Vec<u8>,
    /// Bytes received and not yet released to the client's window (held back while the
    /// connection holds [`BODY_BUDGET`]).
    unreleased: usize,
    /// Its body passed `max_body_bytes`: answered 413 once it ends.
    too_large: bool,
    /// When its head arrived: a request not whole after the request timeout is answered 408.
    since: Instant,
}

/// A stream's answer handle, with the connection's record of its request.
struct Bound<T> {
    respond: SendResponse<Bytes>,
    slot: T,
    /// The client reset the stream (counted once; the answer is still awaited, the work
    /// having been dispatched).
    reset: bool,
}

/// A response body on its way out.
enum Body {
    Bytes(Bytes),
    Region { file: File, offset: u64, left: u64 },
}

impl Body {
    fn left(&self) -> u64 {
        match self {
            Body::Bytes(bytes) => bytes.len() as u64,
            Body::Region { left, .. } => *left,
        }
    }

    /// The next `n` bytes (fewer if it has fewer).
    fn take(&mut self, n: usize) -> std::io::Result<Bytes> {
        match self {
            Body::Bytes(bytes) => Ok(bytes.split_to(n.min(bytes.len()))),
            Body::Region { file, offset, left } => {
                let n = n.min(usize::try_from(*left).unwrap_or(usize::MAX));
                let mut chunk = vec![0; n];
                file.read_exact_at(&mut chunk, *offset)?;
                *offset += n as u64;
                *left -= n as u64;
                Ok(Bytes::from(chunk))
            }
        }
    }
}

struct Sending {
    stream: SendStream<Bytes>,
    body: Body,
    /// When the client last took some of it.
    moved: Instant,
}

/// Client resets counted over a window (the rapid-reset defence).
struct Resets {
    since: Instant,
    streams: u32,
    resets: u32,
}

impl Resets {
    /// Counts a stream the client opened (`reset` false) or reset, whenever it did; whether
    /// the client is abusing resets: over [`RESET_LIMIT`] in the window, and over half the
    /// streams it opened.
    fn count(&mut self, reset: bool) -> bool {
        let now = Instant::now();
        if now.saturating_duration_since(self.since) > RESET_WINDOW {
            *self = Resets {
                since: now,
                streams: 0,
                resets: 0,
            };
        }
        match reset {
            true => self.resets += 1,
            false => self.streams += 1,
        }
        self.resets > RESET_LIMIT && self.resets.saturating_mul(2) > self.streams
    }
}

/// A connection's HTTP/2 side; `T` is the connection's record of a request in its answer
/// order.
pub struct H2Wire<T> {
    phase: Phase,
    /// Our end of the pipe.
    pipe: DuplexStream,
    /// Socket bytes the pipe has not taken yet.
    backlog: Vec<u8>,
    /// The peer sent its last byte: end the pipe once the backlog is in.
    eof: bool,
    /// When the connection last made progress: a request arrived or an answer was given.
    progress: Instant,
    /// Since when it has been shutting down.
    shutting: Option<Instant>,
    /// Past a drain's deadline: arriving requests get this answer.
    refusing: Option<Response>,
    pipe_shut: bool,
    /// The codec ended and all it wrote was read from the pipe.
    output_ended: bool,
    start: Start,
    /// The socket was told to stop reading.
    paused: bool,
    /// Bytes posted to the socket since it last said it had written everything.
    undrained: usize,
    awaiting_drained: bool,
    incoming: Vec<Incoming>,
    /// Complete requests handed to the connection, waiting for their place in its answer
    /// order, in the order they were handed over.
    unbound: VecDeque<SendResponse<Bytes>>,
    /// Requests in the answer order, by sequence number.
    bound: HashMap<u64, Bound<T>>,
    sending: Vec<Sending>,
    /// Request body bytes held, in `incoming`.
    body_bytes: usize,
    /// Statuses answered here (413, 431), for the connection's counts.
    answered_here: Vec<u16>,
    resets: Resets,
    /// The connection was ended with `GOAWAY` `ENHANCE_YOUR_CALM` (by the codec's limits or
    /// for its resets); `Some(false)` until the connection has counted it.
    calmed: Option<bool>,
    refusal: H2Refusal,
    limits: Limits,
    wake: Arc<SelfWake>,
}

impl<T> H2Wire<T> {
    /// HTTP/2 on a connection whose first bytes (the preface, or part of it, or none yet:
    /// ALPN chose `h2`) are `first`; `conn` is woken when the codec has work.
    pub fn new(policy: H2Policy, limits: Limits, conn: Recipient<H2Wake>) -> Self {
        let (ours, theirs) = tokio::io::duplex(PIPE);
        let header_list = u32::try_from(limits.max_head_bytes).unwrap_or(u32::MAX);
        let handshake = Builder::new()
            .max_concurrent_streams(policy.max_streams)
            .initial_connection_window_size(1024 * 1024)
            .max_header_list_size(header_list)
            .max_send_buffer_size(CHUNK)
            .handshake::<_, Bytes>(theirs);
        H2Wire {
            phase: Phase::Handshake(Box::pin(handshake)),
            pipe: ours,
            backlog: Vec::new(),
            eof: false,
            progress: Instant::now(),
            shutting: None,
            refusing: None,
            pipe_shut: false,
            output_ended: false,
            start: Start::Seen(0),
            paused: false,
            undrained: 0,
            awaiting_drained: false,
            incoming: Vec::new(),
            unbound: VecDeque::new(),
            bound: HashMap::new(),
            sending: Vec::new(),
            body_bytes: 0,
            answered_here: Vec::new(),
            resets: Resets {
                since: Instant::now(),
                streams: 0,
                resets: 0,
            },
            calmed: None,
            refusal: policy.refusal,
            limits,
            wake: Arc::new(SelfWake {
                conn,
                state: AtomicU8::new(IDLE),
            }),
        }
    }

    /// Bytes from the socket. The codec does not check that the preface is followed by
    /// SETTINGS (RFC 9113 §3.4), so that is checked here: a connection that starts
    /// otherwise is ended with a `PROTOCOL_ERROR` connection error, its bytes after the
    /// preface unread.
    pub fn receive(&mut self, bytes: &[u8]) {
        if matches!(self.start, Start::Bad | Start::Refused) {
            return;
        }
        if let Start::Seen(seen) = self.start {
            // The first frame's type, after the preface and the frame's length.
            const TYPE_AT: usize = PREFACE.len() + 3;
            match bytes.get(TYPE_AT - seen) {
                Some(&SETTINGS) => self.start = Start::Checked,
                Some(_) => {
                    self.start = Start::Bad;
                    let preface = PREFACE.len().saturating_sub(seen).min(bytes.len());
                    self.backlog.extend_from_slice(&bytes[..preface]);
                    return;
                }
                None => self.start = Start::Seen(seen + bytes.len()),
            }
        }
        self.backlog.extend_from_slice(bytes);
    }

    /// What the socket said besides bytes: the peer will send nothing more (`Eof`), or
    /// everything posted was written (`Drained`).
    pub fn socket_event(&mut self, event: &SocketEvent) {
        match event {
            SocketEvent::Eof => self.eof = true,
            SocketEvent::Drained => {
                self.undrained = 0;
                self.awaiting_drained = false;
            }
            _ => {}
        }
    }

    /// Whether the peer said it will send nothing more.
    pub fn peer_closed(&self) -> bool {
        self.eof
    }

    /// Whether the connection is over (the codec finished or failed) and everything it
    /// wrote was posted to the socket.
    pub fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done) && self.output_ended
    }

    /// Streams open here (arrived and not yet fully answered), the connection's requests
    /// waiting for a session or a dispatcher included.
    pub fn open(&self) -> usize {
        self.incoming.len() + self.unbound.len() + self.bound.len() + self.sending.len()
    }

    /// Requests owed an answer by the connection (bound, not yet answered).
    pub fn owed(&self) -> impl Iterator<Item = u64> + '_ {
        self.bound.keys().copied()
    }

    /// Whether the connection was ended with `GOAWAY` `ENHANCE_YOUR_CALM` (true once).
    pub fn take_calmed(&mut self) -> bool {
        let first = self.calmed == Some(false);
        if first {
            self.calmed = Some(true);
        }
        first
    }

    /// Statuses answered here since the last call.
    pub fn take_answered(&mut self) -> Vec<u16> {
        std::mem::take(&mut self.answered_here)
    }

    /// Stop taking new streams (`GOAWAY`), finish those open, then end (or, if the client
    /// does not go along, abort after [`SHUTDOWN_GRACE`]: see [`H2Wire::tick`]).
    pub fn shut_down(&mut self) {
        self.shutting.get_or_insert_with(Instant::now);
        match &mut self.phase {
            Phase::Serving(conn) => {
                conn.graceful_shutdown();
                Wake::wake_by_ref(&self.wake);
            }
            Phase::Handshake(_) => self.phase = Phase::Done,
            Phase::Done => {}
        }
    }

    /// From now on, requests that arrive are answered `refusal` here (a drain's deadline
    /// has passed: nothing new is started).
    pub fn refuse_arrivals(&mut self, refusal: Response) {
        self.refusing = Some(refusal);
    }

    /// The connection's periodic look: answers 408 to requests too slow to arrive and resets
    /// answers the client stopped taking (`timeout`); shuts down a connection with nothing
    /// open that made no progress (no request, no answer) for `idle` (`quiet`: the
    /// connection itself has no request waiting); aborts one whose requests are all stuck
    /// arriving for `timeout`, and one that has been shutting down for [`SHUTDOWN_GRACE`]
    /// with nothing open (a client that never acknowledges the `GOAWAY`'s `PING`) or for
    /// `timeout` in all.
    pub fn tick(&mut self, idle: Duration, timeout: Duration, quiet: bool, date: &str) {
        self.reset_stalled(timeout, date);
        let now = Instant::now();
        let still = now.saturating_duration_since(self.progress);
        let open = self.open();
        match self
            .shutting
            .map(|since| now.saturating_duration_since(since))
        {
            Some(shutting) if (open == 0 && shutting >= SHUTDOWN_GRACE) || shutting >= timeout => {
                self.abort();
            }
            Some(_) => {}
            None if open == 0 && quiet && still >= idle => self.shut_down(),
            None if still >= timeout && self.only_arriving() => self.abort(),
            None => {}
        }
    }

    /// Whether every stream open is still arriving (none is with the connection or being
    /// answered).
    fn only_arriving(&self) -> bool {
        !self.incoming.is_empty()
            && self.unbound.is_empty()
            && self.bound.is_empty()
            && self.sending.is_empty()
    }

    /// Ends the connection now (`GOAWAY`, then close), whatever is open.
    fn abort(&mut self) {
        self.abrupt(Reason::NO_ERROR);
    }

    /// Answers 408 the requests not whole after `limit` (slow clients hold no stream
    /// forever), and resets the streams whose client has taken none of their answer for as
    /// long.
    fn reset_stalled(&mut self, limit: Duration, date: &str) {
        let now = Instant::now();
        let (late, arriving) = std::mem::take(&mut self.incoming)
            .into_iter()
            .partition(|incoming| now.saturating_duration_since(incoming.since) >= limit);
        self.incoming = arriving;
        for incoming in late {
            self.body_bytes -= incoming.read.len();
            let timeout = Response::from_http_error(&whirl_http::HttpError::Timeout);
            self.refuse(incoming.respond, timeout, date);
        }
        self.sending.retain_mut(|sending| {
            let stalled = now.saturating_duration_since(sending.moved) >= limit;
            if stalled {
                sending.stream.send_reset(Reason::CANCEL);
            }
            !stalled
        });
    }

    /// Gives the next request handed over its place in the answer order, `seq`, and the
    /// connection's record of it.
    pub fn bind(&mut self, seq: u64, slot: T) {
        if let Some(respond) = self.unbound.pop_front() {
            let reset = false;
            self.bound.insert(
                seq,
                Bound {
                    respond,
                    slot,
                    reset,
                },
            );
        }
    }

    /// Takes request `seq`'s record, to answer it with [`H2Wire::answer`].
    pub fn take(&mut self, seq: u64) -> Option<(T, Answer)> {
        self.bound
            .remove(&seq)
            .map(|bound| (bound.slot, Answer(bound.respond)))
    }

    /// Sends `response` on `answer`'s stream (its body `region` of a file if there is one,
    /// none for `HEAD`); returns the bytes of body it will send. A 503 is a refusal: with
    /// [`H2Refusal::RefusedStream`] the stream is reset with `REFUSED_STREAM` instead.
    pub fn answer(
        &mut self,
        Answer(mut respond): Answer,
        mut response: Response,
        region: Option<FileRegion>,
        head_only: bool,
        date: &str,
    ) -> u64 {
        // The answer schedules the codec: let this turn's drive take it.
        self.wake.begin();
        self.progress = Instant::now();
        if response.status == 503 && self.refusal == H2Refusal::RefusedStream {
            respond.send_reset(Reason::REFUSED_STREAM);
            return 0;
        }
        let body = match region {
            Some(FileRegion { file, offset, len }) => Body::Region {
                file,
                offset,
                left: len,
            },
            None => Body::Bytes(Bytes::from(std::mem::take(&mut response.body))),
        };
        let bodiless = response.is_bodiless();
        let length = (!bodiless).then(|| body.left());
        let ends = bodiless || head_only || body.left() == 0;
        let Ok(stream) = respond.send_response(response_head(&response, date, length), ends) else {
            return 0; // the client reset the stream
        };
        if ends {
            return 0;
        }
        let sent = body.left();
        self.sending.push(Sending {
            stream,
            body,
            moved: Instant::now(),
        });
        sent
    }

    /// Drives the codec (see the module documentation); returns the requests that arrived,
    /// in order, for the connection to route and then [`bind`](H2Wire::bind).
    pub fn drive(
        &mut self,
        socket: &Addr<whirl::net::SocketConnection>,
        date: &str,
    ) -> Vec<Request> {
        let waker = Waker::from(Arc::clone(&self.wake));
        let mut cx = Context::from_waker(&waker);
        let mut arrived = Vec::new();
        for pass in 0..PASSES {
            self.wake.begin();
            self.feed(&mut cx);
            self.poll_codec(&mut cx);
            if self.start == Start::Bad && !matches!(self.phase, Phase::Handshake(_)) {
                self.abrupt(Reason::PROTOCOL_ERROR);
                self.start = Start::Refused;
            }
            self.poll_bodies(&mut cx, &mut arrived, date);
            if pass == 0 {
                // Once a drive: a reset of a dispatched stream is only counted, and its
                // waker brings the next drive.
                self.poll_bound(&mut cx);
            }
            self.poll_sends(&mut cx);
            if self.wake.end() {
                continue; // more to do before what was written is handed over
            }
            // Quiet: what the codec wrote goes to the socket in one message (reading the pipe
            // may wake the codec, if it was waiting for room in it).
            self.wake.begin();
            self.flush_to(socket, &mut cx);
            if !self.wake.end() {
                return arrived;
            }
        }
        // Still busy: let other processes run, and come back.
        if self.wake.state.swap(POSTED, Ordering::AcqRel) != POSTED {
            let _ = self.wake.conn.post(H2Wake);
        }
        arrived
    }

    /// Socket bytes into the pipe; stops or restarts the socket's reading.
    fn feed(&mut self, cx: &mut Context<'_>) {
        while !self.backlog.is_empty() {
            match Pin::new(&mut self.pipe).poll_write(cx, &self.backlog) {
                Poll::Ready(Ok(n)) => {
                    self.backlog.drain(..n);
                }
                Poll::Ready(Err(_)) => {
                    // The codec dropped its end: it is done and reads nothing more.
                    self.backlog.clear();
                }
                Poll::Pending => break,
            }
        }
        if self.eof
            && self.backlog.is_empty()
            && !self.pipe_shut
            && Pin::new(&mut self.pipe).poll_shutdown(cx).is_ready()
        {
            self.pipe_shut = true;
        }
    }

    /// The handshake, then new streams while there is room for them.
    fn poll_codec(&mut self, cx: &mut Context<'_>) {
        if let Phase::Handshake(handshake) = &mut self.phase {
            match handshake.as_mut().poll(cx) {
                Poll::Ready(Ok(conn)) => self.phase = Phase::Serving(Box::new(conn)),
                Poll::Ready(Err(e)) => return self.failed(&e),
                Poll::Pending => return,
            }
        }
        let Phase::Serving(conn) = &mut self.phase else {
            return;
        };
        let held: u64 = self
            .sending
            .iter()
            .filter_map(|s| match &s.body {
                Body::Bytes(bytes) => Some(bytes.len() as u64),
                Body::Region { .. } => None,
            })
            .sum();
        let mut open =
            self.incoming.len() + self.unbound.len() + self.bound.len() + self.sending.len();
        let mut abusive = false;
        loop {
            if open >= MAX_OPEN || held >= OUTPUT_BUDGET as u64 {
                // Full: drive the connection (its pings, settings, window updates) without
                // taking streams; they wait in the codec's queue.
                match conn.poll_closed(cx) {
                    Poll::Ready(Ok(())) => self.phase = Phase::Done,
                    Poll::Ready(Err(e)) => self.failed(&e),
                    Poll::Pending => {}
                }
                break;
            }
            match conn.poll_accept(cx) {
                Poll::Ready(Some(Ok((request, mut respond)))) => {
                    abusive |= self.resets.count(false);
                    if respond.poll_reset(cx).is_ready() {
                        abusive |= self.resets.count(true);
                        continue;
                    }
                    let (head, body) = request.into_parts();
                    self.incoming.push(Incoming {
                        head,
                        body,
                        respond,
                        read: Vec::new(),
                        unreleased: 0,
                        too_large: false,
                        since: Instant::now(),
                    });
                    open += 1;
                }
                Poll::Ready(Some(Err(e))) => {
                    self.failed(&e);
                    break;
                }
                Poll::Ready(None) => {
                    self.phase = Phase::Done;
                    break;
                }
                Poll::Pending => break,
            }
        }
        if abusive {
            self.calm();
        }
    }

    /// Request bodies in; complete requests out, in arrival order.
    fn poll_bodies(&mut self, cx: &mut Context<'_>, arrived: &mut Vec<Request>, date: &str) {
        let mut i = 0;
        while i < self.incoming.len() {
            match self.poll_body(i, cx) {
                Poll::Pending => i += 1,
                Poll::Ready(Ok(())) => {
                    let incoming = self.incoming.remove(i);
                    self.body_bytes -= incoming.read.len();
                    self.complete(incoming, arrived, date);
                }
                Poll::Ready(Err(())) => {
                    let incoming = self.incoming.remove(i);
                    self.body_bytes -= incoming.read.len();
                    if self.resets.count(true) {
                        self.calm();
                    }
                }
            }
        }
    }

    /// Reads stream `i`'s body: ready once it has ended (`Err` if the stream failed).
    fn poll_body(&mut self, i: usize, cx: &mut Context<'_>) -> Poll<Result<(), ()>> {
        let max_body = self.limits.max_body_bytes;
        // Over the budget, only the oldest stream's window is opened: one always completes
        // (and frees its part), so that the streams cannot all wait for each other.
        let may_release = |held: usize| held < BODY_BUDGET || i == 0;
        let incoming = &mut self.incoming[i];
        // Window held back while the connection held too much: give it back if it can.
        if incoming.unreleased > 0 && may_release(self.body_bytes) {
            let n = std::mem::take(&mut incoming.unreleased);
            let _ = incoming.body.flow_control().release_capacity(n);
        }
        if incoming.body.is_end_stream() {
            return Poll::Ready(Ok(()));
        }
        loop {
            match incoming.body.poll_data(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    let n = chunk.len();
                    if incoming.too_large || incoming.read.len() + n > max_body {
                        // Read and dropped: answered 413 at its end.
                        incoming.too_large = true;
                        let _ = incoming.body.flow_control().release_capacity(n);
                        continue;
                    }
                    incoming.read.extend_from_slice(&chunk);
                    self.body_bytes += n;
                    if may_release(self.body_bytes) {
                        let _ = incoming.body.flow_control().release_capacity(n);
                    } else {
                        incoming.unreleased += n;
                    }
                }
                Poll::Ready(Some(Err(_))) => return Poll::Ready(Err(())),
                Poll::Ready(None) => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    /// A stream whose request has all arrived: to the connection, or refused here.
    fn complete(&mut self, incoming: Incoming, arrived: &mut Vec<Request>, date: &str) {
        let Incoming {
            head,
            respond,
            read,
            too_large,
            ..
        } = incoming;
        let refused = match too_large {
            true => Err(Response::error(413)),
            false => request(head, read, &self.limits),
        };
        self.progress = Instant::now();
        let refused = match (&self.refusing, refused) {
            (Some(refusal), Ok(_)) => Err(refusal.clone()),
            (_, refused) => refused,
        };
        match refused {
            Ok(request) => {
                self.unbound.push_back(respond);
                arrived.push(request);
            }
            Err(response) => self.refuse(respond, response, date),
        }
    }

    /// Answers a request here, without the connection (too large, too slow).
    fn refuse(&mut self, mut respond: SendResponse<Bytes>, response: Response, date: &str) {
        self.answered_here.push(response.status);
        let length = Some(response.body.len() as u64);
        let answer = response_head(&response, date, length);
        if let Ok(mut stream) = respond.send_response(answer, false) {
            let _ = stream.send_data(Bytes::from(response.body), true);
        }
    }

    /// Counts the client's resets of streams handed to the connection.
    fn poll_bound(&mut self, cx: &mut Context<'_>) {
        let mut abusive = false;
        for bound in self.bound.values_mut() {
            if !bound.reset && bound.respond.poll_reset(cx).is_ready() {
                bound.reset = true;
                abusive |= self.resets.count(true);
            }
        }
        if abusive {
            self.calm();
        }
    }

    /// Response bodies out, as the client's windows allow.
    fn poll_sends(&mut self, cx: &mut Context<'_>) {
        self.sending.retain_mut(|sending| send_some(sending, cx));
    }

    /// What the codec wrote, to the socket, up to [`UNDRAINED_MAX`] before the socket says
    /// it wrote it all; and the socket's reading stopped or restarted by the backlog.
    fn flush_to(&mut self, socket: &Addr<whirl::net::SocketConnection>, cx: &mut Context<'_>) {
        let mut out = Vec::new();
        let mut chunk = [0; 16 * 1024];
        while self.undrained + out.len() < UNDRAINED_MAX {
            let mut buf = ReadBuf::new(&mut chunk);
            match Pin::new(&mut self.pipe).poll_read(cx, &mut buf) {
                Poll::Ready(Ok(())) if !buf.filled().is_empty() => {
                    out.extend_from_slice(buf.filled());
                }
                // The codec dropped its end (it is done).
                Poll::Ready(Ok(())) => {
                    self.output_ended = true;
                    break;
                }
                Poll::Ready(Err(_)) | Poll::Pending => break,
            }
        }
        if !out.is_empty() {
            self.undrained += out.len();
            let _ = socket.post(SocketMsg::Write(out));
        }
        if self.undrained >= UNDRAINED_MAX && !self.awaiting_drained {
            self.awaiting_drained = socket.post(SocketMsg::NotifyDrained).is_ok();
        }
        if !self.paused && self.backlog.len() > PAUSE_ABOVE {
            self.paused = socket.post(SocketMsg::Pause).is_ok();
        } else if self.paused && self.backlog.len() < RESUME_BELOW {
            self.paused = false;
            let _ = socket.post(SocketMsg::Resume);
        }
    }

    /// Ends a connection that resets too many streams.
    fn calm(&mut self) {
        if self.calmed.is_none() {
            self.calmed = Some(false);
            self.abrupt(Reason::ENHANCE_YOUR_CALM);
        }
    }

    /// The codec ended the connection with `error`.
    fn failed(&mut self, error: &h2::Error) {
        self.phase = Phase::Done;
        let calm = error.reason() == Some(Reason::ENHANCE_YOUR_CALM) && !error.is_remote();
        if calm && self.calmed.is_none() {
            self.calmed = Some(false);
        }
    }

    fn abrupt(&mut self, reason: Reason) {
        if let Phase::Serving(conn) = &mut self.phase {
            conn.abrupt_shutdown(reason);
            // The GOAWAY is only queued: the codec must be polled again to write it.
            Wake::wake_by_ref(&self.wake);
        }
    }
}

/// A stream's answer handle, taken with [`H2Wire::take`].
pub struct Answer(SendResponse<Bytes>);

/// Sends what `sending`'s window allows; whether it has more to send.
fn send_some(sending: &mut Sending, cx: &mut Context<'_>) -> bool {
    for _ in 0..16 {
        let left = sending.body.left();
        if left == 0 {
            return false;
        }
        let mut room = sending.stream.capacity();
        if room == 0 {
            let want = usize::try_from(left).unwrap_or(usize::MAX).min(CHUNK);
            sending.stream.reserve_capacity(want);
            match sending.stream.poll_capacity(cx) {
                Poll::Ready(Some(Ok(n))) => room = n,
                Poll::Ready(Some(Err(_))) | Poll::Ready(None) => return false,
                Poll::Pending => return true,
            }
            if room == 0 {
                return true;
            }
        }
        let chunk = match sending.body.take(room.min(CHUNK)) {
            Ok(chunk) => chunk,
            Err(_) => {
                // The file shrank under us: the client was promised more bytes.
                sending.stream.send_reset(Reason::INTERNAL_ERROR);
                return false;
            }
        };
        let last = sending.body.left() == 0;
        if sending.stream.send_data(chunk, last).is_err() {
            return false;
        }
        sending.moved = Instant::now();
        if last {
            return false;
        }
    }
    true
}

/// The request `head` and `body` make, or the answer refusing it.
fn request(
    head: http::request::Parts,
    body: Vec<u8>,
    limits: &Limits,
) -> Result<Request, Response> {
    if head.headers.len() > limits.max_headers {
        return Err(Response::error(431));
    }
    let mut headers = Vec::with_capacity(head.headers.len() + 1);
    if !head.headers.contains_key(http::header::HOST) {
        if let Some(authority) = head.uri.authority() {
            headers.push(("host".to_owned(), authority.as_str().as_bytes().to_vec()));
        }
    }
    for (name, value) in &head.headers {
        headers.push((name.as_str().to_owned(), value.as_bytes().to_vec()));
    }
    let path = match head.uri.path() {
        "" => "/".to_owned(),
        path => path.to_owned(),
    };
    Ok(Request {
        method: Method::from_token(head.method.as_str()),
        path,
        query: head.uri.query().map(str::to_owned),
        version: 1,
        headers,
        body,
        keep_alive: true,
    })
}

/// Headers HTTP/2 forbids (RFC 9113 §8.2.2): the connection's own, which HTTP/1.1 answers
/// may carry.
const CONNECTION_HEADERS: [&str; 5] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// `response`'s head as HTTP/2 sends it: status, `server`, `date`, `content-length` (if
/// `length`), and its headers but the connection-specific ones.
fn response_head(response: &Response, date: &str, length: Option<u64>) -> http::Response<()> {
    let mut head = http::Response::new(());
    *head.status_mut() = http::StatusCode::from_u16(response.status)
        .unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    let headers = head.headers_mut();
    headers.insert(http::header::SERVER, HeaderValue::from_static(SERVER));
    if let Ok(date) = HeaderValue::from_str(date) {
        headers.insert(http::header::DATE, date);
    }
    if let Some(length) = length {
        headers.insert(http::header::CONTENT_LENGTH, HeaderValue::from(length));
    }
    for (name, value) in &response.headers {
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) else {
            continue;
        };
        if !CONNECTION_HEADERS.contains(&name.as_str()) {
            headers.append(name, value);
        }
    }
    head
}
