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
    // The console's own endpoints are not a panel's to take.
    #[derive(Isolated)]
    struct Squatter;
    impl Panel for Squatter {
        fn name(&self) -> &str {
            "processes"
        }
        fn get(&self, _: &str, _: &str) -> Option<(u16, String)> {
            None
        }
    }
    assert!(matches!(
        Console::builder(&rt).panel(Squatter).start(),
        Err(ConsoleError::PanelName(_))
    ));
}

/// A gate a handler waits on until the test opens it.
type Gate = std::sync::Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>;

/// Wait in the handler until the gate opens.
#[derive(Message)]
struct Hold(whirl::SharedClient<Gate>);

/// A process whose queue the test makes grow.
#[process]
struct Flooded;

#[process]
impl Flooded {
    #[handle]
    fn ping(&mut self, _: Ping) {}

    #[handle]
    fn hold(&mut self, Hold(gate): Hold) {
        let (open, wake) = &**gate;
        let mut open = open.lock().unwrap_or_else(|p| p.into_inner());
        while !*open {
            open = wake.wait(open).unwrap_or_else(|p| p.into_inner());
        }
    }
}

fn json(response: &str) -> serde_json::Value {
    serde_json::from_str(body(response)).unwrap_or_else(|e| panic!("{e}: {response}"))
}

#[test]
fn the_process_table_shows_a_process_whose_queue_grows() {
    let rt = Runtime::new();
    let group = rt.group("flood").threads(1).build().expect("group");
    let quiet = rt.spawner().group(&group).spawn(Flooded);
    let flooded = rt.spawner().group(&group).spawn(Flooded);
    rt.register("flooded", &flooded).expect("register");
    let root = rt.spawn(Supervisor::new(
        SupervisorSpec::new("root").child(ChildSpec::worker("w", Worker)),
    ));
    rt.block_until_idle();
    // The group's only worker is held in `flooded`'s handler; 300 pings queue behind it.
    let gate: Gate = Default::default();
    let held = whirl::SharedClient::new(gate.clone(), "the test's gate");
    flooded.post(Hold(held)).expect("post");
    for _ in 0..300 {
        flooded.post(Ping).expect("post");
    }
    let console = Console::builder(&rt)
        .interval(Duration::from_millis(100))
        .start()
        .expect("start");
    let addr = console.local_addr();

    let table = get(addr, "/api/processes");
    assert_eq!(status(&table), 200, "{table}");
    let table = json(&table);
    assert_eq!(table["sort"], "queue");
    let top = &table["processes"][0];
    assert_eq!(top["pid"], flooded.id().as_u64(), "{table}");
    assert_eq!(top["id"], flooded.id().to_string());
    assert_eq!(top["queue_length"], 301, "{top}");
    assert_eq!(top["names"][0], "flooded");
    assert_eq!(top["group"], "flood");
    assert!(
        top["type"].as_str().is_some_and(|t| t.ends_with("Flooded")),
        "{top}"
    );
    for field in [
        "turns",
        "handled",
        "failures",
        "idle_ms",
        "messages_per_second",
    ] {
        assert!(top[field].is_u64(), "{field}: {top}");
    }

    // Sorting, the limit and the group filter.
    let by_id = json(&get(addr, "/api/processes?sort=id&limit=2&group=flood"));
    let pids: Vec<u64> = by_id["processes"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|p| p["pid"].as_u64())
        .collect();
    assert_eq!(pids, [quiet.id().as_u64(), flooded.id().as_u64()]);
    assert_eq!(by_id["limit"], 2);
    assert_eq!(status(&get(addr, "/api/processes?sort=nope")), 400);
    assert_eq!(status(&get(addr, "/api/processes?limit=x")), 400);

    // The process page, by number or by display form.
    let id = flooded.id().as_u64();
    for path in [
        format!("/api/process/{id}"),
        format!("/api/process/%3C{id}%3E"),
    ] {
        let page = get(addr, &path);
        assert_eq!(status(&page), 200, "{page}");
        let page = json(&page);
        assert_eq!(page["process"]["pid"], id);
        assert!(page["supervisor"].is_null());
        for list in ["monitors", "monitored_by", "links", "recent_failures"] {
            assert!(page[list].is_array(), "{list}: {page}");
        }
    }
    assert_eq!(status(&get(addr, "/api/process/999999999")), 404);
    assert_eq!(status(&get(addr, "/api/process/abc")), 400);

    // A supervised child names its supervisor; the supervisor lists it among its monitors.
    let child = root.which_children().expect("children")[0]
        .pid
        .expect("running");
    let page = json(&get(addr, &format!("/api/process/{}", child.as_u64())));
    assert_eq!(page["supervisor"]["id"], root.id().to_string(), "{page}");
    assert_eq!(page["supervisor"]["child"], "w");
    assert_eq!(page["monitored_by"][0], root.id().to_string());
    let page = json(&get(addr, &format!("/api/process/{}", root.id().as_u64())));
    assert_eq!(page["monitors"][0], child.to_string(), "{page}");

    // The snapshot carries the node, worker utilisation and the long history.
    let start = Instant::now();
    let snap = loop {
        let snap = snapshot(addr);
        let busy = snap["groups"]
            .as_array()
            .and_then(|g| g.iter().find(|g| g["name"] == "flood"))
            .map(|g| g["utilisation"].clone());
        if busy.as_ref().is_some_and(|b| b.is_f64()) || start.elapsed() > TIMEOUT {
            break snap;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let flood = snap["groups"]
        .as_array()
        .and_then(|g| g.iter().find(|g| g["name"] == "flood"))
        .expect("the flood group");
    // Its only worker is held: busy all the time.
    assert!(
        flood["utilisation"].as_f64().is_some_and(|u| u > 0.9),
        "{flood}"
    );
    assert!(flood["history"]["busy"].is_array());
    assert!(flood["history_long"]["t_ms"].is_array());
    let node = &snap["node"];
    if cfg!(target_os = "linux") {
        assert_eq!(node["supported"], true, "{node}");
        assert!(node["rss_bytes"].as_u64().is_some_and(|b| b > 0), "{node}");
    }
    assert!(node["history"]["t_ms"].is_array() && node["history_long"]["t_ms"].is_array());

    {
        let (open, wake) = &*gate;
        *open.lock().unwrap_or_else(|p| p.into_inner()) = true;
        wake.notify_all();
    }
    rt.block_until_idle();
    let after = json(&get(addr, &format!("/api/process/{id}")));
    assert_eq!(after["process"]["queue_length"], 0, "{after}");
    assert_eq!(after["process"]["handled"], 301);
    drop(console);
    rt.shutdown_timeout(Duration::from_secs(1));
}

/// The console over TLS (feature `tls`): HTTPS with a self-signed certificate; plaintext
/// gets no answer.
#[cfg(feature = "tls")]
#[test]
fn the_console_serves_https_with_a_certificate() {
    use std::sync::Arc;
    use whirl::net::tls::rustls::pki_types::ServerName;
    use whirl::net::tls::rustls::{
        self, ClientConfig, ClientConnection, RootCertStore, StreamOwned,
    };

    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("cert");
    let dir = std::env::temp_dir();
    let stem = format!("whirl-console-tls-{}", std::process::id());
    let (cert, key) = (
        dir.join(format!("{stem}-cert.pem")),
        dir.join(format!("{stem}-key.pem")),
    );
    std::fs::write(&cert, made.cert.pem()).expect("write");
    std::fs::write(&key, made.signing_key.serialize_pem()).expect("write");
    let config = whirl::net::tls::server_config(&cert, &key).expect("server config");
    let _ = (std::fs::remove_file(&cert), std::fs::remove_file(&key));

    let rt = Runtime::new();
    let console = Console::builder(&rt)
        .interval(Duration::from_millis(100))
        .tls(config)
        .start()
        .expect("start");
    let addr = console.local_addr();

    let mut roots = RootCertStore::empty();
    roots.add(made.cert.der().clone()).expect("root");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let client = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let https_get = |path: &str| -> String {
        let name = ServerName::try_from("localhost").expect("name");
        let conn = ClientConnection::new(Arc::new(client.clone()), name).expect("client");
        let tcp = TcpStream::connect(addr).expect("connect");
        tcp.set_read_timeout(Some(TIMEOUT)).expect("timeout");
        let mut tls = StreamOwned::new(conn, tcp);
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        tls.write_all(request.as_bytes()).expect("write");
        let mut out = Vec::new();
        // The server closes after answering; an unclean end is tolerated, not needed.
        let _ = tls.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    };
    let page = https_get("/");
    assert_eq!(status(&page), 200, "{page}");
    let start = Instant::now();
    loop {
        let snap = https_get("/api/snapshot");
        if status(&snap) == 200 {
            assert_eq!(json(&snap)["version"], 1);
            break;
        }
        assert!(start.elapsed() < TIMEOUT, "no snapshot over TLS: {snap}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let table = https_get("/api/processes");
    assert_eq!(status(&table), 200, "{table}");
    // Plain HTTP to the TLS port is not answered with HTTP.
    let plain = get(addr, "/api/snapshot");
    assert!(!plain.starts_with("HTTP/1.1 200"), "{plain}");
    drop(console);
    rt.shutdown_timeout(Duration::from_secs(1));
}
