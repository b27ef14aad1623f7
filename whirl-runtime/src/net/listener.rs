//! `Acceptor`: the accept loop as a process.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use std::net::TcpStream;

use mio::net::TcpListener;
use mio::Interest;

use crate::io::{Net, Readiness, Registration};

use crate::isolation::Isolated;
use crate::lifecycle::{ExitReason, Failure};
use crate::process::Ctx;
use crate::process::{Handles, Process, Sender};

/// Connections accepted per turn before yielding to other processes.
const ACCEPTS_PER_TURN: usize = 64;
/// Pause before accepting again after an error such as running out of file descriptors.
const RETRY_AFTER_ERROR: Duration = Duration::from_millis(20);

/// What an [`Acceptor`] is told.
#[derive(Debug)]
#[non_exhaustive]
pub enum AcceptorMsg {
    /// A readiness event from the poller, or a self-posted continuation.
    Ready(Readiness),
    /// Stop accepting: close the listening socket and terminate.
    Stop,
}

// SAFETY: plain data: a `Readiness` is a few `bool`s. (I8)
#[diagnostic::do_not_recommend]
unsafe impl Isolated for AcceptorMsg {}
#[diagnostic::do_not_recommend]
impl crate::isolation::Message for AcceptorMsg {
    const BYPASSES_ADMISSION: bool = true;
}

/// The error an [`Accept`] implementation returns for a connection it could not serve.
pub type AcceptError = Box<dyn std::error::Error + Send + Sync>;

/// What an [`Acceptor`] does with each connection it accepts: usually spawns a
/// [`SocketConnection`](super::SocketConnection) and the process that speaks the protocol over
/// it. An error is logged and the connection dropped; the acceptor goes on.
///
/// It is part of the acceptor's state, so it must be [`Isolated`]: implement it on a struct
/// holding what it needs (process addresses, groups, immutable configuration behind an `Arc`)
/// that derives `Isolated` (`#[derive(Isolated)]` in the `whirl` crate). A closure cannot be
/// used: it could capture shared mutable state (an `Arc<Mutex<_>>`) that the type system would
/// not see. For the simple case there is an impl for plain function pointers, [`AcceptFn`],
/// which [`Acceptor::bind_fn`] takes (a non-capturing closure coerces to one).
///
/// ```
/// use std::net::SocketAddr;
/// use std::net::TcpStream;
/// use whirl::net::{Accept, AcceptError, Acceptor, SocketConnection};
/// use whirl::{Ctx, Group, Isolated};
///
/// /// Puts every connection's socket process in the `sockets` group.
/// #[derive(Isolated)]
/// struct IntoGroup { sockets: Group }
///
/// impl Accept for IntoGroup {
///     fn accept(
///         &mut self,
///         stream: TcpStream,
///         _peer: SocketAddr,
///         ctx: &mut Ctx<Acceptor>,
///     ) -> Result<(), AcceptError> {
///         ctx.spawner().group(&self.sockets).spawn(SocketConnection::new(stream, ctx.net()?)?);
///         Ok(())
///     }
/// }
/// ```
pub trait Accept: Isolated {
    /// Takes one accepted connection from `peer` (a non-blocking std stream). Runs in the
    /// acceptor's handler: it must not block, and should leave the connection's work to the
    /// processes it spawns.
    fn accept(
        &mut self,
        stream: TcpStream,
        peer: SocketAddr,
        ctx: &mut Ctx<Acceptor>,
    ) -> Result<(), AcceptError>;
}

/// A plain function that takes accepted connections: the short form of [`Accept`], for
/// [`Acceptor::bind_fn`]. Being a function pointer, it carries no data at all.
pub type AcceptFn = fn(TcpStream, SocketAddr, &mut Ctx<Acceptor>) -> Result<(), AcceptError>;

// SAFETY: a function pointer holds no data. (The generic impls in `isolated.rs` cover
// higher-ranked function pointers only when the *first* parameter is the borrowed one; here it
// is the third, `&mut Ctx<Acceptor>`.) (I8)
#[allow(coherence_leak_check)] // a distinct type from `fn(A, B, C) -> R`; see `isolated.rs`
#[diagnostic::do_not_recommend]
unsafe impl Isolated for AcceptFn {}

impl Accept for AcceptFn {
    fn accept(
        &mut self,
        stream: TcpStream,
        peer: SocketAddr,
        ctx: &mut Ctx<Acceptor>,
    ) -> Result<(), AcceptError> {
        self(stream, peer, ctx)
    }
}

/// A process that accepts TCP connections and hands each one to an [`Accept`]
/// implementation. See the [module docs](super) for an example.
pub struct Acceptor {
    listener: TcpListener,
    net: Net,
    on_accept: Box<dyn Accept>,
    registration: Option<Registration>,
    accepted: u64,
}

impl Acceptor {
    /// Binds `addr` and prepares an acceptor (spawn it to start accepting) that hands each
    /// connection to `on_accept`. Returns the bound address too (useful with port 0).
    pub fn bind(
        addr: SocketAddr,
        net: Net,
        on_accept: impl Accept,
    ) -> io::Result<(Acceptor, SocketAddr)> {
        let listener = TcpListener::bind(addr)?;
        let local = listener.local_addr()?;
        let acceptor = Acceptor {
            listener,
            net,
            on_accept: Box::new(on_accept),
            registration: None,
            accepted: 0,
        };
        Ok((acceptor, local))
    }

    /// [`Acceptor::bind`] with a plain function (or a closure that captures nothing, which
    /// coerces to one) taking each connection.
    pub fn bind_fn(
        addr: SocketAddr,
        net: Net,
        on_accept: AcceptFn,
    ) -> io::Result<(Acceptor, SocketAddr)> {
        Acceptor::bind(addr, net, on_accept)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.accepted
    }

    fn accept_some(&mut self, ctx: &mut Ctx<Self>) {
        for _ in 0..ACCEPTS_PER_TURN {
            match self.listener.accept() {
                Ok((stream, peer)) => {
                    self.accepted += 1;
                    // Handed over as a std stream, still non-blocking: mio's types stay inside
                    // the runtime.
                    if let Err(e) = self.on_accept.accept(TcpStream::from(stream), peer, ctx) {
                        tracing::warn!(%peer, "dropping an accepted connection: {e}");
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // Out of descriptors, or a connection reset before we took it: edge
                    // triggering would not tell us again, so try again shortly.
                    tracing::warn!("accept failed: {e}; retrying");
                    let _ =
                        ctx.post_after(RETRY_AFTER_ERROR, AcceptorMsg::Ready(Readiness::default()));
                    return;
                }
            }
        }
        // More may be waiting: continue after the processes just spawned had a turn.
        let _ = ctx.myself().post(AcceptorMsg::Ready(Readiness::default()));
    }
}

// SAFETY: the state shares no mutable state with any other process:
// * `listener` is an owned mio socket: this process holds the only handle on it (it is never
//   cloned or lent out), like the `std::net::TcpListener` that `isolated.rs` lists;
// * `on_accept` is a `Box<dyn Accept>`, and `Accept: Isolated`, so whatever it holds was
//   checked (or, for an `unsafe impl`, promised) by its author;
// * `net` and the `Registration` are handles on the runtime's own I/O service, the poller. Like
//   an `Addr`, they reach only the runtime's internal, self-synchronising bookkeeping (the
//   poll registry and the table of readiness callbacks), never another process's state; what
//   the poller does with them is post `AcceptorMsg::Ready` to this process;
// * `accepted` is a counter.
// The only message, `AcceptorMsg`, is plain data. (I8)
#[diagnostic::do_not_recommend]
unsafe impl Process for Acceptor {
    type Message = AcceptorMsg;

    fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        let me = ctx.myself();
        let registration = self
            .net
            .register(&mut self.listener, Interest::READABLE, move |readiness| {
                let _ = me.post(AcceptorMsg::Ready(readiness));
            })
            .map_err(|e| Failure::new(format!("cannot poll the listening socket: {e}")))?;
        self.registration = Some(registration);
        // Connections may have queued before the registration.
        self.accept_some(ctx);
        Ok(())
    }

    fn handle(&mut self, msg: AcceptorMsg, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        match msg {
            AcceptorMsg::Ready(_) => self.accept_some(ctx),
            AcceptorMsg::Stop => ctx.complete(),
        }
        Ok(())
    }

    fn terminated(&mut self, _: &ExitReason) {
        self.registration = None;
        let _ = self.net.deregister(&mut self.listener);
    }
}

impl Handles<AcceptorMsg> for Acceptor {
    // Readiness and I/O requests for a connection already accepted are never refused.
    const BYPASSES_ADMISSION: bool = true;

    fn into_message(msg: AcceptorMsg) -> AcceptorMsg {
        msg
    }
}

impl std::fmt::Debug for Acceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Acceptor")
            .field("local", &self.listener.local_addr().ok())
            .field("accepted", &self.accepted)
            .finish_non_exhaustive()
    }
}
