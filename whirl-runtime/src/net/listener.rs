//! `Acceptor`: the accept loop as a process.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use mio::net::{TcpListener, TcpStream};
use mio::Interest;

use super::poller::{Net, Registration};
use super::Readiness;
use crate::ctx::Ctx;
use crate::process::{ExitReason, Failure, Handles, Process};

/// Connections accepted per turn before yielding to other processes.
const ACCEPTS_PER_TURN: usize = 64;
/// Pause before accepting again after an error such as running out of file descriptors.
const RETRY_AFTER_ERROR: Duration = Duration::from_millis(20);

/// What an [`Acceptor`] is told.
#[derive(Debug)]
pub enum AcceptorMsg {
    /// A readiness event from the poller, or a self-posted continuation.
    Ready(Readiness),
    /// Stop accepting: close the listening socket and terminate.
    Stop,
}

// SAFETY: plain data.
unsafe impl crate::isolated::Isolated for AcceptorMsg {}
impl crate::isolated::Message for AcceptorMsg {
    const BYPASSES_ADMISSION: bool = true;
}

/// What the acceptor does with a connection: usually spawns the processes that serve it.
/// An error is logged and the connection dropped; the acceptor goes on.
pub type OnAccept = Box<
    dyn FnMut(TcpStream, SocketAddr, &mut Ctx<Acceptor>) -> Result<(), Box<dyn std::error::Error>>
        + Send,
>;

/// A process that accepts TCP connections and hands each one to a function. See the
/// [module docs](super) for an example.
pub struct Acceptor {
    listener: TcpListener,
    net: Net,
    on_accept: OnAccept,
    registration: Option<Registration>,
    accepted: u64,
}

impl Acceptor {
    /// Binds `addr` and prepares an acceptor (spawn it to start accepting). Returns the bound
    /// address too (useful with port 0).
    pub fn bind(
        addr: SocketAddr,
        net: Net,
        on_accept: impl FnMut(
                TcpStream,
                SocketAddr,
                &mut Ctx<Acceptor>,
            ) -> Result<(), Box<dyn std::error::Error>>
            + Send
            + 'static,
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

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.accepted
    }

    fn accept_some(&mut self, ctx: &mut Ctx<Self>) {
        for _ in 0..ACCEPTS_PER_TURN {
            match self.listener.accept() {
                Ok((stream, peer)) => {
                    self.accepted += 1;
                    if let Err(e) = (self.on_accept)(stream, peer, ctx) {
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

// SAFETY: PENDING-REVIEW
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
