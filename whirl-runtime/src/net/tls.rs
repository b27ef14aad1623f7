//! TLS servers on the socket layer (feature `tls`, on [rustls](https://docs.rs/rustls) with
//! its `ring` provider).
//!
//! A TLS connection is a [`SocketConnection`] built with [`SocketConnection::with_tls`]: the
//! same process, the same messages. Its owner still receives plaintext
//! [`SocketEvent::Data`](super::SocketEvent::Data) and sends plaintext
//! [`SocketMsg::Write`](super::SocketMsg::Write); between the owner and the peer the
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
//!   connection with [`CloseReason::Tls`] naming the error. A peer's `close_notify` is
//!   [`SocketEvent::Eof`](super::SocketEvent::Eof): answer what is pending, then send
//!   [`SocketMsg::Close`](super::SocketMsg::Close), which sends our own `close_notify`.
//! * **Bounded.** rustls's own buffers are limited to [`SocketLimits::close_above`]; the
//!   ciphertext waiting for the peer counts against the same limits as a plain connection's
//!   bytes ([`SocketLimits`]).
//!
//! [`server_config`] builds the rustls configuration from PEM files (the certificate chain,
//! leaf first, and the private key), with a [`TlsConfigError`] naming the file and what was
//! wrong with it, as a [`TlsConfig`] that processes may hold. The `rustls` crate is re-exported as [`rustls`](self::rustls), so a program
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

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use rustls;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection};

use super::socket::{SocketConnection, SocketLimits, SocketMsg};
use crate::group::Group;
use crate::isolation::SharedClient;
use crate::principal::Principal;
use crate::process::{Addr, Ctx, Handles, Process};

pub use super::socket::CloseReason;

/// A TLS server configuration, ready to be held by processes: a rustls `ServerConfig`
/// behind an `Arc`, cheap to clone. Build one from PEM files with [`server_config`], or wrap
/// a configuration of your own with [`TlsConfig::new`].
#[derive(Clone)]
pub struct TlsConfig {
    config: SharedClient<Arc<ServerConfig>>,
}

impl TlsConfig {
    /// Wraps `config`.
    pub fn new(config: Arc<ServerConfig>) -> Self {
        TlsConfig {
            config: SharedClient::new(
                config,
                "rustls's server configuration: immutable once built; its session cache and \
                 ticket keys synchronise themselves",
            ),
        }
    }

    /// The rustls configuration.
    pub fn rustls(&self) -> &Arc<ServerConfig> {
        &self.config
    }
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig")
            .field("alpn_protocols", &self.config.alpn_protocols.len())
            .finish_non_exhaustive()
    }
}

// SAFETY: its one field is a `SharedClient`, which is `Isolated` (the rustls configuration
// is shared on purpose, with its reason). (I8)
#[diagnostic::do_not_recommend]
unsafe impl crate::isolation::Isolated for TlsConfig {}

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
    Principal::builder((1 << 63) | bits).build()
}

/// Spawns a TLS [`SocketConnection`] for `stream` in `group`, on behalf of `peer`'s
/// principal ([`peer_principal`]), and offers its [`Handshake`] to the group's predicate.
///
/// Admitted, the connection waits for its owner's
/// [`SocketMsg::Attach`](super::SocketMsg::Attach) (as a plain one does) and then runs the
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
    let socket = ctx.spawn_for(group, principal, socket);
    match socket.post(Handshake) {
        Ok(()) => Ok(socket),
        Err(_) => {
            // Closes without reading: nothing was set up, nothing is sent.
            let _ = socket.post(SocketMsg::Close);
            Err(TlsAcceptError::Shed)
        }
    }
}

/// What went wrong building a TLS server configuration from PEM files
/// ([`server_config`]). Every variant names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsConfigError {
    /// The file could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The file is not well-formed PEM.
    #[error("{}: malformed PEM: {source}", path.display())]
    Pem {
        /// The file.
        path: PathBuf,
        /// What the PEM parser found.
        source: pem::Error,
    },
    /// The certificate file holds no `CERTIFICATE` section.
    #[error("{}: no certificate found (expected a PEM `BEGIN CERTIFICATE` section)", path.display())]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// The key file holds no private key.
    #[error(
        "{}: no private key found (expected a PEM `BEGIN PRIVATE KEY`, `BEGIN RSA PRIVATE KEY` \
         or `BEGIN EC PRIVATE KEY` section)",
        path.display()
    )]
    NoKey {
        /// The file.
        path: PathBuf,
    },
    /// rustls refused the pair: the key is of an unsupported kind, or does not match the
    /// certificate.
    #[error("{} with {}: {source}", key.display(), cert.display())]
    Rejected {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// rustls's reason.
        source: rustls::Error,
    },
}

fn pem_error(path: &Path, e: pem::Error, missing: fn(PathBuf) -> TlsConfigError) -> TlsConfigError {
    let path = path.to_path_buf();
    match e {
        pem::Error::Io(source) => TlsConfigError::Read { path, source },
        pem::Error::NoItemsFound => missing(path),
        source => TlsConfigError::Pem { path, source },
    }
}

/// A TLS server configuration (TLS 1.2 and 1.3, no client certificates, HTTP/1.1 offered by
/// ALPN) for the certificate chain in `cert` (PEM, leaf first) and the private key in `key`
/// (PEM: PKCS#8, PKCS#1 or SEC1).
pub fn server_config(cert: &Path, key: &Path) -> Result<TlsConfig, TlsConfigError> {
    let no_cert = |path| TlsConfigError::NoCertificate { path };
    let chain = CertificateDer::pem_file_iter(cert)
        .map_err(|e| pem_error(cert, e, no_cert))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(cert, e, no_cert))?;
    if chain.is_empty() {
        return Err(no_cert(cert.to_path_buf()));
    }
    let private = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| pem_error(key, e, |path| TlsConfigError::NoKey { path }))?;
    let rejected = |source| TlsConfigError::Rejected {
        cert: cert.to_path_buf(),
        key: key.to_path_buf(),
        source,
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(rejected)?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(rejected)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsConfig::new(Arc::new(config)))
}

/// A handshake or record error: why, and the alert to send the peer (may be empty).
#[derive(Debug)]
pub(super) struct TlsFailure {
    pub(super) reason: String,
    pub(super) alert: Vec<u8>,
}

/// What one batch of ciphertext from the peer produced.
#[derive(Debug, Default)]
pub(super) struct Received {
    /// Decrypted bytes for the owner.
    pub(super) plaintext: Vec<u8>,
    /// Bytes to send the peer (handshake messages, plaintext buffered during the handshake).
    pub(super) to_send: Vec<u8>,
    /// The peer sent `close_notify`: it will send nothing more.
    pub(super) peer_closed: bool,
}

/// The TLS state of a [`SocketConnection`] built with `with_tls`: the configuration until the
/// handshake is admitted, then the rustls connection.
pub(super) struct TlsLayer {
    config: TlsConfig,
    conn: Option<ServerConnection>,
    /// rustls's buffer limit (plaintext before the handshake, ciphertext not yet taken).
    buffer_limit: usize,
}

impl TlsLayer {
    pub(super) fn new(config: TlsConfig, limits: &SocketLimits) -> Self {
        TlsLayer {
            config,
            conn: None,
            buffer_limit: limits.close_above,
        }
    }

    /// Whether the handshake was admitted (the connection may read).
    pub(super) fn started(&self) -> bool {
        self.conn.is_some()
    }

    /// Sets up the rustls connection (no cryptography yet: that starts with the ClientHello).
    pub(super) fn start(&mut self) -> Result<(), TlsFailure> {
        if self.conn.is_some() {
            return Ok(());
        }
        let mut conn = ServerConnection::new(Arc::clone(self.config.rustls())).map_err(|e| TlsFailure {
            reason: e.to_string(),
            alert: Vec::new(),
        })?;
        conn.set_buffer_limit(Some(self.buffer_limit));
        self.conn = Some(conn);
        Ok(())
    }

    /// Feeds ciphertext read from the peer.
    pub(super) fn receive(&mut self, mut ciphertext: &[u8]) -> Result<Received, TlsFailure> {
        let mut out = Received::default();
        let Some(conn) = self.conn.as_mut() else {
            return Err(failure("bytes arrived before the handshake was admitted"));
        };
        while !ciphertext.is_empty() && !out.peer_closed {
            match conn.read_tls(&mut ciphertext) {
                Ok(_) => {}
                Err(e) => return Err(failure(&e.to_string())),
            }
            let state = match conn.process_new_packets() {
                Ok(state) => state,
                Err(e) => {
                    let mut alert = Vec::new();
                    drain(conn, &mut alert);
                    return Err(TlsFailure {
                        reason: e.to_string(),
                        alert,
                    });
                }
            };
            let n = state.plaintext_bytes_to_read();
            if n > 0 {
                let start = out.plaintext.len();
                out.plaintext.resize(start + n, 0);
                if let Err(e) = conn.reader().read_exact(&mut out.plaintext[start..]) {
                    return Err(failure(&e.to_string()));
                }
            }
            out.peer_closed = state.peer_has_closed();
        }
        drain(conn, &mut out.to_send);
        Ok(out)
    }

    /// Encrypts `plaintext` for the peer; before the handshake completes, rustls holds it
    /// (up to its buffer limit) and [`TlsLayer::receive`] hands it out once it can be sent.
    pub(super) fn seal(&mut self, mut plaintext: &[u8]) -> Result<Vec<u8>, TlsFailure> {
        let Some(conn) = self.conn.as_mut() else {
            return Err(failure("a write before the handshake was admitted"));
        };
        // Records add at most a few dozen bytes each (16 KiB of plaintext per record).
        let mut out = Vec::with_capacity(plaintext.len() + plaintext.len() / 256 + 64);
        while !plaintext.is_empty() {
            let n = conn
                .writer()
                .write(plaintext)
                .map_err(|e| failure(&e.to_string()))?;
            plaintext = &plaintext[n..];
            drain(conn, &mut out);
            if n == 0 {
                return Err(failure(
                    "more plaintext queued during the handshake than the buffer limit",
                ));
            }
        }
        Ok(out)
    }

    /// Our `close_notify`, to send before closing (nothing if the handshake never started).
    pub(super) fn close_notify(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some(conn) = self.conn.as_mut() {
            conn.send_close_notify();
            drain(conn, &mut out);
        }
        out
    }
}

fn failure(reason: &str) -> TlsFailure {
    TlsFailure {
        reason: reason.to_string(),
        alert: Vec::new(),
    }
}

/// Moves every TLS record rustls has ready into `out`.
fn drain(conn: &mut ServerConnection, out: &mut Vec<u8>) {
    while conn.wants_write() {
        // Writing into a `Vec` cannot fail.
        if conn.write_tls(out).is_err() {
            break;
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::io::{Read, Write};
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use rustls::pki_types::ServerName;
    use rustls::{ClientConfig, ClientConnection, RootCertStore};

    use super::*;

    /// A self-signed certificate for `localhost` written to PEM files, removed on drop.
    struct Files {
        cert: PathBuf,
        key: PathBuf,
        der: CertificateDer<'static>,
    }

    impl Files {
        fn new() -> Files {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir();
            let stem = format!("whirl-tls-{}-{n}", std::process::id());
            let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
                .expect("a certificate");
            let files = Files {
                cert: dir.join(format!("{stem}-cert.pem")),
                key: dir.join(format!("{stem}-key.pem")),
                der: made.cert.der().clone(),
            };
            std::fs::write(&files.cert, made.cert.pem()).expect("write the certificate");
            std::fs::write(&files.key, made.signing_key.serialize_pem()).expect("write the key");
            files
        }

        fn config(&self) -> TlsConfig {
            server_config(&self.cert, &self.key).expect("a server configuration")
        }

        fn client(&self) -> ClientConnection {
            let mut roots = RootCertStore::empty();
            roots.add(self.der.clone()).expect("a trusted root");
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("protocol versions")
                .with_root_certificates(roots)
                .with_no_client_auth();
            let name = ServerName::try_from("localhost").expect("a server name");
            ClientConnection::new(Arc::new(config), name).expect("a client connection")
        }
    }

    impl Drop for Files {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.cert);
            let _ = std::fs::remove_file(&self.key);
        }
    }

    /// The client's pending records.
    fn from_client(client: &mut ClientConnection) -> Vec<u8> {
        let mut out = Vec::new();
        while client.wants_write() {
            client.write_tls(&mut out).expect("into a Vec");
        }
        out
    }

    /// Gives `bytes` to the client and returns the plaintext it decrypted.
    fn to_client(client: &mut ClientConnection, mut bytes: &[u8]) -> Vec<u8> {
        let mut plaintext = Vec::new();
        while !bytes.is_empty() {
            client.read_tls(&mut bytes).expect("the client reads");
            let state = client.process_new_packets().expect("the server's records are valid");
            let mut chunk = vec![0; state.plaintext_bytes_to_read()];
            client.reader().read_exact(&mut chunk).expect("the plaintext");
            plaintext.extend(chunk);
        }
        plaintext
    }

    /// A server layer and a client that completed the handshake.
    fn connected(files: &Files) -> (TlsLayer, ClientConnection) {
        let mut server = TlsLayer::new(files.config(), &SocketLimits::default());
        server.start().expect("rustls starts");
        let mut client = files.client();
        for _ in 0..10 {
            if !client.is_handshaking() {
                break;
            }
            let hello = from_client(&mut client);
            let received = server.receive(&hello).expect("the handshake proceeds");
            assert!(received.plaintext.is_empty());
            to_client(&mut client, &received.to_send);
        }
        assert!(!client.is_handshaking(), "the handshake completes");
        (server, client)
    }

    #[test]
    fn data_cut_in_odd_pieces_arrives_whole_and_replies_are_sealed() {
        let files = Files::new();
        let (mut server, mut client) = connected(&files);
        let request: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
        client.writer().write_all(&request).expect("the client writes");
        let wire = from_client(&mut client);
        // Cut the records at odd places: one byte, then growing prime-sized pieces.
        let mut plaintext = Vec::new();
        let (mut at, mut size) = (0, 1);
        while at < wire.len() {
            let end = (at + size).min(wire.len());
            let received = server.receive(&wire[at..end]).expect("valid records");
            plaintext.extend(received.plaintext);
            // Session tickets, once the client's Finished is in.
            assert!(to_client(&mut client, &received.to_send).is_empty());
            (at, size) = (end, size * 3 + 2);
        }
        assert_eq!(plaintext, request);
        let reply = server.seal(b"HTTP/1.1 200 OK\r\n\r\n").expect("sealed");
        assert!(!reply.windows(6).any(|w| w == b"200 OK"), "the reply is encrypted");
        assert_eq!(to_client(&mut client, &reply), b"HTTP/1.1 200 OK\r\n\r\n");
    }

    #[test]
    fn close_notify_is_the_peer_closing_and_ours_reaches_the_client() {
        let files = Files::new();
        let (mut server, mut client) = connected(&files);
        client.writer().write_all(b"last words").expect("writes");
        client.send_close_notify();
        let received = server.receive(&from_client(&mut client)).expect("valid records");
        assert_eq!(received.plaintext, b"last words");
        assert!(received.peer_closed);
        assert!(to_client(&mut client, &received.to_send).is_empty());
        let notify = server.close_notify();
        assert!(!notify.is_empty());
        let mut bytes = &notify[..];
        client.read_tls(&mut bytes).expect("the client reads");
        let state = client.process_new_packets().expect("a valid alert");
        assert!(state.peer_has_closed());
    }

    #[test]
    fn plaintext_to_a_tls_server_fails_with_a_reason_and_an_alert() {
        let files = Files::new();
        let mut server = TlsLayer::new(files.config(), &SocketLimits::default());
        server.start().expect("rustls starts");
        let failure = server
            .receive(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .expect_err("not TLS");
        assert!(!failure.reason.is_empty());
        assert_eq!(failure.alert.first(), Some(&21), "a TLS alert record: {failure:?}");
    }

    #[test]
    fn a_connection_not_admitted_sends_nothing_and_reads_nothing() {
        let files = Files::new();
        let mut server = TlsLayer::new(files.config(), &SocketLimits::default());
        assert!(!server.started());
        assert!(server.close_notify().is_empty());
        assert!(server.receive(b"\x16\x03\x01").is_err());
        assert!(server.seal(b"early").is_err());
    }

    #[test]
    fn configuration_errors_name_the_file_and_the_problem() {
        let files = Files::new();
        let missing = files.cert.with_extension("missing");
        let err = server_config(&missing, &files.key).expect_err("no such file");
        assert!(matches!(&err, TlsConfigError::Read { path, .. } if *path == missing));
        assert!(err.to_string().contains(&missing.display().to_string()));

        // A certificate file given as the key, and a key given as the certificate.
        let err = server_config(&files.cert, &files.cert).expect_err("no key");
        assert!(matches!(&err, TlsConfigError::NoKey { path } if *path == files.cert), "{err}");
        let err = server_config(&files.key, &files.key).expect_err("no certificate");
        assert!(matches!(&err, TlsConfigError::NoCertificate { .. }), "{err}");

        // Broken PEM.
        let broken = files.key.with_extension("broken");
        std::fs::write(&broken, "-----BEGIN PRIVATE KEY-----\nnot base64!\n").expect("write");
        let err = server_config(&files.cert, &broken).expect_err("malformed");
        let _ = std::fs::remove_file(&broken);
        assert!(matches!(&err, TlsConfigError::Pem { path, .. } if *path == broken), "{err}");

        // A key that is not the certificate's.
        let other = Files::new();
        let err = server_config(&files.cert, &other.key).expect_err("mismatched");
        assert!(matches!(&err, TlsConfigError::Rejected { .. }), "{err}");
    }
}
