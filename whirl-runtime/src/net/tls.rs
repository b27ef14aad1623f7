//! TLS servers on the socket layer (feature `tls`, on [rustls](https://docs.rs/rustls) with
//! its `ring` provider).
//!
//! A TLS connection is a [`SocketConnection`] built with [`SocketConnection::with_tls`]: the
//! same process, the same messages. Its owner still receives plaintext
//! [`SocketEvent::Data`](super::SocketEvent::Data) and sends plaintext
//! [`SocketMsg::Write`]; between the owner and the peer the
//! connection keeps a rustls `ServerConnection` that decrypts what it reads and encrypts what
//! it is asked to write. A protocol process written for plain TCP (an HTTP connection, a
//! line protocol behind a [`Framed`](super::Framed)) serves TLS unchanged.
//!
//! ```text
//!  peer ──ciphertext──▶ SocketConnection ──SocketEvent::Data(plaintext)──▶ owner
//!       ◀─ciphertext───  (rustls inside)  ◀──SocketMsg::Write(plaintext)──
//! ```
//!
//! * **Handshake as work of a principal.** The handshake runs in the socket process, in the
//!   group it was spawned in, serving the principal it was spawned for: the group's
//!   scheduler, predicates and statistics see handshakes as they see any other work.
//!   [`spawn_tls`] gives each connection the principal of its client's address
//!   ([`peer_principal`]): every connection from one address is the same principal, so the
//!   group's per-principal rejection counts show an address that floods.
//! * **Admission before any crypto.** A connection does nothing until its [`Handshake`] is
//!   admitted: [`spawn_tls`] posts one, which, unlike the socket's own messages, goes through
//!   the group's [`MessagePredicate`](crate::admission::MessagePredicate). A refused
//!   handshake closes the connection at once, before rustls is even set up, and counts as a
//!   rejection in the group's statistics. A queue-length threshold sheds handshakes when the
//!   group falls behind; a [`TokenBucket`](crate::admission::TokenBucket) caps the rate of
//!   new handshakes; a handshake flood is refused like any overload.
//! * **Failures close, never panic.** A handshake or record error (a plaintext client, a bad
//!   record, an unsupported protocol version) sends the alert rustls prepared and closes the
//!   connection with [`CloseReason::Tls`](super::CloseReason::Tls) naming the error. A peer's `close_notify` is
//!   [`SocketEvent::Eof`](super::SocketEvent::Eof): answer what is pending, then send
//!   [`SocketMsg::Close`], which sends our own `close_notify`.
//! * **A handshake has a deadline.** Once admitted, a handshake must complete within the
//!   configuration's [`handshake_timeout`](TlsConfig::handshake_timeout) (10 s unless set
//!   with [`TlsConfig::with_handshake_timeout`]), counted on the runtime's timers: a peer that
//!   connects and then stalls, sending nothing or half a ClientHello, is closed with
//!   [`CloseReason::Tls`](super::CloseReason::Tls) ("handshake not completed within 10s")
//!   and the owner is told as for any close. The connection is not held until some owner
//!   gives up on it. A completed handshake cancels the deadline; after it, idle connections
//!   are the owner's business.
//! * **Bounded.** rustls's own buffers are limited to
//!   [`SocketLimits::close_above`](super::SocketLimits::close_above); the
//!   ciphertext waiting for the peer counts against the same limits as a plain connection's
//!   bytes ([`SocketLimits`](super::SocketLimits)).
//!
//! [`server_config`] builds the rustls configuration from PEM files (the certificate chain,
//! leaf first, and the private key), with a [`TlsConfigError`] naming the file and what was
//! wrong with it, as a [`TlsConfig`] that processes may hold. The `rustls` crate is re-exported as [`rustls`], so a program
//! names `ServerConfig` without depending on rustls itself (and cannot pick another version).
//!
//! ```no_run
//! use std::net::{SocketAddr, TcpStream};
//! use whirl::net::tls::{self, TlsConfig};
//! use whirl::net::{Accept, AcceptError, Acceptor};
//! use whirl::{Ctx, Group, Isolated, Runtime};
//!
//! /// Puts every connection's TLS socket in the `tls` group.
//! #[derive(Isolated)]
//! struct Serve { tls: Group, config: TlsConfig }
//!
//! impl Accept for Serve {
//!     fn accept(&mut self, stream: TcpStream, peer: SocketAddr, ctx: &mut Ctx<Acceptor>)
//!         -> Result<(), AcceptError>
//!     {
//!         let socket = tls::spawn_tls(ctx, &self.tls, stream, peer, self.config.clone())?;
//!         // ... spawn the process that speaks the protocol over `socket`, as with plain TCP.
//!         # let _ = socket;
//!         Ok(())
//!     }
//! }
//!
//! let rt = Runtime::new();
//! let group = rt.group("tls").predicate(whirl::admission::QueueLength::max(256)).build()?;
//! let config = tls::server_config("cert.pem".as_ref(), "key.pem".as_ref())?;
//! let addr: SocketAddr = "127.0.0.1:8443".parse()?;
//! let (acceptor, _) = Acceptor::bind(addr, rt.net()?, Serve { tls: group, config })?;
//! rt.spawn(acceptor);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io;
use std::net::{IpAddr, SocketAddr, TcpStream};

pub use rustls;

use super::socket::{SocketConnection, SocketMsg};
pub use super::tls_layer::{server_config, TlsConfig, TlsConfigError};
use crate::group::Group;
use crate::principal::Principal;
use crate::process::{Addr, Ctx, Handles, Process, Sender};

/// The message that starts a TLS connection's handshake, offered to the admission predicate
/// of the connection's group (see the [module docs](self)). [`spawn_tls`] posts it; post it
/// yourself to a connection built with [`SocketConnection::with_tls`] and spawned some other
/// way. A connection never told it never reads, and closes when told
/// [`SocketMsg::Close`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Handshake;

impl Handshake {
    /// The message.
    pub fn new() -> Self {
        Handshake
    }
}

impl Default for Handshake {
    fn default() -> Self {
        Handshake
    }
}

// SAFETY: a unit struct holds no data. (I8)
#[diagnostic::do_not_recommend]
unsafe impl crate::isolation::Isolated for Handshake {}
// Not `BYPASSES_ADMISSION`: a handshake is new work, weighed by the group's predicate.
#[diagnostic::do_not_recommend]
impl crate::isolation::Message for Handshake {}

impl Handles<Handshake> for SocketConnection {
    fn into_message(_: Handshake) -> SocketMsg {
        SocketMsg::StartTls
    }
}

/// Why [`spawn_tls`] did not start a connection. The stream is closed either way.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsAcceptError {
    /// The group's predicate refused the handshake: the connection was closed at once,
    /// before any cryptography, and counted as rejected in the group's statistics.
    #[error("handshake refused by the group's admission predicate (overload): connection closed")]
    Shed,
    /// The stream could not be made non-blocking, or the poller could not start.
    #[error("cannot serve the connection: {0}")]
    Io(#[from] io::Error),
}

/// The principal a TLS connection from `peer` runs on behalf of: one per client address
/// (the port is ignored), priority 0, class 0. Its id is the address's bits (an IPv6
/// address folded to 64 bits) with the top bit set, which keeps it apart from small
/// application ids such as session numbers.
///
/// ```
/// use whirl::net::tls::peer_principal;
/// let a = peer_principal("10.0.0.1:4000".parse()?);
/// let b = peer_principal("10.0.0.1:5000".parse()?);
/// let c = peer_principal("10.0.0.2:4000".parse()?);
/// assert_eq!(a.id(), b.id());
/// assert_ne!(a.id(), c.id());
/// # Ok::<(), std::net::AddrParseError>(())
/// ```
pub fn peer_principal(peer: SocketAddr) -> Principal {
    let bits = match peer.ip() {
        IpAddr::V4(v4) => u64::from(u32::from(v4)),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => u64::from(u32::from(v4)),
            None => {
                let bits = u128::from(v6);
                (bits as u64) ^ ((bits >> 64) as u64)
            }
        },
    };
    Principal::builder((1 << 63) | bits)
        .build()
        .expect("only a utility set out of range is refused, and none is set")
}

/// Spawns a TLS [`SocketConnection`] for `stream` in `group`, on behalf of `peer`'s
/// principal ([`peer_principal`]), and offers its [`Handshake`] to the group's predicate.
///
/// Admitted, the connection waits for its owner's
/// [`SocketMsg::Attach`] (as a plain one does) and then runs the
/// handshake. Refused, the connection is closed at once, before rustls is set up, and
/// [`TlsAcceptError::Shed`] says so: spawn no owner for it.
pub fn spawn_tls<P: Process>(
    ctx: &Ctx<P>,
    group: &Group,
    stream: TcpStream,
    peer: SocketAddr,
    config: TlsConfig,
) -> Result<Addr<SocketConnection>, TlsAcceptError> {
    let socket = SocketConnection::with_tls(stream, ctx.net()?, config)?;
    let principal = peer_principal(peer);
    let socket = ctx
        .spawner()
        .group(group)
        .principal(principal)
        .spawn(socket);
    match socket.post(Handshake) {
        Ok(()) => Ok(socket),
        Err(_) => {
            // Closes without reading: nothing was set up, nothing is sent.
            let _ = socket.post(SocketMsg::Close);
            Err(TlsAcceptError::Shed)
        }
    }
}
