//! The web console over real sockets: the page and its assets, the snapshot's shape, live
//! events, Prometheus text, panels, the token rule, and hostile requests answered with an
//! error and never a panic or a hang.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use whirl::console::{Console, ConsoleError, Panel};
use whirl::prelude::*;
use whirl::supervision::ChildSpec;

const TIMEOUT: Duration = Duration::from_secs(10);

/// Sends `request` (raw bytes), reads until the server closes the connection or `until`
/// holds for what was read, and returns what was read.
fn exchange(addr: SocketAddr, request: &[u8], until: impl Fn(&str) -> bool) -> String {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    stream.write_all(request).expect("write");
    let start = Instant::now();
    let mut out = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    while start.elapsed() < TIMEOUT {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
        if until(&String::from_utf8_lossy(&out)) {
            break;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn get(addr: SocketAddr, path: &str) -> String {
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    exchange(addr, request.as_bytes(), |_| false)
}

fn status(response: &str) -> u16 {
    response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn body(response: &str) -> &str {
    response.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

/// Waits for the first sample: `/api/snapshot` answers 503 until then.
fn snapshot(addr: SocketAddr) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let response = get(addr, "/api/snapshot");
        if status(&response) == 200 {
            return serde_json::from_str(body(&response)).expect("snapshot is JSON");
        }
        assert!(start.elapsed() < TIMEOUT, "no snapshot: {response}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[derive(Message)]
struct Ping;

#[process]
#[derive(Clone)]
struct Worker;

#[process]
impl Worker {
    #[handle]
    fn ping(&mut self, _: Ping) {}
}

/// A panel answering `/api/echo/<rest>` with what it was asked.
#[derive(Isolated)]
struct Echo;

impl Panel for Echo {
    fn name(&self) -> &str {
        "echo"
    }

    fn get(&self, rest: &str, query: &str) -> Option<(u16, String)> {
        (rest != "missing").then(|| {
            (
                200,
                serde_json::json!({ "rest": rest, "query": query }).to_string(),
            )
        })
    }
}

#[test]
fn the_console_serves_the_page_the_snapshot_events_and_metrics() {
    let rt = Runtime::new();
    let group = rt.group("observed").threads(1).build().expect("group");
    let worker = rt.spawner().group(&group).spawn(Worker);
    for _ in 0..100 {
        worker.post(Ping).expect("post");
    }
    let root = rt.spawn(Supervisor::new(
        SupervisorSpec::new("root").child(ChildSpec::worker("w", Worker)),
    ));
    let console = Console::builder(&rt)
        .interval(Duration::from_millis(100))
        .supervisor("root", &root)
        .panel(Echo)
        .start()
        .expect("start");
    let addr = console.local_addr();
    assert!(addr.ip().is_loopback());

    let page = get(addr, "/");
    assert_eq!(status(&page), 200, "{page}");
    assert!(page.contains("text/html"));
    for asset in ["/app.js", "/app.css"] {
        assert_eq!(status(&get(addr, asset)), 200, "{asset}");
    }

    let snap = snapshot(addr);
    assert_eq!(snap["version"], 1);
    let groups = snap["groups"].as_array().expect("groups");
    let observed = groups
        .iter()
        .find(|g| g["name"] == "observed")
        .expect("the observed group");
    assert_eq!(observed["counts"]["posted"], 100);
    for series in ["t_ms", "queue_length", "admitted_per_s", "handling_p99_us"] {
        assert!(observed["history"][series].is_array(), "{series}");
    }
    let tree = &snap["supervisors"][0]["tree"];
    assert_eq!(tree["children"][0]["id"], "w", "{tree}");
    assert_eq!(snap["panels"][0], "echo");

    // The event stream: headers, then a tick within a few samples.
    let events = exchange(addr, b"GET /events HTTP/1.1\r\nHost: test\r\n\r\n", |s| {
        s.contains("event: tick\ndata: {")
    });
    assert!(events.contains("text/event-stream"), "{events}");
    assert!(events.contains("event: tick\ndata: {"), "{events}");

    // `/metrics` renders the latest sample; the worker's group may still be handling the
    // pings when one is taken, so wait for a sample that has them all.
    let start = Instant::now();
    let metrics = loop {
        let metrics = get(addr, "/metrics");
        assert_eq!(status(&metrics), 200);
        if body(&metrics).contains("whirl_group_handled_total{group=\"observed\"} 100")
            || start.elapsed() > TIMEOUT
        {
            break metrics;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        body(&metrics).contains("whirl_group_handled_total{group=\"observed\"} 100"),
        "{metrics}"
    );
    // The classic text format for curl and promtool; OpenMetrics for a scraper that asks.
    assert!(
        metrics.contains("Content-Type: text/plain; version=0.0.4"),
        "{metrics}"
    );
    assert!(body(&metrics).contains("# TYPE whirl_group_handled_total counter"));
    assert!(body(&metrics).contains("# TYPE whirl_group_handling_seconds histogram"));
    let asked = "GET /metrics HTTP/1.1\r\nHost: test\r\nAccept: application/openmetrics-text;\
                 version=1.0.0,text/plain;version=0.0.4;q=0.5\r\nConnection: close\r\n\r\n";
    let open = exchange(addr, asked.as_bytes(), |_| false);
    assert!(
        open.contains("Content-Type: application/openmetrics-text; version=1.0.0"),
        "{open}"
    );
    assert!(body(&open).contains("# TYPE whirl_group_handled counter"));
    assert!(body(&open).ends_with("# EOF\n"), "{open}");

    let echo = get(addr, "/api/echo/a/b?x=1");
    assert_eq!(status(&echo), 200);
    assert!(body(&echo).contains(r#""rest":"a/b""#), "{echo}");
    assert_eq!(status(&get(addr, "/api/echo/missing")), 404);
    assert_eq!(status(&get(addr, "/api/nothing")), 404);
    assert_eq!(status(&get(addr, "/nothing")), 404);
    drop(console);
    rt.shutdown_timeout(Duration::from_secs(1));
}

#[test]
fn hostile_requests_get_errors_not_panics() {
    let rt = Runtime::new();
    let console = Console::builder(&rt).start().expect("start");
    let addr = console.local_addr();

    let post = exchange(
        addr,
        b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n",
        |s| s.contains("\r\n\r\n"),
    );
    assert_eq!(status(&post), 405, "{post}");
    let garbage = exchange(addr, b"\x00\x01 nonsense\r\n\r\n", |_| false);
    assert_eq!(status(&garbage), 400, "{garbage}");
    let huge = format!(
        "GET / HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n",
        "a".repeat(64 * 1024)
    );
    let refused = exchange(addr, huge.as_bytes(), |_| false);
    // Refused once the decoder's buffer bound (head limit plus one read) is passed.
    assert!(matches!(status(&refused), 413 | 431), "{refused}");
    let long_head = format!(
        "GET / HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n",
        "a".repeat(9 * 1024)
    );
    let refused = exchange(addr, long_head.as_bytes(), |_| false);
    assert_eq!(status(&refused), 431, "{refused}");
    let body = exchange(
        addr,
        b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n0123456789",
        |_| false,
    );
    assert_eq!(
        status(&body),
        413,
        "a console request carries no body: {body}"
    );
    // The console still serves.
    assert_eq!(status(&get(addr, "/")), 200);
    drop(console);
    rt.shutdown_timeout(Duration::from_secs(1));
}

#[test]
fn a_console_off_loopback_needs_a_token_and_checks_it() {
    let rt = Runtime::new();
    let any: SocketAddr = "0.0.0.0:0".parse().expect("addr");
    match Console::builder(&rt).bind(any).start() {
        Err(ConsoleError::TokenRequired(ip)) => assert!(ip.is_unspecified()),
        other => panic!("expected TokenRequired, got {other:?}"),
    }
    let console = Console::builder(&rt)
        .bind(any)
        .token("s3cret")
        .start()
        .expect("start");
    let addr = SocketAddr::from(([127, 0, 0, 1], console.local_addr().port()));
    assert_eq!(status(&get(addr, "/")), 401);
    assert_eq!(status(&get(addr, "/metrics?token=wrong")), 401);
    assert_eq!(status(&get(addr, "/?token=s3cret")), 200);
    let bearer = exchange(
        addr,
        b"GET /app.js HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer s3cret\r\nConnection: close\r\n\r\n",
        |_| false,
    );
    assert_eq!(status(&bearer), 200);
    drop(console);
    rt.shutdown_timeout(Duration::from_secs(1));
}

#[test]
fn panel_names_are_checked() {
    #[derive(Isolated)]
    struct Bad;
    impl Panel for Bad {
        fn name(&self) -> &str {
            "Not/One"
        }
        fn get(&self, _: &str, _: &str) -> Option<(u16, String)> {
            None
        }
    }
    let rt = Runtime::new();
    assert!(matches!(
        Console::builder(&rt).panel(Bad).start(),
        Err(ConsoleError::PanelName(_))
    ));
    assert!(matches!(
        Console::builder(&rt).panel(Echo).panel(Echo).start(),
        Err(ConsoleError::PanelName(_))
    ));
}
