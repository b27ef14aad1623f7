//! Non-blocking sockets as processes (feature `net`, on [mio](https://docs.rs/mio)).
//!
//! As in the Whirlwind paper's HTTP server, a socket is owned by a process: a
//! [`SocketConnection`] turns readiness into [`SocketEvent`]s for the process that owns it,
//! and writes what it is sent, with bounded buffers. An [`Acceptor`] process accepts
//! connections and hands each one to your [`Accept`] implementation, which typically spawns a
//! `SocketConnection` and the process that will speak the protocol over it. That
//! implementation is part of the acceptor's state, so it is [`Isolated`](crate::Isolated): a
//! struct deriving it, holding the addresses and configuration it needs, or, when it needs
//! none, a plain function ([`Acceptor::bind_fn`]).
//!
//! One poller thread per runtime ([`Net`]) waits on all sockets; each readiness event
//! becomes a message. There is no thread per connection, and a slow peer cannot make the
//! server buffer without bound: see [`SocketLimits`].
//!
//! With the `whirl` crate, `Echo` below is a `#[process]` with one `#[handle]` method; this
//! crate's own examples write the impls by hand.
//!
//! ```
//! use std::net::SocketAddr;
//! use whirl_runtime::net::{AcceptError, Acceptor, SocketConnection, SocketEvent, SocketMsg, TcpStream};
//! use whirl_runtime::{Addr, Ctx, Failure, Handles, Process, Runtime};
//!
//! /// Echoes every byte back.
//! struct Echo { socket: Addr<SocketConnection> }
//!
//! // SAFETY: the state is a process address; the message, `SocketEvent`, is isolated (bytes
//! // by value). (Real code writes `#[process]`, which checks this.)
//! unsafe impl Process for Echo {
//!     type Message = SocketEvent;
//!     fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
//!         let _ = self.socket.post(SocketMsg::Attach(ctx.myself().into()));
//!         Ok(())
//!     }
//!     fn handle(&mut self, event: SocketEvent, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
//!         match event {
//!             SocketEvent::Data(bytes) => { let _ = self.socket.post(SocketMsg::Write(bytes)); }
//!             SocketEvent::Eof => { let _ = self.socket.post(SocketMsg::Close); }
//!             SocketEvent::Closed(_) => ctx.complete(),
//!             SocketEvent::Drained => {}
//!         }
//!         Ok(())
//!     }
//! }
//! impl Handles<SocketEvent> for Echo {
//!     fn into_message(event: SocketEvent) -> SocketEvent { event }
//! }
//!
//! /// Serves one accepted connection: a socket process and an `Echo` owning it.
//! fn echo(stream: TcpStream, _peer: SocketAddr, ctx: &mut Ctx<Acceptor>) -> Result<(), AcceptError> {
//!     let socket = ctx.spawn(SocketConnection::new(stream, ctx.net()?));
//!     ctx.spawn(Echo { socket });
//!     Ok(())
//! }
//!
//! let rt = Runtime::new();
//! let net = rt.net()?;
//! let addr: SocketAddr = "127.0.0.1:0".parse()?;
//! let (acceptor, local) = Acceptor::bind_fn(addr, net, echo)?;
//! rt.spawn(acceptor);
//!
//! use std::io::{Read, Write};
//! let mut client = std::net::TcpStream::connect(local)?;
//! client.write_all(b"ping")?;
//! let mut reply = [0; 4];
//! client.read_exact(&mut reply)?;
//! assert_eq!(&reply, b"ping");
//! rt.shutdown_graceful();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! An acceptor that needs data (a group to spawn in, shared immutable configuration)
//! implements [`Accept`] on a struct holding it: see the trait's documentation.

mod listener;
mod poller;
mod socket;

pub use listener::{Accept, AcceptError, AcceptFn, Acceptor, AcceptorMsg};
pub use mio::net::{TcpListener, TcpStream};
pub use mio::Interest;
pub use poller::{Net, Registration};
pub use socket::{CloseReason, SocketConnection, SocketEvent, SocketLimits, SocketMsg};

/// What a readiness event says about a source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Readiness {
    /// Reading may make progress.
    pub readable: bool,
    /// Writing may make progress.
    pub writable: bool,
    /// The peer will send nothing more.
    pub read_closed: bool,
    /// The peer will read nothing more.
    pub write_closed: bool,
    /// The source has an error (the next read or write reports it).
    pub error: bool,
}

impl Readiness {
    fn of(event: &mio::event::Event) -> Self {
        Readiness {
            readable: event.is_readable(),
            writable: event.is_writable(),
            read_closed: event.is_read_closed(),
            write_closed: event.is_write_closed(),
            error: event.is_error(),
        }
    }
}
