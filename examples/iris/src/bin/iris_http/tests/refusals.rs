//! What the server refuses before it reads a request whole, and with which status (RFC 9110,
//! RFC 9112): a request line too long (414), header lines, heads and header counts over their
//! limits (431, limits set in `Options::limits` and nginx's by default), versions other than
//! HTTP/1 (505, while a later HTTP/1 minor version is served as HTTP/1.1), and the requests
//! that get no `100 Continue` because their body would not be read.

use whirl_http::Limits;

use super::*;

/// A GET of `target` with `headers` (each line ending in CRLF).
fn get_target(target: &str, headers: &str) -> String {
    format!("GET {target} HTTP/1.1\r\nHost: localhost\r\n{headers}\r\n")
}

/// Sends `request` on a new connection and expects `status` and the connection closed.
fn refused(server: &TestServer, request: &[u8], status: u16) -> Response {
    let mut client = server.connect();
    let response = client.exchange(request);
    assert_eq!(response.status, status, "{}", response.text());
    assert!(response.closes(), "a refusal closes the connection");
    client.assert_closed_by_server();
    response
}

#[test]
fn a_long_target_is_414_and_header_limits_are_nginx_like() {
    let server = TestServer::start(demo_options());

    // A request line over 8 KiB: its target is too long, whatever the headers.
    let target = format!("/files/{}", "a".repeat(8 * 1024));
    let response = refused(&server, get_target(&target, "").as_bytes(), 414);
    assert_eq!(response.text(), "414 URI Too Long\n");
    // Refused as soon as the line is too long, before its end arrives.
    let mut client = server.connect();
    client.send(format!("GET /files/{}", "a".repeat(9 * 1024)).as_bytes());
    assert_eq!(client.read_response().status, 414);
    client.assert_closed_by_server();

    // One header line over 8 KiB: 431.
    let line = format!("X-Big: {}\r\n", "b".repeat(8 * 1024));
    refused(
        &server,
        get_target("/files/index.html", &line).as_bytes(),
        431,
    );

    // 24 KiB of headers in lines under 8 KiB: served (the head was limited to 8 KiB in all).
    let lines: String = (0..3)
        .map(|i| format!("X-Part-{i}: {}\r\n", "c".repeat(8 * 1024 - 20)))
        .collect();
    let mut client = server.connect();
    let response = client.exchange(get_target("/files/index.html", &lines).as_bytes());
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(client.get("/files/index.html", None).status, 200);
    drop(client);

    // Over 32 KiB in all: 431.
    let lines: String = (0..5)
        .map(|i| format!("X-Part-{i}: {}\r\n", "c".repeat(8 * 1024 - 20)))
        .collect();
    refused(
        &server,
        get_target("/files/index.html", &lines).as_bytes(),
        431,
    );

    // 100 headers are served, 101 are not.
    let many: String = (0..99).map(|i| format!("X-H{i}: v\r\n")).collect();
    let mut client = server.connect();
    let response = client.exchange(get_target("/files/index.html", &many).as_bytes());
    assert_eq!(response.status, 200, "Host and 99 more");
    drop(client);
    let many: String = (0..100).map(|i| format!("X-H{i}: v\r\n")).collect();
    refused(
        &server,
        get_target("/files/index.html", &many).as_bytes(),
        431,
    );

    server.wait_for_baseline();
    server.stop();
}

#[test]
fn header_limits_come_from_the_options() {
    let mut options = demo_options();
    options.limits = Limits {
        max_line_bytes: 100,
        max_head_bytes: 400,
        max_headers: 4,
        ..Limits::default()
    };
    let server = TestServer::start(options);

    let target = format!("/files/{}", "a".repeat(100));
    refused(&server, get_target(&target, "").as_bytes(), 414);
    let line = format!("X-Long: {}\r\n", "b".repeat(100));
    refused(
        &server,
        get_target("/files/index.html", &line).as_bytes(),
        431,
    );
    let lines: String = (0..4)
        .map(|i| format!("X-{i}: {}\r\n", "c".repeat(90)))
        .collect();
    refused(
        &server,
        get_target("/files/index.html", &lines).as_bytes(),
        431,
    );
    refused(
        &server,
        get_target("/files/index.html", "A: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n").as_bytes(),
        431,
    );

    // Within every limit: served.
    let mut client = server.connect();
    let response =
        client.exchange(get_target("/files/index.html", "A: 1\r\nB: 2\r\nC: 3\r\n").as_bytes());
    assert_eq!(response.status, 200, "{}", response.text());
    drop(client);
    server.wait_for_baseline();
    server.stop();
}

#[test]
fn http_1_minor_versions_are_served_as_1_1_and_other_majors_get_505() {
    let server = TestServer::start(demo_options());

    // HTTP/1.2: an HTTP/1.1 request (kept alive, answered in HTTP/1.1), RFC 9112 §2.3.
    let mut client = server.connect();
    let response = client.exchange(b"GET /files/index.html HTTP/1.2\r\nHost: localhost\r\n\r\n");
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.header("connection"), Some("keep-alive"));
    let response = client.exchange(b"GET /files/index.html HTTP/1.9\r\nHost: localhost\r\n\r\n");
    assert_eq!(response.status, 200);
    assert_eq!(client.get("/files/index.html", None).status, 200);
    drop(client);
    // ... and HTTP/1.1's rules apply to it: Host is required.
    refused(&server, b"GET /files/index.html HTTP/1.2\r\n\r\n", 400);

    // Another major version on an HTTP/1 connection: 505.
    for version in ["HTTP/2.0", "HTTP/3.0", "HTTP/0.9"] {
        let request = format!("GET /files/index.html {version}\r\nHost: localhost\r\n\r\n");
        let response = refused(&server, request.as_bytes(), 505);
        assert_eq!(response.text(), "505 HTTP Version Not Supported\n");
    }
    // (The HTTP/2 connection preface starts HTTP/2 by prior knowledge, and gets 505 with
    // HTTP/2 off: `http2.rs`.)

    server.wait_for_baseline();
    server.stop();
}

/// A POST head of `path` announcing a body of `len` bytes and expecting `100 Continue`.
fn expecting_head(path: &str, len: usize) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: {len}\r\nExpect: 100-continue\r\n\r\n"
    )
}

/// `100 Continue` invites a body the server will read; a request about to be refused gets
/// its final answer instead, and the connection closes with the body unread.
#[test]
fn no_100_continue_for_a_request_about_to_be_refused() {
    let server = TestServer::start(demo_options());

    // No such path: 404 at once.
    let response = refused(&server, expecting_head("/nope", 5).as_bytes(), 404);
    assert_eq!(response.text(), "404 Not Found\n");
    // A path that takes no POST: 405 with Allow.
    let response = refused(
        &server,
        expecting_head("/files/index.html", 5).as_bytes(),
        405,
    );
    assert_eq!(response.header("allow"), Some("GET, HEAD"));
    // A path that leaves the root: 400.
    refused(
        &server,
        expecting_head("/files/../secret", 5).as_bytes(),
        400,
    );
    // A body over the limit: 413 (the decoder refuses it from its head).
    refused(
        &server,
        expecting_head("/login", 2 * 1024 * 1024).as_bytes(),
        413,
    );

    // Behind a pipelined request, the refusal still waits for that request's answer.
    let mut client = server.connect();
    let mut burst = get("/files/index.html", None);
    burst.push_str(&expecting_head("/nope", 5));
    client.send(burst.as_bytes());
    assert_eq!(client.read_response().status, 200);
    let refusal = client.read_response();
    assert_eq!(refusal.status, 404, "no 100 first");
    assert!(refusal.closes());
    client.assert_closed_by_server();

    // A request that will be read gets it.
    let body = "user=alice&password=wonderland";
    let mut client = server.connect();
    client.send(expecting_head("/login", body.len()).as_bytes());
    assert_eq!(client.read_response().status, 100);
    client.send(body.as_bytes());
    assert_eq!(client.read_response().status, 200);
    drop(client);

    server.wait_for_baseline();
    server.stop();
}
