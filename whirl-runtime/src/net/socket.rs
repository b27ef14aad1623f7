//! `SocketConnection`: a process owning one TCP stream (documented on the type).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::time::Duration;

use mio::net::TcpStream;
use mio::Interest;

use crate::io::{Net, Readiness, Registration};
use crate::lifecycle::{ExitReason, Failure};
use crate::process::Ctx;
use crate::process::Recipient;
use crate::process::{Handles, Process, Sender};

/// Buffer sizes of a [`SocketConnection`]: start from the default and set what differs
/// (`let mut limits = SocketLimits::default(); limits.close_above = 1 << 20;`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SocketLimits {
    /// Bytes asked of the socket per read call (default 16 KiB).
    pub read_chunk: usize,
    /// Bytes read per turn before yielding to other processes (default 64 KiB).
    pub read_per_turn: usize,
    /// Queued outgoing bytes above which the connection stops reading (default 256 KiB).
    pub pause_reading_above: usize,
    /// Queued outgoing bytes above which the peer is considered too slow and the connection
    /// is closed (default 4 MiB). File regions ([`SocketMsg::SendFile`]) count too, except
    /// the one being sent: a file larger than this limit can be sent, but a peer that does
    /// not read is not sent more than this behind it.
    pub close_above: usize,
    /// Bytes written per turn before yielding to other processes (default 1 MiB): a peer
    /// that reads fast does not hold a worker for a whole large file.
    pub write_per_turn: usize,
    /// Messages waiting in the owner's inbox (of any kind) at which the connection stops
    /// reading until the owner has taken some (default 8). Each [`SocketEvent::Data`] holds
    /// at most `read_per_turn` bytes, so an owner slower than its peer holds at most about
    /// this many turns' reads, whatever the peer sends.
    pub owner_queue_max: usize,
}

// SAFETY: plain numbers. (I8)
#[diagnostic::do_not_recommend]
unsafe impl crate::isolation::Isolated for SocketLimits {}

impl Default for SocketLimits {
    fn default() -> Self {
        SocketLimits {
            read_chunk: 16 * 1024,
            read_per_turn: 64 * 1024,
            pause_reading_above: 256 * 1024,
            close_above: 4 * 1024 * 1024,
            write_per_turn: 1024 * 1024,
            owner_queue_max: 8,
        }
    }
}

/// How soon a connection whose owner is behind ([`SocketLimits::owner_queue_max`]) looks
/// again.
const OWNER_BEHIND_RETRY: Duration = Duration::from_millis(1);

/// What a [`SocketConnection`] is told.
#[derive(Debug)]
#[non_exhaustive]
pub enum SocketMsg {
    /// Start reading; events go to `owner`. Sent once, by the owner, usually from its
    /// `started` hook. Until then the connection reads nothing.
    Attach(Recipient<SocketEvent>),
    /// A readiness event from the poller.
    Ready(Readiness),
    /// Bytes to send.
    Write(Vec<u8>),
    /// Close once everything queued is written.
    Close,
    /// Close now, dropping whatever is still queued: for a peer that reads nothing, whose
    /// connection [`SocketMsg::Close`] would keep open until it did.
    Abort,
    /// End the sending side once everything queued is written (on TLS, `close_notify`
    /// first; then the TCP FIN), and go on reading: a lingering close. The peer learns that
    /// nothing more will come while its last bytes are still read, instead of being reset
    /// by a close with bytes unread (its kernel would then drop what it had not read yet,
    /// such as a final error frame). Bytes to send after this are dropped; end with
    /// [`SocketMsg::Close`] (on [`SocketEvent::Eof`], or after a while).
    CloseWrite,
    /// Stop reading (the owner has as much work from this peer as it wants to hold); the
    /// peer's further bytes wait in the kernel's buffers, which pushes back on it.
    Pause,
    /// Read again after [`SocketMsg::Pause`].
    Resume,
    /// Continue reading after yielding (sent to itself).
    ReadMore,
    /// The connection's TLS handshake was admitted: set up TLS and start reading (what
    /// [`tls::Handshake`](super::tls::Handshake) becomes once the group's predicate admits it).
    #[cfg(feature = "tls")]
    StartTls,
    /// The TLS handshake's time is up (sent to itself, after the configuration's
    /// [`handshake_timeout`](super::tls::TlsConfig::handshake_timeout)): a connection still
    /// handshaking closes with [`CloseReason::Tls`].
    #[cfg(feature = "tls")]
    HandshakeDeadline,
    /// `len` bytes of `file` from `offset`, sent after what is queued before them, without
    /// being read into the process: on Linux the kernel copies them from the page cache to
    /// the socket (`sendfile(2)`, through rustix's safe wrapper); elsewhere they are read a
    /// chunk at a time as the socket takes them; on a TLS connection (feature `tls`) they are
    /// read and encrypted 64 KiB at a time. The bytes are not buffered; they count
    /// toward [`SocketLimits::pause_reading_above`], and toward
    /// [`SocketLimits::close_above`] once another region is being sent before them. The
    /// file must hold them: if it ends sooner (it
    /// was truncated meanwhile) the connection is closed with [`CloseReason::Error`], since
    /// the peer was promised `len` bytes.
    SendFile {
        /// The open file (owned: closed once sent or when the connection closes).
        file: File,
        /// Where the region starts.
        offset: u64,
        /// How many bytes to send.
        len: u64,
    },
    /// Continue writing after yielding (sent to itself).
    WriteMore,
    /// Tell the owner [`SocketEvent::Drained`] once everything queued before this message is
    /// written: at once if nothing is. An owner that produces output faster than the peer
    /// reads it (a multiplexed protocol) bounds what it has queued here by waiting for that
    /// event every so many bytes, instead of counting writes.
    NotifyDrained,
}

/// What a [`SocketConnection`] tells its owner.
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SocketEvent {
    /// Bytes the peer sent.
    Data(Vec<u8>),
    /// The peer will send nothing more (it may still read): answer what is pending, then
    /// send [`SocketMsg::Close`].
    Eof,
    /// Everything queued has been written (sent after a write that had to wait, and in
    /// answer to [`SocketMsg::NotifyDrained`]).
    Drained,
    /// The TLS handshake completed (feature `tls`; sent once, before the first
    /// [`SocketEvent::Data`]): `alpn` is the application protocol agreed by ALPN (`h2`,
    /// `http/1.1`...), `None` if the client offered none. A plain connection never sends it.
    Negotiated {
        /// The protocol chosen from the configuration's `alpn_protocols`, if any.
        alpn: Option<Vec<u8>>,
    },
    /// The connection is closed; the `SocketConnection` has terminated.
    Closed(CloseReason),
}

/// Why a connection closed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseReason {
    /// The owner sent [`SocketMsg::Close`].
    Requested,
    /// More than [`SocketLimits::close_above`] bytes were waiting for a peer that did not
    /// read them.
    SlowPeer,
    /// A read or write failed (connection reset...).
    Error(String),
    /// The owner terminated.
    OwnerGone,
    /// A TLS handshake or record error (feature `tls`): the peer sent something that is not
    /// TLS, or TLS that rustls refused (the alert rustls prepared was sent), or did not
    /// complete the handshake within the configuration's handshake timeout.
    Tls(String),
}

// SAFETY: plain data: a variant and an owned `String`. (I8)
#[diagnostic::do_not_recommend]
unsafe impl crate::isolation::Isolated for CloseReason {}

/// A process owning one TCP stream.
///
/// Reading: each readiness event (or a self-posted continuation) reads until the socket would
/// block, at most [`SocketLimits::read_per_turn`] bytes per turn so one busy peer does not
/// hold a worker, and sends what it read to the owner as [`SocketEvent::Data`]. While the
/// owner has [`SocketLimits::owner_queue_max`] messages waiting it reads nothing (looking
/// again every millisecond): what a peer sends faster than the owner takes it stays in the
/// kernel's buffers, which then push back on the peer.
///
/// Writing: [`SocketMsg::Write`] queues bytes and writes what the socket takes; the rest
/// waits for writability. Backpressure: above [`SocketLimits::pause_reading_above`] queued
/// bytes the connection stops reading (a peer that sends requests without reading the
/// answers stops being served new requests, and the kernel's buffers then push back on it);
/// above [`SocketLimits::close_above`] it gives up on the peer and closes.
pub struct SocketConnection {
    stream: TcpStream,
    peer: Option<SocketAddr>,
    net: Net,
    limits: SocketLimits,
    owner: Option<Recipient<SocketEvent>>,
    registration: Option<Registration>,
    outgoing: VecDeque<Outgoing>,
    /// Bytes of `outgoing`'s front already written (for `Outgoing::Bytes`).
    written: usize,
    /// Buffered bytes queued (`Outgoing::Bytes`, not yet written).
    outgoing_bytes: usize,
    /// File bytes queued (`Outgoing::File`, not yet sent).
    file_bytes: u64,
    write_more_posted: bool,
    /// Whether the last read did not end in `WouldBlock` (edge-triggered: no new event will
    /// come until we have read everything).
    may_read: bool,
    read_more_posted: bool,
    /// Reading stopped by the owner.
    paused: bool,
    eof: bool,
    closing: bool,
    /// Whether a write had to wait, so the owner is told when the queue drains.
    owe_drained: bool,
    /// [`SocketMsg::CloseWrite`]: the sending side ends once the queue is written (`Some(false)`),
    /// or has (`Some(true)`).
    close_write: Option<bool>,
    closed: Option<CloseReason>,
    /// The TLS layer of a connection built with [`SocketConnection::with_tls`].
    #[cfg(feature = "tls")]
    tls: Option<super::tls_layer::TlsLayer>,
    /// The pending [`SocketMsg::HandshakeDeadline`], cancelled once the handshake completes.
    #[cfg(feature = "tls")]
    handshake_timer: Option<crate::time::TimerHandle>,
    /// Whether the owner was sent [`SocketEvent::Negotiated`].
    #[cfg(feature = "tls")]
    told_negotiated: bool,
}

impl SocketConnection {
    /// A connection over `stream` (already accepted or connected), polled by `net`.
    ///
    /// The stream is switched to non-blocking mode, which is the one way this can fail.
    pub fn new(stream: std::net::TcpStream, net: Net) -> io::Result<Self> {
        SocketConnection::with_limits(stream, net, SocketLimits::default())
    }

    /// The same with explicit buffer limits.
    pub fn with_limits(
        stream: std::net::TcpStream,
        net: Net,
        limits: SocketLimits,
    ) -> io::Result<Self> {
        stream.set_nonblocking(true)?;
        let stream = TcpStream::from_std(stream);
        Ok(SocketConnection {
            peer: stream.peer_addr().ok(),
            stream,
            net,
            limits,
            owner: None,
            registration: None,
            outgoing: VecDeque::new(),
            written: 0,
            outgoing_bytes: 0,
            file_bytes: 0,
            write_more_posted: false,
            may_read: true,
            read_more_posted: false,
            paused: false,
            eof: false,
            closing: false,
            owe_drained: false,
            close_write: None,
            closed: None,
            #[cfg(feature = "tls")]
            tls: None,
            #[cfg(feature = "tls")]
            handshake_timer: None,
            #[cfg(feature = "tls")]
            told_negotiated: false,
        })
    }

    /// A TLS server connection over `stream` (feature `tls`): the owner sends and receives
    /// plaintext, the peer speaks TLS. It starts once its
    /// [`Handshake`](super::tls::Handshake) is admitted; see [`tls`](super::tls), whose
    /// [`spawn_tls`](super::tls::spawn_tls) does both.
    #[cfg(feature = "tls")]
    pub fn with_tls(
        stream: std::net::TcpStream,
        net: Net,
        config: super::tls_layer::TlsConfig,
    ) -> io::Result<Self> {
        let limits = SocketLimits::default();
        let mut connection = SocketConnection::with_limits(stream, net, limits)?;
        let layer = super::tls_layer::TlsLayer::new(config, limits.close_above);
        connection.tls = Some(layer);
        Ok(connection)
    }

    /// The peer's address, if known.
    pub fn peer(&self) -> Option<SocketAddr> {
        self.peer
    }

    fn attach(&mut self, owner: Recipient<SocketEvent>, ctx: &mut Ctx<Self>) {
        if self.owner.is_some() {
            tracing::warn!(process = %ctx.id(), "a socket connection was attached twice");
            return;
        }
        self.owner = Some(owner);
        let me = ctx.myself();
        let registered = self.net.register(
            &mut self.stream,
            Interest::READABLE | Interest::WRITABLE,
            move |readiness| {
                // Fails only if the connection has terminated: nothing left to tell.
                let _ = me.post(SocketMsg::Ready(readiness));
            },
        );
        match registered {
            Ok(r) => self.registration = Some(r),
            Err(e) => return self.finish(CloseReason::Error(e.to_string()), ctx),
        }
        // Bytes may have arrived before the registration.
        self.read(ctx);
    }

    fn tell_owner(&mut self, event: SocketEvent, ctx: &mut Ctx<Self>) {
        let delivered = self.owner.as_ref().map(|o| o.post(event).is_ok());
        if delivered == Some(false) && self.closed.is_none() {
            self.finish(CloseReason::OwnerGone, ctx);
        }
    }

    fn read(&mut self, ctx: &mut Ctx<Self>) {
        if self.owner.is_none()
            || self.paused
            || self.eof
            || self.closed.is_some()
            || !self.may_read
        {
            return;
        }
        if self.backlogged() {
            return; // resumed by `flush` once the peer has read enough
        }
        #[cfg(feature = "tls")]
        if self.tls.as_ref().is_some_and(|tls| !tls.started()) {
            return; // started by `SocketMsg::StartTls`
        }
        if self.owner_behind() {
            // Nothing tells the connection when the owner catches up: it looks again soon.
            if !self.read_more_posted {
                ctx.post_after(OWNER_BEHIND_RETRY, SocketMsg::ReadMore);
                self.read_more_posted = true;
            }
            return;
        }
        let mut data = Vec::new();
        let mut failure = None;
        while data.len() < self.limits.read_per_turn {
            let start = data.len();
            let want = self.limits.read_chunk.max(1);
            data.resize(start + want.min(self.limits.read_per_turn - start), 0);
            match self.stream.read(&mut data[start..]) {
                Ok(0) => {
                    data.truncate(start);
                    self.eof = true;
                    break;
                }
                Ok(n) => data.truncate(start + n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    data.truncate(start);
                    self.may_read = false;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => data.truncate(start),
                Err(e) => {
                    data.truncate(start);
                    failure = Some(e);
                    break;
                }
            }
        }
        #[cfg(feature = "tls")]
        let data = match self.tls.as_mut().map(|tls| tls.receive(&data)) {
            None => data,
            Some(Ok(received)) => {
                self.disarm_handshake_timer();
                self.tell_negotiated(ctx);
                self.eof |= received.peer_closed;
                self.send_raw(received.to_send, ctx);
                received.plaintext
            }
            Some(Err(failure)) => return self.fail_tls(failure, ctx),
        };
        if !data.is_empty() {
            // What the owner gets holds what arrived and no more: it may wait in the owner's
            // inbox a while, and a 40-byte request read into 32 KiB would keep them all.
            let mut data = data;
            data.shrink_to_fit();
            self.tell_owner(SocketEvent::Data(data), ctx);
        }
        if let Some(e) = failure {
            return self.finish(CloseReason::Error(e.to_string()), ctx);
        }
        if self.closed.is_some() {
            return; // the owner is gone
        }
        if self.eof {
            self.tell_owner(SocketEvent::Eof, ctx);
        } else if self.may_read && !self.read_more_posted {
            // Its share read with more to come: the rest after the other ready processes.
            self.read_more_posted = ctx.myself().post(SocketMsg::ReadMore).is_ok();
            ctx.end_turn();
        }
    }

    /// Whether the owner has `owner_queue_max` messages or more waiting: what the peer sends
    /// then stays in the kernel's buffers (and the peer's), not in the owner's inbox.
    fn owner_behind(&self) -> bool {
        let max = u64::try_from(self.limits.owner_queue_max).unwrap_or(u64::MAX);
        self.owner
            .as_ref()
            .is_some_and(|owner| owner.queued() >= max)
    }

    fn write(&mut self, bytes: Vec<u8>, ctx: &mut Ctx<Self>) {
        #[cfg(feature = "tls")]
        let bytes = match self.tls.as_mut().map(|tls| tls.seal(&bytes)) {
            None => bytes,
            Some(Ok(ciphertext)) => ciphertext,
            Some(Err(failure)) => return self.fail_tls(failure, ctx),
        };
        self.send_raw(bytes, ctx);
    }

    /// Queues bytes as they go on the wire (ciphertext on a TLS connection) and flushes.
    fn send_raw(&mut self, bytes: Vec<u8>, ctx: &mut Ctx<Self>) {
        if self.closed.is_some() || self.close_write.is_some() || bytes.is_empty() {
            return;
        }
        self.outgoing_bytes += bytes.len();
        self.outgoing.push_back(Outgoing::Bytes(bytes));
        self.flush(ctx);
        self.close_if_slow(ctx);
    }

    /// Closes a connection whose peer leaves more than `close_above` bytes waiting behind the
    /// file region being sent (or, when bytes are being sent, waiting at all).
    fn close_if_slow(&mut self, ctx: &mut Ctx<Self>) {
        if self.closed.is_some() {
            return;
        }
        let sending_file = match self.outgoing.front() {
            Some(Outgoing::File { remaining, .. }) => *remaining,
            _ => 0,
        };
        let behind = u64::try_from(self.outgoing_bytes)
            .unwrap_or(u64::MAX)
            .saturating_add(self.file_bytes - sending_file);
        if behind > u64::try_from(self.limits.close_above).unwrap_or(u64::MAX) {
            self.finish(CloseReason::SlowPeer, ctx);
        }
    }

    /// Whether so much waits to be sent that reading stops (see `read`).
    fn backlogged(&self) -> bool {
        let queued = u64::try_from(self.outgoing_bytes)
            .unwrap_or(u64::MAX)
            .saturating_add(self.file_bytes);
        queued > u64::try_from(self.limits.pause_reading_above).unwrap_or(u64::MAX)
    }

    fn send_file(&mut self, file: File, offset: u64, len: u64, ctx: &mut Ctx<Self>) {
        if self.closed.is_some() || self.close_write.is_some() || len == 0 {
            return;
        }
        self.file_bytes = self.file_bytes.saturating_add(len);
        self.outgoing.push_back(Outgoing::File {
            file,
            offset,
            remaining: len,
        });
        self.flush(ctx);
        self.close_if_slow(ctx);
    }

    fn flush(&mut self, ctx: &mut Ctx<Self>) {
        let was_paused = self.backlogged();
        let mut this_turn = 0usize;
        while let Some(front) = self.outgoing.front_mut() {
            if this_turn >= self.limits.write_per_turn {
                // The socket may take more, but other processes run first; no readiness
                // event would come (edge-triggered), so continue by a message to itself.
                self.owe_drained = true;
                if !self.write_more_posted {
                    self.write_more_posted = ctx.myself().post(SocketMsg::WriteMore).is_ok();
                }
                ctx.end_turn();
                return;
            }
            let budget = self.limits.write_per_turn - this_turn;
            // On a TLS connection a file region cannot go to the socket as it is: its next
            // chunk is read, encrypted and queued in front of the rest of the region.
            #[cfg(feature = "tls")]
            if self.tls.is_some() && matches!(front, Outgoing::File { .. }) {
                match self.seal_file_chunk() {
                    Ok(()) => continue,
                    Err(SealFileError::Tls(failure)) => return self.fail_tls(failure, ctx),
                    Err(SealFileError::Io(reason)) => {
                        return self.finish(CloseReason::Error(reason), ctx)
                    }
                }
            }
            let result = match front {
                Outgoing::Bytes(bytes) => {
                    let end = bytes.len().min(self.written.saturating_add(budget));
                    self.stream.write(&bytes[self.written..end])
                }
                Outgoing::File {
                    file,
                    offset,
                    remaining,
                } => {
                    let chunk = usize::try_from(*remaining)
                        .unwrap_or(usize::MAX)
                        .min(budget);
                    send_file_chunk(&mut self.stream, file, *offset, chunk)
                }
            };
            match result {
                Ok(0) => {
                    let reason = match front {
                        Outgoing::File { .. } => "the file ended before the region sent",
                        Outgoing::Bytes(_) => "the peer accepts no more bytes",
                    };
                    return self.finish(CloseReason::Error(reason.into()), ctx);
                }
                Ok(n) => {
                    this_turn += n;
                    let done = match front {
                        Outgoing::Bytes(bytes) => {
                            self.written += n;
                            self.outgoing_bytes -= n;
                            self.written == bytes.len()
                        }
                        Outgoing::File {
                            offset, remaining, ..
                        } => {
                            let n = u64::try_from(n).unwrap_or(u64::MAX).min(*remaining);
                            *offset += n;
                            *remaining -= n;
                            self.file_bytes -= n;
                            *remaining == 0
                        }
                    };
                    if done {
                        self.outgoing.pop_front();
                        self.written = 0;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.owe_drained = true;
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.finish(CloseReason::Error(e.to_string()), ctx),
            }
        }
        if self.closing {
            return self.finish(CloseReason::Requested, ctx);
        }
        if self.close_write == Some(false) {
            self.close_write = Some(true);
            let _ = self.stream.shutdown(Shutdown::Write);
        }
        if std::mem::take(&mut self.owe_drained) {
            self.tell_owner(SocketEvent::Drained, ctx);
        }
        if was_paused {
            self.read(ctx);
        }
    }

    /// Reads the next chunk (at most 64 KiB) of the file region at the front of the queue,
    /// encrypts it, and queues the ciphertext in front of the rest of the region (TLS: the
    /// kernel cannot copy file bytes to a socket whose records it does not seal). Memory stays
    /// bounded by one chunk's ciphertext at a time.
    #[cfg(feature = "tls")]
    fn seal_file_chunk(&mut self) -> Result<(), SealFileError> {
        const CHUNK: u64 = 64 * 1024;
        let Some(Outgoing::File {
            file,
            offset,
            remaining,
        }) = self.outgoing.front_mut()
        else {
            return Ok(());
        };
        let want = usize::try_from((*remaining).min(CHUNK)).unwrap_or(64 * 1024);
        let mut chunk = vec![0; want];
        let n = read_file_at(file, &mut chunk, *offset)
            .map_err(|e| SealFileError::Io(e.to_string()))?;
        if n == 0 {
            return Err(SealFileError::Io(
                "the file ended before the region sent".into(),
            ));
        }
        chunk.truncate(n);
        let sent = u64::try_from(n).unwrap_or(u64::MAX).min(*remaining);
        *offset += sent;
        *remaining -= sent;
        self.file_bytes -= sent;
        if *remaining == 0 {
            self.outgoing.pop_front();
        }
        let Some(tls) = self.tls.as_mut() else {
            return Ok(());
        };
        let ciphertext = tls.seal(&chunk).map_err(SealFileError::Tls)?;
        if !ciphertext.is_empty() {
            self.outgoing_bytes += ciphertext.len();
            self.outgoing.push_front(Outgoing::Bytes(ciphertext));
        }
        Ok(())
    }

    /// A TLS error: sends the alert if the socket takes it now, closes, tells the owner why.
    #[cfg(feature = "tls")]
    fn fail_tls(&mut self, failure: super::tls_layer::TlsFailure, ctx: &mut Ctx<Self>) {
        // Read nothing more (a flush that frees the output would otherwise read again).
        self.paused = true;
        self.send_raw(failure.alert, ctx);
        self.finish(CloseReason::Tls(failure.reason), ctx);
    }

    /// Cancels the handshake deadline once the handshake has completed.
    #[cfg(feature = "tls")]
    fn disarm_handshake_timer(&mut self) {
        let done = self.tls.as_ref().is_some_and(|tls| !tls.handshaking());
        if done {
            if let Some(timer) = self.handshake_timer.take() {
                timer.cancel();
            }
        }
    }

    /// Tells the owner which protocol ALPN chose, once, when the handshake has completed.
    #[cfg(feature = "tls")]
    fn tell_negotiated(&mut self, ctx: &mut Ctx<Self>) {
        if self.told_negotiated {
            return;
        }
        let Some(tls) = self
            .tls
            .as_ref()
            .filter(|tls| tls.started() && !tls.handshaking())
        else {
            return;
        };
        self.told_negotiated = true;
        let alpn = tls.alpn().map(<[u8]>::to_vec);
        self.tell_owner(SocketEvent::Negotiated { alpn }, ctx);
    }

    /// Closes the connection and terminates, telling the owner why.
    fn finish(&mut self, reason: CloseReason, ctx: &mut Ctx<Self>) {
        if self.closed.is_some() {
            return;
        }
        self.closed = Some(reason.clone());
        self.registration = None;
        #[cfg(feature = "tls")]
        if let Some(timer) = self.handshake_timer.take() {
            timer.cancel();
        }
        let _ = self.net.deregister(&mut self.stream);
        let _ = self.stream.shutdown(Shutdown::Both);
        if reason != CloseReason::OwnerGone {
            if let Some(owner) = &self.owner {
                let _ = owner.post(SocketEvent::Closed(reason));
            }
        }
        ctx.complete();
    }
}

// SAFETY: the state shares no mutable state with any other process:
// * `stream` is an owned mio socket: this process holds the only handle on it (it is never
//   cloned or lent out), like the `std::net::TcpStream` that `isolated.rs` lists;
// * `net` and the `Registration` are handles on the runtime's own I/O service, the poller. Like
//   an `Addr`, they reach only the runtime's internal, self-synchronising bookkeeping (the
//   poll registry and the table of readiness callbacks), never another process's state; what
//   the poller does with them is post `SocketMsg::Ready` to this process;
// * `owner` is a `Recipient`, a process address;
// * `tls` (feature `tls`) owns its rustls `ServerConnection` (never cloned or lent out) and
//   holds the configuration as a `TlsConfig`, which is `Isolated` (a `SharedClient` and a
//   `Duration`); `handshake_timer` is a `TimerHandle`, a cancellation flag on the runtime's
//   own timers, which only ever post `SocketMsg::HandshakeDeadline` to this process;
// * the rest is owned data: the outgoing queue (byte buffers, and files this process owns,
//   handed over in `SendFile`, never shared), counters, flags, the close reason.
// The messages, `SocketMsg` (bytes by value, a `Recipient`, readiness flags), are isolated, and
// so are the `SocketEvent`s sent to the owner. (I8)
#[diagnostic::do_not_recommend]
unsafe impl Process for SocketConnection {
    type Message = SocketMsg;

    fn handle(&mut self, msg: SocketMsg, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        match msg {
            SocketMsg::Attach(owner) => self.attach(owner, ctx),
            SocketMsg::Ready(readiness) => {
                if readiness.writable && !self.outgoing.is_empty() {
                    self.flush(ctx);
                }
                if readiness.readable || readiness.read_closed || readiness.error {
                    self.may_read = true;
                    self.read(ctx);
                }
            }
            SocketMsg::ReadMore => {
                self.read_more_posted = false;
                self.read(ctx);
            }
            SocketMsg::Write(bytes) => self.write(bytes, ctx),
            SocketMsg::SendFile { file, offset, len } => self.send_file(file, offset, len, ctx),
            SocketMsg::Abort => self.finish(CloseReason::Requested, ctx),
            SocketMsg::CloseWrite => {
                #[cfg(feature = "tls")]
                if let Some(tls) = self.tls.as_mut() {
                    let notify = tls.close_notify();
                    self.send_raw(notify, ctx);
                }
                if self.close_write.is_none() {
                    self.close_write = Some(false);
                }
                self.flush(ctx);
            }
            SocketMsg::NotifyDrained => {
                self.owe_drained = true;
                self.flush(ctx);
            }
            SocketMsg::WriteMore => {
                self.write_more_posted = false;
                if !self.outgoing.is_empty() {
                    self.flush(ctx);
                }
            }
            SocketMsg::Close => {
                #[cfg(feature = "tls")]
                if let Some(tls) = self.tls.as_mut() {
                    let notify = tls.close_notify();
                    self.send_raw(notify, ctx);
                }
                self.closing = true;
                self.flush(ctx);
            }
            #[cfg(feature = "tls")]
            SocketMsg::StartTls => match self.tls.as_mut().map(|tls| tls.start()) {
                Some(Ok(())) => {
                    let arm = self.handshake_timer.is_none();
                    if let Some(tls) = self.tls.as_ref().filter(|tls| arm && tls.handshaking()) {
                        let timeout = tls.handshake_timeout();
                        let timer = ctx.post_after(timeout, SocketMsg::HandshakeDeadline);
                        self.handshake_timer = Some(timer);
                    }
                    self.read(ctx);
                }
                Some(Err(failure)) => self.fail_tls(failure, ctx),
                None => tracing::warn!(process = %ctx.id(), "StartTls on a plain connection"),
            },
            #[cfg(feature = "tls")]
            SocketMsg::HandshakeDeadline => {
                if let Some(tls) = self.tls.as_ref().filter(|tls| tls.handshaking()) {
                    let timeout = tls.handshake_timeout();
                    self.paused = true;
                    let why = format!("handshake not completed within {timeout:?}");
                    self.finish(CloseReason::Tls(why), ctx);
                }
            }
            SocketMsg::Pause => self.paused = true,
            SocketMsg::Resume => {
                self.paused = false;
                self.read(ctx);
            }
        }
        Ok(())
    }

    fn terminated(&mut self, reason: &ExitReason) {
        if self.closed.is_none() {
            // Killed (runtime shutdown, a link...): close and tell the owner.
            let _ = self.stream.shutdown(Shutdown::Both);
            if let Some(owner) = &self.owner {
                let why = CloseReason::Error(format!("socket process terminated: {reason}"));
                let _ = owner.post(SocketEvent::Closed(why));
            }
        }
    }
}

/// Why a file chunk could not be queued on a TLS connection.
#[cfg(feature = "tls")]
enum SealFileError {
    Tls(super::tls_layer::TlsFailure),
    Io(String),
}

/// Reads up to `buf.len()` bytes of `file` at `offset` (0: the file ends there), leaving the
/// file's own position alone. For a TLS connection's file regions, and for sending files
/// where there is no `sendfile(2)`.
#[cfg(all(any(feature = "tls", not(target_os = "linux")), unix))]
fn read_file_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    loop {
        match file.read_at(buf, offset) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            result => return result,
        }
    }
}

/// Reads up to `buf.len()` bytes of `file` at `offset` (0: the file ends there).
#[cfg(all(any(feature = "tls", not(target_os = "linux")), not(unix)))]
fn read_file_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    use std::io::{Seek, SeekFrom};
    let mut file = file;
    file.seek(SeekFrom::Start(offset))?;
    file.read(buf)
}

/// What waits to be written: bytes, or a region of a file ([`SocketMsg::SendFile`]).
enum Outgoing {
    Bytes(Vec<u8>),
    File {
        file: File,
        offset: u64,
        remaining: u64,
    },
}

/// Sends up to `len` bytes of `file` from `offset` to `stream`; `Ok(0)` if the file ends at
/// `offset`. On Linux with `sendfile(2)`: the bytes go from the page cache to the socket
/// without a copy through this process. rustix wraps the call safely (it takes the two
/// descriptors as borrowed `AsFd`s and the offset as `&mut u64`), so no `unsafe` here.
#[cfg(target_os = "linux")]
fn send_file_chunk(
    stream: &mut TcpStream,
    file: &File,
    offset: u64,
    len: usize,
) -> io::Result<usize> {
    let mut at = offset;
    rustix::fs::sendfile(&*stream, file, Some(&mut at), len).map_err(io::Error::from)
}

/// Sends up to `len` bytes of `file` from `offset` to `stream`; `Ok(0)` if the file ends at
/// `offset`. Without `sendfile(2)`: reads a chunk (at most 64 KiB) and writes what the socket
/// takes; what it did not take is read again next time.
#[cfg(not(target_os = "linux"))]
fn send_file_chunk(
    stream: &mut TcpStream,
    file: &File,
    offset: u64,
    len: usize,
) -> io::Result<usize> {
    let mut chunk = vec![0; len.min(64 * 1024)];
    let n = read_file_at(file, &mut chunk, offset)?;
    if n == 0 {
        return Ok(0);
    }
    stream.write(&chunk[..n])
}

impl Handles<SocketMsg> for SocketConnection {
    // Readiness and I/O requests for a connection already accepted are never refused.
    const BYPASSES_ADMISSION: bool = true;

    fn into_message(msg: SocketMsg) -> SocketMsg {
        msg
    }
}

impl std::fmt::Debug for SocketConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SocketConnection")
            .field("peer", &self.peer)
            .field("outgoing_bytes", &self.outgoing_bytes)
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

// SAFETY: owned data and process addresses only; a socket event carries bytes by value. (I8)
#[diagnostic::do_not_recommend]
unsafe impl crate::isolation::Isolated for SocketEvent {}
#[diagnostic::do_not_recommend]
impl crate::isolation::Message for SocketEvent {
    const BYPASSES_ADMISSION: bool = true;
}

// SAFETY: as above; `Recipient` is a process address, and the `File` of `SendFile` is an
// owned handle moved with the message (like an owned `TcpStream`). (I8)
#[diagnostic::do_not_recommend]
unsafe impl crate::isolation::Isolated for SocketMsg {}
#[diagnostic::do_not_recommend]
impl crate::isolation::Message for SocketMsg {
    const BYPASSES_ADMISSION: bool = true;
}
