//! The TLS state machine of a socket (feature `tls`): rustls's `ServerConnection` between
//! the bytes a [`SocketConnection`](super::SocketConnection) reads and writes and the
//! plaintext its owner sees, and the configuration it is built from (the public items are
//! offered by [`tls`](super::tls)).
//!
//! [`TlsLayer::receive`] takes ciphertext as the network cut it and returns the plaintext it
//! decrypted, the records to send back (handshake messages, session tickets, plaintext held
//! during the handshake) and whether the peer sent `close_notify`; [`TlsLayer::seal`] turns
//! the owner's plaintext into records. Neither touches a socket, so the socket stays the one
//! place that does I/O, and the tests here drive a server against a rustls client in memory.
//! Nothing here panics on what a peer sends: errors come back as a [`TlsFailure`] with the
//! alert to send.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection};

use crate::isolation::SharedClient;

/// A TLS server configuration, ready to be held by processes: a rustls `ServerConfig`
/// behind an `Arc`, cheap to clone, and the handshake timeout. Build one from PEM files with
/// [`server_config`], or wrap a configuration of your own with [`TlsConfig::new`].
#[derive(Clone)]
pub struct TlsConfig {
    config: SharedClient<Arc<ServerConfig>>,
    handshake_timeout: Duration,
}

impl TlsConfig {
    /// The default [`handshake_timeout`](TlsConfig::handshake_timeout): 10 seconds.
    pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

    /// Wraps `config`, with the default handshake timeout.
    pub fn new(config: Arc<ServerConfig>) -> Self {
        TlsConfig {
            config: SharedClient::new(
                config,
                "rustls's server configuration: immutable once built; its session cache and \
                 ticket keys synchronise themselves",
            ),
            handshake_timeout: TlsConfig::DEFAULT_HANDSHAKE_TIMEOUT,
        }
    }

    /// The same configuration with another handshake timeout.
    pub fn with_handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// How long a connection's handshake may take, counted from its admission: a connection
    /// still handshaking then is closed with
    /// [`CloseReason::Tls`](super::CloseReason::Tls) (default
    /// [`DEFAULT_HANDSHAKE_TIMEOUT`](TlsConfig::DEFAULT_HANDSHAKE_TIMEOUT)).
    pub fn handshake_timeout(&self) -> Duration {
        self.handshake_timeout
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
            .field("handshake_timeout", &self.handshake_timeout)
            .finish_non_exhaustive()
    }
}

// SAFETY: a `SharedClient`, which is `Isolated` (the rustls configuration is shared on
// purpose, with its reason), and a `Duration` (plain numbers). (I8)
#[diagnostic::do_not_recommend]
unsafe impl crate::isolation::Isolated for TlsConfig {}

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

/// The TLS state of a [`SocketConnection`](super::SocketConnection) built with `with_tls`: the
/// configuration until the handshake is admitted, then the rustls connection.
pub(super) struct TlsLayer {
    config: TlsConfig,
    conn: Option<ServerConnection>,
    /// rustls's buffer limit (plaintext before the handshake, ciphertext not yet taken).
    buffer_limit: usize,
}

impl TlsLayer {
    /// A layer that will use `config`, with rustls's buffers limited to `buffer_limit` bytes
    /// (the socket's [`SocketLimits::close_above`](super::SocketLimits::close_above)).
    pub(super) fn new(config: TlsConfig, buffer_limit: usize) -> Self {
        TlsLayer {
            config,
            conn: None,
            buffer_limit,
        }
    }

    /// Whether the handshake was admitted (the connection may read).
    pub(super) fn started(&self) -> bool {
        self.conn.is_some()
    }

    /// Whether the handshake was admitted and has not completed yet.
    pub(super) fn handshaking(&self) -> bool {
        self.conn.as_ref().is_some_and(|conn| conn.is_handshaking())
    }

    /// The application protocol ALPN agreed on, once the handshake has completed.
    pub(super) fn alpn(&self) -> Option<&[u8]> {
        self.conn.as_ref().and_then(|conn| conn.alpn_protocol())
    }

    /// How long the handshake may take once admitted.
    pub(super) fn handshake_timeout(&self) -> Duration {
        self.config.handshake_timeout()
    }

    /// Sets up the rustls connection (no cryptography yet: that starts with the ClientHello).
    pub(super) fn start(&mut self) -> Result<(), TlsFailure> {
        if self.conn.is_some() {
            return Ok(());
        }
        let mut conn =
            ServerConnection::new(Arc::clone(self.config.rustls())).map_err(|e| TlsFailure {
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

    /// rustls's buffer limit in these tests (a socket's default `close_above`).
    const LIMIT: usize = 4 * 1024 * 1024;

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
            self.client_offering(&[])
        }

        /// A client that offers these protocols by ALPN.
        fn client_offering(&self, alpn: &[&[u8]]) -> ClientConnection {
            let mut roots = RootCertStore::empty();
            roots.add(self.der.clone()).expect("a trusted root");
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("protocol versions")
                .with_root_certificates(roots)
                .with_no_client_auth();
            let mut config = config;
            config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
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
            let state = client
                .process_new_packets()
                .expect("the server's records are valid");
            let mut chunk = vec![0; state.plaintext_bytes_to_read()];
            client
                .reader()
                .read_exact(&mut chunk)
                .expect("the plaintext");
            plaintext.extend(chunk);
        }
        plaintext
    }

    /// A server layer and a client that completed the handshake.
    fn connected(files: &Files) -> (TlsLayer, ClientConnection) {
        handshake(files.config(), files.client())
    }

    /// A server layer with `config` and `client`, once they completed the handshake.
    fn handshake(config: TlsConfig, mut client: ClientConnection) -> (TlsLayer, ClientConnection) {
        let mut server = TlsLayer::new(config, LIMIT);
        server.start().expect("rustls starts");
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
        client
            .writer()
            .write_all(&request)
            .expect("the client writes");
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
        assert!(
            !reply.windows(6).any(|w| w == b"200 OK"),
            "the reply is encrypted"
        );
        assert_eq!(to_client(&mut client, &reply), b"HTTP/1.1 200 OK\r\n\r\n");
    }

    #[test]
    fn alpn_is_known_once_the_handshake_completes_and_the_servers_order_wins() {
        let files = Files::new();
        // The shipped configuration offers HTTP/1.1 only.
        let (server, _) = handshake(files.config(), files.client_offering(&[b"h2", b"http/1.1"]));
        assert_eq!(server.alpn(), Some(&b"http/1.1"[..]));
        let (server, _) = handshake(files.config(), files.client());
        assert_eq!(
            server.alpn(),
            None,
            "a client that offers nothing agrees on nothing"
        );
        // A server that lists h2 first gets it from a client that offers both, in either order.
        let mut h2_first = (**files.config().rustls()).clone();
        h2_first.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let config = TlsConfig::new(Arc::new(h2_first));
        let mut server = TlsLayer::new(config.clone(), LIMIT);
        server.start().expect("rustls starts");
        assert_eq!(
            server.alpn(),
            None,
            "nothing is agreed before the handshake"
        );
        let (server, client) = handshake(config, files.client_offering(&[b"http/1.1", b"h2"]));
        assert_eq!(server.alpn(), Some(&b"h2"[..]));
        assert_eq!(client.alpn_protocol(), Some(&b"h2"[..]));
    }

    #[test]
    fn close_notify_is_the_peer_closing_and_ours_reaches_the_client() {
        let files = Files::new();
        let (mut server, mut client) = connected(&files);
        client.writer().write_all(b"last words").expect("writes");
        client.send_close_notify();
        let received = server
            .receive(&from_client(&mut client))
            .expect("valid records");
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
        let mut server = TlsLayer::new(files.config(), LIMIT);
        server.start().expect("rustls starts");
        let failure = server
            .receive(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .expect_err("not TLS");
        assert!(!failure.reason.is_empty());
        assert_eq!(
            failure.alert.first(),
            Some(&21),
            "a TLS alert record: {failure:?}"
        );
    }

    #[test]
    fn a_connection_not_admitted_sends_nothing_and_reads_nothing() {
        let files = Files::new();
        let mut server = TlsLayer::new(files.config(), LIMIT);
        assert!(!server.started());
        assert!(server.close_notify().is_empty());
        assert!(server.receive(b"\x16\x03\x01").is_err());
        assert!(server.seal(b"early").is_err());
    }

    #[test]
    fn the_handshake_timeout_is_configured_and_handshaking_ends_with_the_handshake() {
        let files = Files::new();
        let config = files.config();
        assert_eq!(config.handshake_timeout(), Duration::from_secs(10));
        let short = config.with_handshake_timeout(Duration::from_millis(200));
        let mut server = TlsLayer::new(short, LIMIT);
        assert_eq!(server.handshake_timeout(), Duration::from_millis(200));
        assert!(!server.handshaking(), "not admitted: no handshake yet");
        server.start().expect("rustls starts");
        assert!(server.handshaking());
        // Half a ClientHello: still handshaking.
        let mut client = files.client();
        let hello = from_client(&mut client);
        server
            .receive(&hello[..hello.len() / 2])
            .expect("valid so far");
        assert!(server.handshaking());
        // A TLS 1.3 server completes once the client's Finished arrives.
        let (mut server, mut client) = connected(&files);
        server
            .receive(&from_client(&mut client))
            .expect("the client's Finished");
        assert!(!server.handshaking(), "a completed handshake");
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
        assert!(
            matches!(&err, TlsConfigError::NoKey { path } if *path == files.cert),
            "{err}"
        );
        let err = server_config(&files.key, &files.key).expect_err("no certificate");
        assert!(
            matches!(&err, TlsConfigError::NoCertificate { .. }),
            "{err}"
        );

        // Broken PEM.
        let broken = files.key.with_extension("broken");
        std::fs::write(&broken, "-----BEGIN PRIVATE KEY-----\nnot base64!\n").expect("write");
        let err = server_config(&files.cert, &broken).expect_err("malformed");
        let _ = std::fs::remove_file(&broken);
        assert!(
            matches!(&err, TlsConfigError::Pem { path, .. } if *path == broken),
            "{err}"
        );

        // A key that is not the certificate's.
        let other = Files::new();
        let err = server_config(&files.cert, &other.key).expect_err("mismatched");
        assert!(matches!(&err, TlsConfigError::Rejected { .. }), "{err}");
    }
}
