//! Integration tests over real loopback sockets: each test starts its own runtime and server
//! on `127.0.0.1:0` and talks to it with blocking `std::net::TcpStream`s through the tiny
//! client below. Every read has a timeout, so a server bug fails a test instead of hanging it;
//! waits for something to happen poll with a deadline; nothing asserts how long anything took.

mod basic;
mod cookies;
mod drain;
mod http2;
mod ops;
mod overload;
mod protocol;
mod refusals;
mod resilience;
mod sendfile;
mod sessions;
mod tls;

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use whirl::Runtime;
use whirl_config::{Assembly, Factories};

use crate::config::Users;
use crate::server::{Options, Server};

/// How long a client waits for the server before the test fails.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a test waits for something to happen before failing.
const DEADLINE: Duration = Duration::from_secs(20);

/// The demo site's file root.
fn demo_root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/iris_root"))
}

/// Options serving the demo root with the demo users (admin:secret, alice:wonderland).
fn demo_options() -> Options {
    Options::new(demo_root(), Users::default_demo())
}

/// The admission parameters of a test server: the shipped `iris.toml` with these thresholds.
#[derive(Clone, Copy, Debug)]
struct Tuning {
    /// Queue thresholds of the handler groups for anonymous, user and admin sessions; the
    /// dispatcher group's are four times these.
    thresholds: [u64; 3],
    /// Outstanding cost the file group accepts.
    file_budget: u64,
    /// Admission control on (the paper's design) or off (for comparison).
    predicates: bool,
    /// The handler groups' response-time target (what counts as overload), milliseconds.
    target_ms: u64,
    /// Completions per response-time measurement of the handler groups (`window`; the
    /// shipped file leaves SEDA's 100, or 1 s if fewer complete).
    window: Option<usize>,
}

impl Default for Tuning {
    /// The shipped file's values.
    fn default() -> Self {
        Tuning {
            thresholds: [16, 64, 1024],
            file_budget: 64,
            predicates: true,
            target_ms: 50,
            window: None,
        }
    }
}

/// The shipped `iris.toml` with `tuning`'s values in place of its own.
fn assembly(tuning: Tuning) -> Assembly {
    let mut text = crate::BUILT_IN.to_string();
    let shipped = Tuning::default();
    let levels = |[anonymous, user, admin]: [u64; 3], scale: u64| {
        format!(
            "max = {}, at_least = [[1, {}], [2, {}]]",
            anonymous * scale,
            user * scale,
            admin * scale
        )
    };
    let mut replace = |from: String, to: String| {
        assert!(text.contains(&from), "iris.toml has no `{from}`");
        text = text.replace(&from, &to);
    };
    replace(levels(shipped.thresholds, 4), levels(tuning.thresholds, 4));
    replace(levels(shipped.thresholds, 1), levels(tuning.thresholds, 1));
    replace(
        format!("cost_budget = {{ budget = {} }}", shipped.file_budget),
        format!("cost_budget = {{ budget = {} }}", tuning.file_budget),
    );
    let window = tuning
        .window
        .map_or_else(String::new, |n| format!(", window = {n}"));
    replace(
        format!("target = \"{}ms\"", shipped.target_ms),
        format!("target = \"{}ms\"{window}", tuning.target_ms),
    );
    let assembly = Assembly::parse(&text, "iris.toml").expect("the shipped file parses");
    match tuning.predicates {
        true => assembly,
        false => assembly.without_predicates(),
    }
}

/// A running server and its runtime.
struct TestServer {
    rt: Runtime,
    server: Server,
    /// Live processes once the server had started and gone idle.
    baseline: usize,
}

impl TestServer {
    /// A server on the shipped `iris.toml`.
    fn start(options: Options) -> TestServer {
        TestServer::start_tuned(options, Tuning::default())
    }

    fn start_tuned(options: Options, tuning: Tuning) -> TestServer {
        TestServer::start_assembled(options, assembly(tuning))
    }

    /// A server on `assembly`'s groups.
    fn start_assembled(options: Options, assembly: Assembly) -> TestServer {
        let rt = assembly.runtime().expect("the runtime");
        assembly
            .build(&rt, &Factories::new())
            .expect("the groups build");
        let bind: SocketAddr = "127.0.0.1:0".parse().expect("a socket address");
        let server = Server::start(&rt, bind, options).expect("the server starts");
        rt.block_until_idle();
        let baseline = rt.live_processes();
        TestServer {
            rt,
            server,
            baseline,
        }
    }

    fn addr(&self) -> SocketAddr {
        self.server.addr
    }

    fn connect(&self) -> Client {
        Client::connect(self.addr())
    }

    /// Sockets registered with the poller (1 when only the listener is).
    fn registrations(&self) -> usize {
        self.rt.net().expect("the poller").registrations()
    }

    /// Waits until every connection's processes have terminated and only the listener is
    /// registered with the poller.
    ///
    /// A connection the client has opened may still wait in the kernel's accept queue, with
    /// no process for it yet, so the live count alone could pass too early: first one more
    /// request is answered, on a connection accepted after all earlier ones.
    fn wait_for_baseline(&self) {
        self.sync_with_acceptor();
        let deadline = Instant::now() + DEADLINE;
        loop {
            let (live, registered) = (self.rt.live_processes(), self.registrations());
            if live == self.baseline && registered == 1 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "not back to baseline: {live} live processes (baseline {}), {registered} \
                 sockets registered (baseline 1); per group (live, queued): {:?}",
                self.baseline,
                self.rt
                    .stats()
                    .groups
                    .iter()
                    .map(|g| (&g.name, g.counts.live_processes(), g.counts.queued()))
                    .collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Opens a connection and has one request answered (any status): the acceptor takes
    /// connections in order, so every connection opened before has been accepted.
    fn sync_with_acceptor(&self) {
        let mut probe = self.connect();
        probe.send(b"GET /resources/1 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        let _ = probe.try_read_response();
    }

    fn stop(self) {
        self.server.stop_accepting();
        self.rt.shutdown_timeout(Duration::from_secs(5));
    }
}

/// Polls `done` until it holds; panics after [`DEADLINE`].
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A directory under the system temp dir, removed on drop.
struct TempRoot {
    path: PathBuf,
}

impl TempRoot {
    fn new(tag: &str) -> TempRoot {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let name = format!(
            "iris-http-test-{tag}-{}-{}-{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&path).expect("create the temp root");
        TempRoot { path }
    }

    fn write(&self, name: &str, bytes: &[u8]) {
        std::fs::write(self.path.join(name), bytes).expect("write a test file");
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// One parsed response.
#[derive(Debug, Clone)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    /// The first value of header `name` (case-insensitive).
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The session token a `Set-Cookie: session=...` header sets, if any.
    fn session_cookie(&self) -> Option<String> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("set-cookie"))
            .filter_map(|(_, v)| v.strip_prefix("session="))
            .map(|rest| rest.split(';').next().unwrap_or_default().to_owned())
            .next()
    }

    fn closes(&self) -> bool {
        self.header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A blocking HTTP/1.1 client over one connection: writes raw bytes, reads responses
/// (status line, headers, `Content-Length` body; no body for 1xx, 204 and 304), keeping
/// bytes read past one response for the next (pipelining). Over a plain `TcpStream` unless
/// given another stream (a TLS one: `tls.rs`).
struct Client<S = TcpStream> {
    stream: S,
    buf: Vec<u8>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).expect("connect to the server");
        stream.set_read_timeout(Some(IO_TIMEOUT)).expect("timeout");
        stream.set_write_timeout(Some(IO_TIMEOUT)).expect("timeout");
        Client {
            stream,
            buf: Vec::new(),
        }
    }

    fn shutdown_write(&self) {
        self.stream.shutdown(Shutdown::Write).expect("half-close");
    }
}

impl<S: Read + Write> Client<S> {
    /// A client over `stream` (already connected).
    fn over(stream: S) -> Client<S> {
        Client {
            stream,
            buf: Vec::new(),
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write to the server");
    }

    /// Reads more bytes into the buffer; `Ok(0)` at end of stream.
    fn fill(&mut self) -> io::Result<usize> {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.stream.read(&mut chunk)?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    /// Reads one response.
    fn try_read_response(&mut self) -> io::Result<Response> {
        self.try_read(false)
    }

    /// Reads the answer to a HEAD: a head whose `Content-Length` has no body behind it.
    fn read_head_response(&mut self) -> Response {
        self.try_read(true).expect("a response to HEAD")
    }

    /// Reads one response, without its body if `head_only`.
    fn try_read(&mut self, head_only: bool) -> io::Result<Response> {
        let head_end = loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            if self.fill()? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "connection closed before a whole response head ({} bytes)",
                        self.buf.len()
                    ),
                ));
            }
        };
        let head = String::from_utf8(self.buf[..head_end].to_vec())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_owned());
        let mut parts = status_line.splitn(3, ' ');
        if parts.next() != Some("HTTP/1.1") {
            return Err(bad(&format!("bad status line {status_line:?}")));
        }
        let status = parts
            .next()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad(&format!("bad status line {status_line:?}")))?;
        let headers: Vec<(String, String)> = lines
            .filter(|l| !l.is_empty())
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
            .collect();
        let length = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .map(|(_, v)| v.parse::<usize>());
        let len = match (status, length) {
            // RFC 9110 §6.4.1: these have no body, whatever the headers say.
            (100..=199 | 204 | 304, _) => 0,
            _ if head_only => 0,
            (_, Some(Ok(len))) => len,
            _ => return Err(bad(&format!("no Content-Length in {head:?}"))),
        };
        while self.buf.len() < head_end + len {
            if self.fill()? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "connection closed in a response body",
                ));
            }
        }
        let body = self.buf[head_end..head_end + len].to_vec();
        self.buf.drain(..head_end + len);
        Ok(Response {
            status,
            headers,
            body,
        })
    }

    fn read_response(&mut self) -> Response {
        self.try_read_response().expect("a response")
    }

    /// Sends `raw` and reads one response.
    fn exchange(&mut self, raw: &[u8]) -> Response {
        self.send(raw);
        self.read_response()
    }

    fn get(&mut self, path: &str, cookie: Option<&str>) -> Response {
        self.exchange(get(path, cookie).as_bytes())
    }

    /// Whether the server has closed the connection: nothing more to read and end of
    /// stream (or a reset) within the read timeout. Panics on a timeout or on unexpected
    /// bytes.
    fn assert_closed_by_server(&mut self) {
        assert!(
            self.buf.is_empty(),
            "unexpected bytes before the close: {:?}",
            String::from_utf8_lossy(&self.buf)
        );
        match self.fill() {
            Ok(0) => {}
            Ok(_) => panic!(
                "unexpected bytes instead of a close: {:?}",
                String::from_utf8_lossy(&self.buf)
            ),
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {}
            Err(e) => panic!("the server did not close the connection: {e}"),
        }
    }
}

/// A keep-alive HTTP/1.1 GET, with the session cookie if given.
fn get(path: &str, cookie: Option<&str>) -> String {
    let cookie = cookie
        .map(|c| format!("Cookie: session={c}\r\n"))
        .unwrap_or_default();
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{cookie}\r\n")
}

/// A form POST of `body` to `path`.
fn post_form(path: &str, body: &str, cookie: Option<&str>) -> String {
    let cookie = cookie
        .map(|c| format!("Cookie: session={c}\r\n"))
        .unwrap_or_default();
    format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\n{cookie}\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Logs in as `user` on a new connection; returns the session token.
fn login(addr: SocketAddr, user: &str, password: &str) -> String {
    let mut client = Client::connect(addr);
    let response = client.exchange(
        post_form("/login", &format!("user={user}&password={password}"), None).as_bytes(),
    );
    assert_eq!(response.status, 200, "login as {user}: {}", response.text());
    response
        .session_cookie()
        .expect("a login sets the session cookie")
}
