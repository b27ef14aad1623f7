//! HTTPS: a self-signed certificate made with rcgen, a rustls client. Keep-alive over TLS, a
//! plaintext client on the TLS port, large files (sent with `sendfile(2)` in plain HTTP) read
//! and encrypted byte-exact, the handshake timeout (a stalled handshake is closed, a
//! completed one is not), a handshake flood shed by the sockets group's predicate
//! while a legitimate client is served, the command line's TLS errors, and what HTTPS adds
//! to answers: `Secure` cookies and, when configured, HSTS.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;

use whirl::net::tls::rustls::pki_types::{CertificateDer, ServerName};
use whirl::net::tls::rustls::{self, ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use whirl::net::tls::{self as whirl_tls, TlsConfig};
use whirl_config::Assembly;

use super::{demo_options, wait_until, Client, Options, TempRoot, TestServer, Users, IO_TIMEOUT};
use crate::ops::certs::ReloadableCert;
use crate::ops::metrics::{Outcome, ReloadLabels, Reloadable};
use crate::ops::reload::Reload;

/// A self-signed certificate for `localhost` in PEM files, and a client configuration that
/// trusts it.
struct Certificate {
    dir: TempRoot,
    der: CertificateDer<'static>,
}

impl Certificate {
    fn new() -> Certificate {
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
            .expect("a self-signed certificate");
        let dir = TempRoot::new("tls");
        dir.write("cert.pem", made.cert.pem().as_bytes());
        dir.write("key.pem", made.signing_key.serialize_pem().as_bytes());
        Certificate {
            dir,
            der: made.cert.der().clone(),
        }
    }

    fn cert(&self) -> PathBuf {
        self.dir.path().join("cert.pem")
    }

    fn key(&self) -> PathBuf {
        self.dir.path().join("key.pem")
    }

    /// The server's configuration, as `--tls-cert`/`--tls-key` build it.
    fn server(&self) -> TlsConfig {
        whirl_tls::server_config(&self.cert(), &self.key()).expect("a server configuration")
    }

    fn client_config(&self) -> Arc<ClientConfig> {
        client_config_trusting(&[self])
    }

    /// A TLS client connection to `addr` (the handshake happens on first use).
    fn connect(&self, addr: SocketAddr) -> Client<StreamOwned<ClientConnection, TcpStream>> {
        connect_with(addr, self.client_config())
    }
}

/// A client configuration that trusts each of `certificates`, and never resumes a session
/// (each connection's handshake shows the server's certificate of the moment).
fn client_config_trusting(certificates: &[&Certificate]) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for certificate in certificates {
        roots.add(certificate.der.clone()).expect("a trusted root");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config.resumption = rustls::client::Resumption::disabled();
    Arc::new(config)
}

/// A TLS client connection to `addr` with `config` (the handshake happens on first use).
fn connect_with(
    addr: SocketAddr,
    config: Arc<ClientConfig>,
) -> Client<StreamOwned<ClientConnection, TcpStream>> {
    let tcp = TcpStream::connect(addr).expect("connect to the server");
    tcp.set_read_timeout(Some(IO_TIMEOUT)).expect("timeout");
    tcp.set_write_timeout(Some(IO_TIMEOUT)).expect("timeout");
    let name = ServerName::try_from("localhost").expect("a server name");
    let conn = ClientConnection::new(config, name).expect("a client");
    Client::over(StreamOwned::new(conn, tcp))
}

/// Reads until the server closes the connection (a reset counts as closed), failing on any
/// byte received or any other error; `when` completes "the server did not close ...".
fn expect_closed_silently(reader: &mut impl Read, when: &str) {
    let mut rest = Vec::new();
    match reader.read_to_end(&mut rest) {
        Ok(_) => assert!(rest.is_empty(), "unexpected bytes: {rest:?}"),
        Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("the server did not close {when}: {e}"),
    }
}

/// A server on the shipped `iris.toml`, serving HTTPS.
fn https_server(certificate: &Certificate) -> TestServer {
    let mut options = demo_options();
    options.tls = Some(certificate.server());
    TestServer::start(options)
}

#[test]
fn https_serves_two_requests_on_one_keep_alive_connection() {
    let certificate = Certificate::new();
    let server = https_server(&certificate);
    let mut client = certificate.connect(server.addr());
    for _ in 0..2 {
        let response = client.get("/files/index.html", None);
        assert_eq!(response.status, 200, "{}", response.text());
        assert!(!response.closes());
        assert!(response.text().contains("<html"), "{}", response.text());
    }
    assert_eq!(client.stream.conn.alpn_protocol(), Some(&b"http/1.1"[..]));
    // The client's close_notify is an end of stream: the server closes too.
    client.stream.conn.send_close_notify();
    client.stream.flush().expect("the close_notify goes out");
    expect_closed_silently(&mut client.stream, "after close_notify");
    server.wait_for_baseline();
    server.stop();
}

/// Over HTTPS every cookie is `Secure` (a session's and a login's), and with HSTS
/// configured every answer carries `Strict-Transport-Security`; without it, none does.
#[test]
fn https_cookies_are_secure_and_hsts_is_sent_when_configured() {
    let certificate = Certificate::new();
    let mut options = demo_options();
    options.tls = Some(certificate.server());
    options.hsts = Some(std::time::Duration::from_secs(31_536_000));
    let server = TestServer::start(options);
    let mut client = certificate.connect(server.addr());
    let secure = |response: &super::Response| {
        let cookie = response.header("set-cookie").expect("a cookie");
        let attributes: Vec<String> = cookie
            .split(';')
            .skip(1)
            .map(|a| a.trim().to_ascii_lowercase())
            .collect();
        assert!(attributes.iter().any(|a| a == "secure"), "{cookie}");
        assert!(attributes.iter().any(|a| a == "httponly"), "{cookie}");
        assert!(attributes.iter().any(|a| a == "samesite=lax"), "{cookie}");
        assert_eq!(response.header("cache-control"), Some("private"));
    };
    let started = client.get("/resources/1", None);
    assert_eq!(started.status, 200);
    secure(&started);
    assert_eq!(
        started.header("strict-transport-security"),
        Some("max-age=31536000")
    );
    let file = client.get("/files/index.html", None);
    assert_eq!(file.status, 200);
    assert_eq!(file.header("set-cookie"), None);
    assert_eq!(
        file.header("strict-transport-security"),
        Some("max-age=31536000")
    );
    let refused = client.get("/nope", None);
    assert_eq!(refused.status, 404);
    assert!(refused.header("strict-transport-security").is_some());
    let login =
        client.exchange(super::post_form("/login", "user=admin&password=secret", None).as_bytes());
    assert_eq!(login.status, 200);
    secure(&login);
    drop(client);
    server.wait_for_baseline();
    server.stop();

    // No HSTS unless configured.
    let server = https_server(&certificate);
    let mut client = certificate.connect(server.addr());
    let response = client.get("/resources/1", None);
    secure(&response);
    assert_eq!(response.header("strict-transport-security"), None);
    drop(client);
    server.wait_for_baseline();
    server.stop();
}

/// Bodies the plain server sends with `sendfile(2)` are read and encrypted by the socket
/// process on a TLS connection: byte-exact, whole and as a range, twice on one connection.
#[test]
fn https_serves_large_files_byte_exact() {
    let certificate = Certificate::new();
    let root = TempRoot::new("tls-large");
    let bytes: Vec<u8> = (0..1024 * 1024 + 4321).map(|i| (i % 251) as u8).collect();
    root.write("big.bin", &bytes);
    let mut options = Options::new(root.path().to_path_buf(), Users::default_demo());
    options.tls = Some(certificate.server());
    let server = TestServer::start(options);
    let mut client = certificate.connect(server.addr());
    for _ in 0..2 {
        let response = client.get("/files/big.bin", None);
        assert_eq!(response.status, 200);
        assert!(response.body == bytes, "the body differs from the file");
    }
    let ranged = "GET /files/big.bin HTTP/1.1\r\nHost: localhost\r\nRange: bytes=70000-\r\n\r\n";
    client.stream.write_all(ranged.as_bytes()).expect("send");
    let response = client.read_response();
    assert_eq!(response.status, 206);
    assert!(
        response.body == bytes[70_000..],
        "the range differs from the file"
    );
    drop(client);
    server.wait_for_baseline();
    server.stop();
}

/// A client configuration that trusts `certificate` and offers `alpn`.
fn client_offering(certificate: &Certificate, alpn: &[&[u8]]) -> Arc<ClientConfig> {
    let mut config = (*certificate.client_config()).clone();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

#[test]
fn https_offers_h2_by_alpn_first_and_http1_to_clients_that_ask_for_it() {
    let certificate = Certificate::new();
    let mut options = demo_options();
    let (config, _) = ReloadableCert::load(&certificate.cert(), &certificate.key(), true)
        .expect("the certificate loads");
    options.tls = Some(config);
    let server = TestServer::start(options);

    // A browser offers both: h2 is chosen, and the server's first frame is its SETTINGS.
    let offered: &[&[u8]] = &[b"http/1.1", b"h2"];
    let mut h2 = connect_with(server.addr(), client_offering(&certificate, offered));
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    out.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]); // an empty SETTINGS
    h2.stream.write_all(&out).expect("the preface");
    let mut header = [0; 9];
    h2.stream
        .read_exact(&mut header)
        .expect("the server's first frame");
    assert_eq!(h2.stream.conn.alpn_protocol(), Some(&b"h2"[..]));
    assert_eq!(
        header[3], 4,
        "SETTINGS first, as RFC 9113 §3.4 requires: {header:?}"
    );
    assert_eq!(header[4] & 1, 0, "not an ACK");

    // A client that asks for HTTP/1.1 only, or offers nothing, is served HTTP/1.1.
    for alpn in [&[&b"http/1.1"[..]][..], &[]] {
        let mut client = connect_with(server.addr(), client_offering(&certificate, alpn));
        let response = client.get("/files/index.html", None);
        assert_eq!(response.status, 200, "{}", response.text());
        let agreed = alpn.first().copied();
        assert_eq!(client.stream.conn.alpn_protocol(), agreed);
    }
    server.stop();
}

#[test]
fn plaintext_http_to_the_tls_port_is_closed_cleanly() {
    let certificate = Certificate::new();
    let server = https_server(&certificate);
    let mut plain = server.connect();
    plain.send(b"GET /files/index.html HTTP/1.1\r\nHost: localhost\r\n\r\n");
    // What comes back is a TLS alert record (content type 21), then the end of the stream:
    // never an HTTP response, never a hang.
    let mut answer = Vec::new();
    match plain.stream.read_to_end(&mut answer) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("the server did not close the plaintext connection: {e}"),
    }
    assert!(!answer.starts_with(b"HTTP/"), "{answer:?}");
    if let Some(&content_type) = answer.first() {
        assert_eq!(content_type, 21, "a TLS alert: {answer:?}");
    }
    // The server is unharmed: TLS clients are served, nothing is left behind.
    let mut client = certificate.connect(server.addr());
    assert_eq!(client.get("/files/index.html", None).status, 200);
    drop(client);
    server.wait_for_baseline();
    server.stop();
}

/// The handshake timeout of the two tests below (far under `HttpConnection`'s idle timeout).
const SHORT_HANDSHAKE: std::time::Duration = std::time::Duration::from_millis(200);

/// A server on the shipped `iris.toml` whose handshakes may take `SHORT_HANDSHAKE`.
fn impatient_server(certificate: &Certificate) -> TestServer {
    let mut options = demo_options();
    options.tls = Some(certificate.server().with_handshake_timeout(SHORT_HANDSHAKE));
    TestServer::start(options)
}

#[test]
fn a_stalled_handshake_is_closed_by_the_handshake_timeout() {
    let certificate = Certificate::new();
    let server = impatient_server(&certificate);
    // Half a real ClientHello, then nothing: the server waits for the rest until its
    // handshake timeout closes the connection (long before the HTTP idle timeout).
    let name = ServerName::try_from("localhost").expect("a server name");
    let mut conn = ClientConnection::new(certificate.client_config(), name).expect("a client");
    let mut hello = Vec::new();
    while conn.wants_write() {
        conn.write_tls(&mut hello).expect("into a Vec");
    }
    let mut tcp = TcpStream::connect(server.addr()).expect("connect to the server");
    tcp.set_read_timeout(Some(IO_TIMEOUT)).expect("timeout");
    tcp.write_all(&hello[..hello.len() / 2])
        .expect("half a ClientHello");
    expect_closed_silently(
        &mut tcp,
        &format!("for the stalled handshake within {IO_TIMEOUT:?}"),
    );
    server.wait_for_baseline();
    server.stop();
}

#[test]
fn a_completed_handshake_outlives_the_handshake_timeout() {
    let certificate = Certificate::new();
    let server = impatient_server(&certificate);
    let mut client = certificate.connect(server.addr());
    assert_eq!(client.get("/files/index.html", None).status, 200);
    // Idle for several handshake timeouts: the deadline was disarmed by the handshake.
    std::thread::sleep(SHORT_HANDSHAKE * 5);
    let response = client.get("/files/index.html", None);
    assert_eq!(response.status, 200, "{}", response.text());
    assert!(!response.closes());
    drop(client);
    server.wait_for_baseline();
    server.stop();
}

/// What became of a connection that sent a ClientHello and then nothing more.
#[derive(Debug, PartialEq, Eq)]
enum Fate {
    /// The server answered with handshake records: its handshake was admitted.
    Admitted,
    /// The server closed it without a byte: shed.
    Shed,
}

/// Opens a connection, sends a real ClientHello, and stalls: returns the open stream (kept
/// open by the caller) and what the server did.
fn stalled_hello(certificate: &Certificate, addr: SocketAddr) -> (TcpStream, Fate) {
    let mut tcp = TcpStream::connect(addr).expect("connect to the server");
    tcp.set_read_timeout(Some(IO_TIMEOUT)).expect("timeout");
    let name = ServerName::try_from("localhost").expect("a server name");
    let mut conn = ClientConnection::new(certificate.client_config(), name).expect("a client");
    let mut hello = Vec::new();
    while conn.wants_write() {
        conn.write_tls(&mut hello).expect("into a Vec");
    }
    let closed = |e: &io::Error| {
        matches!(
            e.kind(),
            io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
        )
    };
    if let Err(e) = tcp.write_all(&hello) {
        // Closed by the server before the hello was even written.
        assert!(closed(&e), "writing the ClientHello: {e}");
        return (tcp, Fate::Shed);
    }
    let mut first = [0u8; 1];
    let fate = match tcp.read(&mut first) {
        Ok(0) => Fate::Shed,
        Ok(_) => {
            assert_eq!(first[0], 22, "a TLS handshake record");
            Fate::Admitted
        }
        Err(e) if closed(&e) => Fate::Shed,
        Err(e) => panic!("the server neither answered nor closed a ClientHello: {e}"),
    };
    (tcp, fate)
}

/// The shipped `iris.toml` with the sockets group's predicate replaced by a token bucket
/// admitting `depth` handshakes at once and then one a second.
fn handshake_bucket(depth: u64) -> Assembly {
    let shipped = "[groups.sockets]\npredicate = { overload = { target = \"1s\", inner = { queue_length = { max = 256 } } } }\n";
    let bucket = format!(
        "[groups.sockets]\npredicate = {{ token_bucket = {{ rate = 1.0, depth = {depth} }} }}\n"
    );
    assert!(
        crate::BUILT_IN.contains(shipped),
        "iris.toml's sockets group changed"
    );
    let text = crate::BUILT_IN.replace(shipped, &bucket);
    Assembly::parse(&text, "iris.toml").expect("the file parses")
}

/// A burst of new TLS connections, more than the sockets group's queue limit (256) at once,
/// against the shipped configuration: every handshake is queued and answered, none refused,
/// since the group keeps its response-time target (the limit applies only while it misses
/// it). Issue 37: the shipped file used to refuse what did not fit in the queue.
#[test]
fn a_burst_of_handshakes_beyond_the_queue_limit_is_served() {
    const BURST: usize = 600;
    let certificate = Certificate::new();
    let mut options = demo_options();
    options.tls = Some(certificate.server());
    let server = TestServer::start(options);
    let addr = server.addr();
    let name = ServerName::try_from("localhost").expect("a server name");
    let mut hello = Vec::new();
    let mut conn = ClientConnection::new(certificate.client_config(), name).expect("a client");
    while conn.wants_write() {
        conn.write_tls(&mut hello).expect("into a Vec");
    }
    // Every connection is opened first, then every ClientHello sent in one go (far faster
    // than the server can answer them), before any answer is read: the handshakes are all
    // pending at once.
    let mut burst: Vec<TcpStream> = (0..BURST)
        .map(|_| {
            let tcp = TcpStream::connect(addr).expect("connect to the server");
            tcp.set_read_timeout(Some(IO_TIMEOUT)).expect("timeout");
            tcp
        })
        .collect();
    for tcp in &mut burst {
        tcp.write_all(&hello).expect("the ClientHello is sent");
    }
    let mut shed = 0;
    for tcp in &mut burst {
        let mut first = [0u8; 1];
        match tcp.read(&mut first) {
            Ok(1) => assert_eq!(first[0], 22, "a TLS handshake record"),
            Ok(_) => shed += 1,
            Err(e) => panic!("the server neither answered nor closed a ClientHello: {e}"),
        }
    }
    assert_eq!(
        shed, 0,
        "{shed} of a burst of {BURST} handshakes were refused"
    );
    let sockets = server
        .rt
        .stats()
        .groups
        .into_iter()
        .find(|g| g.name == "sockets")
        .expect("the sockets group");
    assert_eq!(sockets.counts.rejected, 0);
    drop(burst);
    server.stop();
}

#[test]
fn a_handshake_flood_is_shed_while_a_legitimate_client_is_served() {
    const FLOOD: usize = 100;
    const DEPTH: u64 = 4;
    let certificate = Certificate::new();
    let mut options = demo_options();
    options.tls = Some(certificate.server());
    let server = TestServer::start_assembled(options, handshake_bucket(DEPTH));
    let addr = server.addr();

    // The flood: ClientHellos that never go on, held open.
    let mut held = Vec::new();
    let mut shed = 0;
    for _ in 0..FLOOD {
        let (stream, fate) = stalled_hello(&certificate, addr);
        shed += usize::from(fate == Fate::Shed);
        held.push(stream);
    }
    let admitted = FLOOD - shed;
    assert!(
        shed > 0,
        "a flood of {FLOOD} handshakes was not shed at all"
    );
    assert!(
        admitted > 0,
        "the bucket admits its first {DEPTH} handshakes"
    );

    // A legitimate client, retrying as browsers do when a connection is closed on them,
    // is served while the flood's connections are still open.
    let mut refused = 0;
    let response = loop {
        let mut client = certificate.connect(addr);
        let request = super::get("/files/index.html", None);
        // Writing runs the handshake first: a refused one fails here.
        let attempt = client
            .stream
            .write_all(request.as_bytes())
            .and_then(|()| client.try_read_response());
        match attempt {
            Ok(response) => break response,
            Err(_) => refused += 1,
        }
        assert!(refused < 1000, "the legitimate client was never served");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(response.status, 200, "{}", response.text());

    // Every refusal was counted by the sockets group, against the client address's principal,
    // whose handshakes (the admitted ones) are handling time in that group.
    let principal = whirl_tls::peer_principal(addr).id();
    let sockets = |rt: &whirl::Runtime| {
        rt.stats()
            .groups
            .into_iter()
            .find(|g| g.name == "sockets")
            .expect("the sockets group")
    };
    let stats = sockets(&server.rt);
    assert_eq!(stats.counts.rejected, (shed + refused) as u64);
    let mine = stats
        .principals
        .iter()
        .find(|p| p.id == principal)
        .expect("the client address's principal in the sockets group");
    assert_eq!(mine.rejected, (shed + refused) as u64);
    wait_until("the handshakes' turns counted for the principal", || {
        let stats = sockets(&server.rt);
        let p = stats.principals.iter().find(|p| p.id == principal);
        p.is_some_and(|p| p.handled > 0 && !p.handling_time.is_zero())
    });
    drop(held);
    server.stop();
}

#[test]
fn the_command_line_names_a_bad_key_file() {
    let certificate = Certificate::new();
    let root = super::demo_root();
    let parse = |extra: &[&std::ffi::OsStr]| {
        let mut argv: Vec<&std::ffi::OsStr> = vec!["iris_http".as_ref(), "--root".as_ref()];
        argv.push(root.as_os_str());
        argv.extend_from_slice(extra);
        <crate::cli::Cli as clap::Parser>::try_parse_from(argv)
    };
    // The certificate given as the key: no private key in it.
    let cli = parse(&[
        "--tls-cert".as_ref(),
        certificate.cert().as_os_str(),
        "--tls-key".as_ref(),
        certificate.cert().as_os_str(),
    ])
    .expect("the arguments parse");
    let Err(problem) = crate::cli::args(cli) else {
        panic!("a certificate file accepted as a key");
    };
    assert!(
        problem.contains(&certificate.cert().display().to_string()),
        "{problem}"
    );
    assert!(problem.contains("no private key"), "{problem}");
    // One without the other is a usage error (clap's exit status 2).
    let error = parse(&["--tls-cert".as_ref(), certificate.cert().as_os_str()])
        .expect_err("--tls-cert alone");
    assert_eq!(error.exit_code(), 2);
    // Both good: HTTPS options.
    let cli = parse(&[
        "--tls-cert".as_ref(),
        certificate.cert().as_os_str(),
        "--tls-key".as_ref(),
        certificate.key().as_os_str(),
    ])
    .expect("the arguments parse");
    let args = crate::cli::args(cli).unwrap_or_else(|e| panic!("{e}"));
    assert!(args.options.tls.is_some());
}

/// SIGHUP's certificate reload (`ops::certs`, `ops::reload`): new handshakes get the new
/// certificate, a connection established before keeps working, and a bad file changes
/// nothing but says why and is counted.
#[test]
fn a_reloaded_certificate_serves_new_handshakes_and_open_connections_keep_theirs() {
    let (old, new) = (Certificate::new(), Certificate::new());
    let live = TempRoot::new("tls-reload");
    let install = |certificate: &Certificate| {
        let copy = |from: PathBuf, to: &str| {
            std::fs::copy(from, live.path().join(to)).expect("the file is copied");
        };
        copy(certificate.cert(), "cert.pem");
        copy(certificate.key(), "key.pem");
    };
    install(&old);
    let (cert, key) = (live.path().join("cert.pem"), live.path().join("key.pem"));
    let (config, reloadable) =
        ReloadableCert::load(&cert, &key, true).expect("the first pair loads");
    let mut options = demo_options();
    options.tls = Some(config);
    let server = TestServer::start(options);
    let trusting_both = client_config_trusting(&[&old, &new]);
    let served_by = |client: &mut Client<StreamOwned<ClientConnection, TcpStream>>| {
        assert_eq!(client.get("/files/index.html", None).status, 200);
        let chain = client
            .stream
            .conn
            .peer_certificates()
            .expect("a certificate");
        chain[0].clone()
    };
    let mut established = connect_with(server.addr(), Arc::clone(&trusting_both));
    assert_eq!(served_by(&mut established), old.der);

    install(&new);
    let reload = Reload {
        config: None,
        cert: Some(Arc::clone(&reloadable)),
        metrics: server.server.ops().metrics.clone(),
    };
    let outcomes = reload.run();
    assert!(matches!(outcomes.cert, Some(Ok(()))), "{outcomes:?}");
    let mut fresh = connect_with(server.addr(), Arc::clone(&trusting_both));
    assert_eq!(
        served_by(&mut fresh),
        new.der,
        "a new handshake, the new certificate"
    );
    assert_eq!(
        served_by(&mut established),
        old.der,
        "the connection established before goes on, on its own handshake"
    );

    // A key file without a key: refused, the last good pair stays.
    std::fs::write(&key, b"not a key\n").expect("written");
    let outcomes = reload.run();
    let Some(Err(problem)) = &outcomes.cert else {
        panic!("a bad key file was accepted: {outcomes:?}");
    };
    assert!(problem.contains(&key.display().to_string()), "{problem}");
    assert_eq!(
        outcomes.summary(),
        "configuration: nothing to reload, certificate: failed"
    );
    let mut after = connect_with(server.addr(), Arc::clone(&trusting_both));
    assert_eq!(served_by(&mut after), new.der);
    let reloads = |result| {
        let labels = ReloadLabels {
            what: Reloadable::Certificate,
            result,
        };
        server
            .server
            .ops()
            .metrics
            .reloads
            .get_or_create(&labels)
            .get()
    };
    assert_eq!((reloads(Outcome::Ok), reloads(Outcome::Failed)), (1, 1));
    drop((established, fresh, after));
    server.wait_for_baseline();
    server.stop();
}
