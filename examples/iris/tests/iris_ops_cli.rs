//! iris_http operated from outside, as nginx is: the binary is started, sent SIGTERM and
//! SIGHUP with `kill`, and asked over real sockets. `--check-config` good and bad; a drain
//! that answers the request in flight with `Connection: close` and exits 0, and one whose
//! deadline answers 503 with `Retry-After`; SIGHUP applying a changed predicate and a new
//! certificate while a connection stays open (and, with `--no-watch`, only on SIGHUP); a
//! broken file on SIGHUP keeping the last good configuration; `--access-log -`; a request's
//! trace in `--trace-file`, through every process it touched.
//!
//! Every read has a timeout and every wait a deadline, so a server bug fails a test instead
//! of hanging it; nothing asserts how long anything took.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use whirl::net::tls::rustls::client::Resumption;
use whirl::net::tls::rustls::pki_types::{CertificateDer, ServerName};
use whirl::net::tls::rustls::{self, ClientConfig, ClientConnection, RootCertStore, StreamOwned};

const IRIS: &str = env!("CARGO_BIN_EXE_iris_http");
const SHIPPED: &str = include_str!("../src/bin/iris_http/iris.toml");
/// How long anything may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(60);

fn root() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/iris_root").to_string()
}

/// A fresh directory for one test's files.
fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("iris-ops-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temp dir");
    dir
}

/// Runs iris_http to completion with `args` (for `--check-config`).
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(IRIS)
        .args(["--port", "0", "--root", &root()])
        .args(args)
        .output()
        .expect("iris_http runs");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// Lines of a child's stream, read on a thread of their own.
fn lines(stream: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// A running iris_http: its address, its stdout and stderr line by line. Killed on drop if
/// it is still running.
struct Iris {
    child: Child,
    addr: SocketAddr,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
    /// Lines read from stderr so far.
    said: Vec<String>,
}

impl Iris {
    fn start(args: &[&str]) -> Iris {
        let mut child = Command::new(IRIS)
            .args(["--port", "0", "--root", &root()])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("iris_http starts");
        let stdout = lines(child.stdout.take().expect("its stdout"));
        let stderr = lines(child.stderr.take().expect("its stderr"));
        let first = stdout.recv_timeout(DEADLINE).unwrap_or_default();
        let addr = first
            .rsplit("://")
            .next()
            .map(|rest| rest.trim_end_matches('/'))
            .and_then(|addr| addr.parse().ok())
            .unwrap_or_else(|| panic!("no address in {first:?}"));
        Iris {
            child,
            addr,
            stdout,
            stderr,
            said: Vec::new(),
        }
    }

    /// Sends `signal` (`TERM`, `HUP`) with `kill`.
    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args(["-s", signal, &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -s {signal}: {status}");
    }

    /// Waits until a line of stderr contains `text`; returns it.
    fn wait_for_stderr(&mut self, text: &str) -> String {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(line) = self.said.iter().find(|l| l.contains(text)) {
                return line.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) => self.said.push(line),
                Err(_) => panic!("no `{text}` on stderr; it said {:#?}", self.said),
            }
        }
    }

    /// Stderr's lines that arrived by now.
    fn stderr_now(&mut self) -> &[String] {
        while let Ok(line) = self.stderr.try_recv() {
            self.said.push(line);
        }
        &self.said
    }

    /// Waits until stdout has a line that satisfies `wanted`; returns it.
    fn wait_for_stdout(&self, wanted: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stdout.recv_timeout(left) {
                Ok(line) if wanted(&line) => return line,
                Ok(_) => {}
                Err(_) => panic!("stdout never had the line expected"),
            }
        }
    }

    /// Waits for the process to exit.
    fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(status) = self.child.try_wait().expect("its status") {
                return status;
            }
            assert!(Instant::now() < deadline, "iris_http did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Iris {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One response: status, headers (names lower-cased), body.
#[derive(Debug)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn closes(&self) -> bool {
        self.header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }
}

/// A keep-alive HTTP/1.1 connection, over TCP or TLS.
struct Conn<S> {
    stream: S,
    buf: Vec<u8>,
}

impl<S: Read + Write> Conn<S> {
    fn send(&mut self, path: &str) {
        let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n");
        self.stream
            .write_all(request.as_bytes())
            .expect("the request is sent");
    }

    fn fill(&mut self) -> usize {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.stream.read(&mut chunk).expect("read from the server");
        self.buf.extend_from_slice(&chunk[..n]);
        n
    }

    fn read(&mut self) -> Response {
        let end = loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            assert!(self.fill() > 0, "closed before a whole response head");
        };
        let head = String::from_utf8_lossy(&self.buf[..end]).into_owned();
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|line| line.split(' ').nth(1))
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("a status line in {head:?}"));
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let len: usize = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        while self.buf.len() < end + len {
            assert!(self.fill() > 0, "closed in a response body");
        }
        let body = String::from_utf8_lossy(&self.buf[end..end + len]).into_owned();
        self.buf.drain(..end + len);
        Response {
            status,
            headers,
            body,
        }
    }

    fn get(&mut self, path: &str) -> Response {
        self.send(path);
        self.read()
    }

    /// Asserts that the server closed the connection without sending anything more.
    fn assert_closed(&mut self) {
        assert!(self.buf.is_empty(), "bytes left: {:?}", self.buf);
        let mut rest = Vec::new();
        match self.stream.read_to_end(&mut rest) {
            Ok(_) => assert!(rest.is_empty(), "unexpected bytes: {rest:?}"),
            Err(e) => panic!("the connection ended with an error, not a close: {e}"),
        }
    }
}

fn connect(addr: SocketAddr) -> Conn<TcpStream> {
    let stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(DEADLINE))
        .expect("a read timeout");
    Conn {
        stream,
        buf: Vec::new(),
    }
}

/// A series' value in `/metrics`.
fn sample(metrics: &str, series: &str) -> f64 {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("no {series} in:\n{metrics}"))
}

#[test]
fn check_config_says_ok_and_exits_0_for_a_good_configuration() {
    let (code, stdout, stderr) = run(&["--check-config"]);
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert!(
        stdout.starts_with("iris_http: configuration OK: "),
        "{stdout}"
    );
    assert!(stdout.contains("iris.toml"), "{stdout}");
    assert_eq!(stdout.lines().count(), 1, "one line: {stdout}");
}

#[test]
fn check_config_refuses_what_a_start_refuses_with_exit_2() {
    let dir = temp_dir("check");
    let refusing = dir.join("refusing.toml");
    std::fs::write(
        &refusing,
        "[groups.sockets]\nthreads = 1\npredicate = { queue_length = { max = 0 } }\n",
    )
    .expect("written");
    let (code, _, stderr) = run(&["--check-config", "--config", &refusing.to_string_lossy()]);
    assert_eq!(code, Some(2), "stderr: {stderr}");
    let at = format!("{}:3:13:", refusing.display());
    assert!(stderr.contains(&at), "expected {at} in: {stderr}");

    let partial = dir.join("partial.toml");
    std::fs::write(&partial, "[groups.sockets]\nthreads = 1\n").expect("written");
    let (code, _, stderr) = run(&["--check-config", "--config", &partial.to_string_lossy()]);
    assert_eq!(code, Some(2), "stderr: {stderr}");
    assert!(stderr.contains("no group `http`"), "stderr: {stderr}");

    let made = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("a cert");
    let cert = dir.join("cert.pem");
    std::fs::write(&cert, made.cert.pem()).expect("written");
    let cert = cert.to_string_lossy().into_owned();
    let (code, _, stderr) = run(&["--check-config", "--tls-cert", &cert, "--tls-key", &cert]);
    assert_eq!(code, Some(2), "stderr: {stderr}");
    assert!(stderr.contains("no private key"), "stderr: {stderr}");

    let log = dir.join("no-such-dir").join("access.log");
    let (code, _, stderr) = run(&["--check-config", "--access-log", &log.to_string_lossy()]);
    assert_eq!(code, Some(2), "stderr: {stderr}");
    assert!(stderr.contains("no such directory"), "stderr: {stderr}");
    let _ = std::fs::remove_dir_all(dir);
}

/// Waits until the server counts `n` requests in flight (a `/metrics` request counts
/// itself).
fn wait_in_flight(addr: SocketAddr, n: f64) {
    let deadline = Instant::now() + DEADLINE;
    let mut probe = connect(addr);
    loop {
        let metrics = probe.get("/metrics").body;
        if sample(&metrics, "iris_http_requests_in_flight") >= n + 1.0 {
            return;
        }
        assert!(Instant::now() < deadline, "never {n} in flight:\n{metrics}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigterm_answers_the_request_in_flight_with_connection_close_and_exits_0() {
    let mut iris = Iris::start(&["--no-predicates", "--work-us", "500000"]);
    let mut slow = connect(iris.addr);
    slow.send("/resources/1");
    wait_in_flight(iris.addr, 1.0);
    iris.signal("TERM");
    let answered = slow.read();
    assert_eq!(answered.status, 200, "{}", answered.body);
    assert!(answered.body.contains("\"id\":1"), "{}", answered.body);
    assert!(answered.closes(), "{:?}", answered.headers);
    slow.assert_closed();
    let status = iris.wait_exit();
    assert!(status.success(), "{status}");
    iris.wait_for_stdout(|line| line.contains("drained in"));
}

#[test]
fn at_the_drain_timeout_the_request_still_in_flight_is_answered_503_with_retry_after() {
    let mut iris = Iris::start(&[
        "--no-predicates",
        "--work-us",
        "3000000",
        "--drain-timeout",
        "300ms",
    ]);
    let mut slow = connect(iris.addr);
    slow.send("/resources/1");
    wait_in_flight(iris.addr, 1.0);
    iris.signal("TERM");
    let refused = slow.read();
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert_eq!(refused.header("retry-after"), Some("2"));
    assert!(refused.closes(), "{:?}", refused.headers);
    slow.assert_closed();
    let status = iris.wait_exit();
    assert!(status.success(), "{status}");
    iris.wait_for_stderr("still open at the drain's deadline");
}

/// A self-signed certificate for `localhost` (PEM) and its DER, to compare with what a
/// handshake presents.
struct Cert {
    cert_pem: String,
    key_pem: String,
    der: CertificateDer<'static>,
}

fn cert() -> Cert {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("a cert");
    Cert {
        cert_pem: made.cert.pem(),
        key_pem: made.signing_key.serialize_pem(),
        der: made.cert.der().clone(),
    }
}

fn install(cert: &Cert, dir: &Path) {
    std::fs::write(dir.join("cert.pem"), &cert.cert_pem).expect("written");
    std::fs::write(dir.join("key.pem"), &cert.key_pem).expect("written");
}

type Tls = StreamOwned<ClientConnection, TcpStream>;

/// A TLS connection trusting `certs`, never resuming a session.
fn connect_tls(addr: SocketAddr, certs: &[&Cert]) -> Conn<Tls> {
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots.add(cert.der.clone()).expect("a root");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.resumption = Resumption::disabled();
    let name = ServerName::try_from("localhost").expect("a name");
    let conn = ClientConnection::new(Arc::new(config), name).expect("a client");
    let tcp = TcpStream::connect(addr).expect("connect");
    tcp.set_read_timeout(Some(DEADLINE)).expect("a timeout");
    Conn {
        stream: StreamOwned::new(conn, tcp),
        buf: Vec::new(),
    }
}

/// The certificate the server presented on `conn`.
fn presented(conn: &Conn<Tls>) -> CertificateDer<'static> {
    conn.stream.conn.peer_certificates().expect("a certificate")[0].clone()
}

#[test]
fn sighup_applies_a_changed_predicate_and_a_new_certificate_without_dropping_a_connection() {
    let dir = temp_dir("sighup");
    let (old, new) = (cert(), cert());
    install(&old, &dir);
    let config = dir.join("iris.toml");
    std::fs::write(&config, SHIPPED).expect("written");
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let mut iris = Iris::start(&[
        "--tls-cert",
        &path("cert.pem"),
        "--tls-key",
        &path("key.pem"),
        "--config",
        &path("iris.toml"),
        "--no-watch",
    ]);
    let mut open = connect_tls(iris.addr, &[&old, &new]);
    assert_eq!(open.get("/files/index.html").status, 200);
    assert_eq!(presented(&open), old.der);

    let edited = SHIPPED.replace(
        "cost_budget = { budget = 64 }",
        "cost_budget = { budget = 32 }",
    );
    assert_ne!(edited, SHIPPED);
    std::fs::write(&config, &edited).expect("edited");
    install(&new, &dir);
    // --no-watch: nothing applies until SIGHUP. (Absence over a short while: the watcher,
    // were it on, looks every second.)
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        !iris.stderr_now().iter().any(|l| l.contains("applied")),
        "applied without SIGHUP: {:?}",
        iris.said
    );
    iris.signal("HUP");
    iris.wait_for_stderr("applied groups.files.predicate.inner.all[1].budget");
    iris.wait_for_stderr("certificate reloaded");
    let summary = iris.wait_for_stderr("SIGHUP: configuration");
    assert!(
        summary.ends_with("configuration: ok, certificate: ok"),
        "{summary}"
    );
    let mut fresh = connect_tls(iris.addr, &[&old, &new]);
    assert_eq!(fresh.get("/files/index.html").status, 200);
    assert_eq!(
        presented(&fresh),
        new.der,
        "a new handshake, the new certificate"
    );
    let again = open.get("/files/index.html");
    assert_eq!(again.status, 200, "the open connection goes on");
    assert!(!again.closes());

    // A broken file: refused at its line, the last good configuration stays, still serving.
    std::fs::write(&config, "[groups.http]\nthreads = \"one\"\n").expect("broken");
    iris.signal("HUP");
    let error = iris.wait_for_stderr("the last good configuration stays");
    assert!(
        error.contains(&format!("{}:2:", config.display())),
        "{error}"
    );
    let metrics = open.get("/metrics").body;
    let reloads = |what: &str, result: &str| {
        let series = format!("iris_http_reloads_total{{what=\"{what}\",result=\"{result}\"}}");
        sample(&metrics, &series)
    };
    assert_eq!(reloads("config", "ok"), 1.0);
    assert_eq!(reloads("config", "failed"), 1.0);
    assert_eq!(reloads("certificate", "ok"), 2.0);
    assert_eq!(reloads("certificate", "failed"), 0.0);
    iris.signal("TERM");
    assert!(iris.wait_exit().success());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_access_log_goes_to_stdout_with_a_dash() {
    let iris = Iris::start(&["--access-log", "-"]);
    let mut conn = connect(iris.addr);
    assert_eq!(conn.get("/healthz?probe=1").status, 200);
    let line = iris.wait_for_stdout(|line| line.starts_with('{'));
    let value: serde_json::Value = serde_json::from_str(&line).expect("a JSON line");
    assert_eq!(value["path"], "/healthz");
    assert_eq!(value["query"], "probe=1");
    assert_eq!(value["status"], 200);
}

#[test]
fn a_request_is_one_trace_through_every_process_it_touched() {
    let dir = temp_dir("traces");
    let file = dir.join("traces.jsonl");
    let mut iris = Iris::start(&["--trace-file", file.to_str().expect("a UTF-8 path")]);
    let mut conn = connect(iris.addr);
    assert_eq!(conn.get("/files/index.html").status, 200);
    iris.signal("TERM");
    assert!(iris.wait_exit().success());
    // The exporter wrote every span before the server exited.
    let spans: Vec<serde_json::Value> = std::fs::read_to_string(&file)
        .expect("the trace file")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line per span"))
        .collect();
    let request = spans
        .iter()
        .find(|s| s["name"] == "http_request" && s["attributes"]["path"] == "/files/index.html")
        .unwrap_or_else(|| panic!("no span of the request in {spans:#?}"));
    assert!(request["parent_span_id"].is_null(), "a trace of its own");
    let trace: Vec<&serde_json::Value> = spans
        .iter()
        .filter(|s| s["trace_id"] == request["trace_id"])
        .collect();
    // Every span of the trace hangs off the request's, through its parents.
    let ids: Vec<&serde_json::Value> = trace.iter().map(|s| &s["span_id"]).collect();
    for span in &trace {
        assert!(
            span["span_id"] == request["span_id"] || ids.contains(&&span["parent_span_id"]),
            "a span outside the tree: {span:#}"
        );
    }
    let types: std::collections::BTreeSet<String> = trace
        .iter()
        .filter(|s| s["name"] == "message")
        .filter_map(|s| s["attributes"]["process_type"].as_str())
        .map(|t| t.rsplit("::").next().unwrap_or(t).to_owned())
        .collect();
    // The session's dispatcher, the file handler, the HTTP connection that orders the answer
    // and the socket that sends it.
    for process in [
        "Dispatcher",
        "FileHandler",
        "HttpConnection",
        "SocketConnection",
    ] {
        assert!(
            types.iter().any(|t| t.starts_with(process)),
            "no {process} in the request's trace: {types:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
