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
//! One poll per runtime ([`Net`]) watches all sockets, waited in by the runtime's shared
//! workers when they are idle; each readiness event becomes a message to the socket's
//! process, which runs on the worker that saw it. There is no thread per connection, and a slow peer cannot make the
//! server buffer without bound: see [`SocketLimits`]. The streams handed to you are
//! `std::net::TcpStream`s (non-blocking); mio, which the poller runs on, stays inside.
//!
//! Layer 8: uses `process`, `io` and below.
//!
//! ```
//! use std::net::{SocketAddr, TcpStream};
//! use whirl::net::{AcceptError, Acceptor, SocketConnection, SocketEvent, SocketMsg};
//! use whirl::prelude::*;
//!
//! /// Echoes every byte back.
//! #[process]
//! struct Echo {
//!     socket: Addr<SocketConnection>,
//! }
//!
//! #[process]
//! impl Echo {
//!     #[started]
//!     fn attach(&mut self, ctx: &mut Ctx<Self>) {
//!         let _ = self.socket.post(SocketMsg::Attach(ctx.myself().into()));
//!     }
//!
//!     #[handle]
//!     fn event(&mut self, event: SocketEvent, ctx: &mut Ctx<Self>) {
//!         match event {
//!             SocketEvent::Data(bytes) => {
//!                 let _ = self.socket.post(SocketMsg::Write(bytes));
//!             }
//!             SocketEvent::Eof => {
//!                 let _ = self.socket.post(SocketMsg::Close);
//!             }
//!             SocketEvent::Closed(_) => ctx.complete(),
//!             _ => {}
//!         }
//!     }
//! }
//!
//! /// Serves one accepted connection: a socket process and an `Echo` owning it.
//! fn echo(stream: TcpStream, _peer: SocketAddr, ctx: &mut Ctx<Acceptor>) -> Result<(), AcceptError> {
//!     let socket = ctx.spawn(SocketConnection::new(stream, ctx.net()?)?);
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
//!
//! The bytes of a [`SocketEvent::Data`] are wherever the network cut them, not messages. A
//! [`Framed`] with a codec ([`LinesCodec`], [`LengthDelimited`], or a [`Decoder`] and
//! [`Encoder`] of your own) turns them into items, and items into [`SocketMsg::Write`]s, with
//! bounded buffering.
//!
//! With the feature `tls`, a connection speaks TLS to its peer and plaintext to its owner:
//! see the `tls` module (rustls inside; handshakes admitted by the group's predicate like any work).

mod codec;
mod listener;
mod socket;
#[cfg(feature = "tls")]
pub mod tls;
#[cfg(feature = "tls")]
mod tls_layer;

pub use crate::io::{Net, Readiness};
pub use codec::{
    DecodeBuf, Decoder, Encoder, Framed, LengthDelimited, LengthDelimitedError, LengthPrefix,
    LinesCodec, LinesCodecError,
};
pub use listener::{Accept, AcceptError, AcceptFn, Acceptor, AcceptorMsg};
pub use socket::{CloseReason, SocketConnection, SocketEvent, SocketLimits, SocketMsg};
