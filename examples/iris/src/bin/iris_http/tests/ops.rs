//! What an operator sees, over real sockets: `/healthz` and `/readyz` answered without a
//! session, `/metrics` in both text formats (checked line by line, and by `promtool check
//! metrics` when it is installed), and the access log's JSON lines.

use std::collections::HashMap;
use std::process::{Command, Stdio};

use super::*;
use crate::ops::access_log::{self, Writer};

/// The samples of a text exposition, by series (`name{labels}`), and the `# TYPE` of each
/// family; panics on a line that is neither a comment nor a sample.
fn parse_exposition(text: &str) -> (HashMap<String, f64>, HashMap<String, String>) {
    let mut samples = HashMap::new();
    let mut types = HashMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
            types.insert(name.to_owned(), kind.to_owned());
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("a sample: series value");
        let value: f64 = value
            .parse()
            .unwrap_or_else(|e| panic!("{line:?}: value: {e}"));
        samples.insert(series.to_owned(), value);
    }
    (samples, types)
}

/// Runs `promtool check metrics` on `text`: `None` if promtool is not installed.
fn promtool(text: &str) -> Option<std::process::Output> {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take().expect("promtool's stdin");
    stdin
        .write_all(text.as_bytes())
        .expect("written to promtool");
    drop(stdin);
    Some(child.wait_with_output().expect("promtool ran"))
}

#[test]
fn probes_are_answered_without_a_session_and_metrics_parse() {
    let server = TestServer::start(demo_options());
    let mut client = server.connect();
    for _ in 0..3 {
        assert_eq!(client.get("/files/index.html", None).status, 200);
    }
    for path in ["/healthz", "/readyz"] {
        let response = client.get(path, None);
        assert_eq!(response.status, 200, "{path}");
        assert_eq!(
            response.header("set-cookie"),
            None,
            "{path} starts no session"
        );
        assert_eq!(response.header("cache-control"), Some("no-store"), "{path}");
        assert!(!response.closes());
    }
    client.send(b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    let head = client.read_head_response();
    assert_eq!(head.status, 200);
    let refused = client.exchange(b"DELETE /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(refused.status, 405);
    assert_eq!(refused.header("allow"), Some("GET, HEAD"));

    let metrics = client.get("/metrics", None);
    assert_eq!(metrics.status, 200);
    assert_eq!(
        metrics.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let text = metrics.text();
    let (samples, types) = parse_exposition(&text);
    for (name, kind) in &types {
        // The older format names a counter's family by its samples.
        assert_eq!(name.ends_with("_total"), kind == "counter", "{name} {kind}");
    }
    let sample = |series: &str| {
        *samples
            .get(series)
            .unwrap_or_else(|| panic!("no {series} in:\n{text}"))
    };
    // Answered before this one: three files, two probes, the HEAD, the 405.
    assert_eq!(
        sample("iris_http_requests_total{method=\"GET\",status=\"2xx\"}"),
        5.0
    );
    assert_eq!(
        sample("iris_http_requests_total{method=\"HEAD\",status=\"2xx\"}"),
        1.0
    );
    assert_eq!(
        sample("iris_http_requests_total{method=\"other\",status=\"4xx\"}"),
        1.0
    );
    assert_eq!(sample("iris_http_request_duration_seconds_count"), 7.0);
    assert_eq!(sample("iris_http_requests_in_flight"), 1.0, "this request");
    assert_eq!(sample("iris_http_connections_open"), 1.0);
    assert_eq!(sample("iris_http_draining"), 0.0);
    assert_eq!(sample("iris_http_access_log_dropped_lines_total"), 0.0);
    assert_eq!(
        sample("iris_http_reloads_total{what=\"config\",result=\"ok\"}"),
        0.0
    );
    assert!(sample("iris_http_sent_bytes_total") > 0.0);
    assert_eq!(
        types
            .get("iris_http_request_duration_seconds")
            .map(String::as_str),
        Some("histogram")
    );
    // The runtime's own, registered beside iris_http's (`whirl::prometheus::register`).
    assert_eq!(
        types.get("whirl_build_info").map(String::as_str),
        Some("gauge")
    );
    assert!(sample("whirl_group_handled_total{group=\"http\"}") > 0.0);
    assert!(samples
        .keys()
        .any(|s| s.starts_with("process_resident_memory_bytes")));
    match promtool(&text) {
        Some(out) => assert!(
            out.status.success(),
            "promtool check metrics: {}{}\n{text}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        None => println!("promtool is not installed: `promtool check metrics` skipped"),
    }

    // What Prometheus asks for: OpenMetrics.
    let openmetrics = client.exchange(
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n\r\n",
    );
    assert_eq!(
        openmetrics.header("content-type"),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
    );
    let text = openmetrics.text();
    assert!(text.ends_with("# EOF\n"), "{text}");
    assert!(
        text.contains("\n# TYPE iris_http_requests counter\n"),
        "{text}"
    );
    drop(client);
    server.wait_for_baseline();
    server.stop();
}

#[test]
fn the_access_log_has_one_json_line_per_answer() {
    let dir = TempRoot::new("access-log");
    let path = dir.path().join("access.log");
    let (writer, sink) = Writer::open(&path, access_log::CAPACITY).expect("the log opens");
    let mut options = demo_options();
    options.access_log = Some(sink);
    let server = TestServer::start(options);
    let mut client = server.connect();
    let local = client.stream.local_addr().expect("the client's address");
    let with_agent = "GET /resources/7?x=1 HTTP/1.1\r\nHost: x\r\nUser-Agent: probe \"7\"\r\n\r\n";
    assert_eq!(client.exchange(with_agent.as_bytes()).status, 200);
    assert_eq!(client.get("/files/nope.html", None).status, 404);
    client.send(b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(client.read_head_response().status, 200);
    let mut broken = server.connect();
    assert_eq!(broken.exchange(b"NOT HTTP\r\n\r\n").status, 400);

    let mut lines = Vec::new();
    wait_until("four lines in the access log", || {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        lines = text.lines().map(str::to_owned).collect();
        lines.len() >= 4
    });
    let entries: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    let of = |path: Option<&str>| {
        entries
            .iter()
            .find(|e| e["path"].as_str() == path)
            .unwrap_or_else(|| panic!("no entry for {path:?} in {lines:#?}"))
    };
    let lookup = of(Some("/resources/7"));
    assert_eq!(lookup["method"], "GET");
    assert_eq!(lookup["query"], "x=1");
    assert_eq!(lookup["status"], 200);
    assert_eq!(lookup["remote"], local.to_string());
    assert_eq!(lookup["user_agent"], "probe \"7\"");
    assert!(
        lookup["principal"].is_u64(),
        "a session served it: {lookup}"
    );
    assert!(lookup["bytes"].as_u64().is_some_and(|b| b > 0), "{lookup}");
    assert!(lookup["duration_us"].is_u64(), "{lookup}");
    let time = lookup["time"].as_str().expect("a time");
    humantime::parse_rfc3339(time).unwrap_or_else(|e| panic!("{time}: {e}"));
    assert_eq!(of(Some("/files/nope.html"))["status"], 404);
    let probe = of(Some("/healthz"));
    assert_eq!(
        (probe["method"].as_str(), probe["status"].as_u64()),
        (Some("HEAD"), Some(200))
    );
    assert!(
        probe["principal"].is_null(),
        "a probe has no session: {probe}"
    );
    let garbage = of(None);
    assert_eq!(garbage["status"], 400);
    assert!(garbage["method"].is_null(), "{garbage}");
    drop((client, broken));
    server.wait_for_baseline();
    server.stop();
    writer.finish();
}
