//! Serving files and resources, keep-alive, pipelining, request errors, routing, login.

use super::*;

fn index_html() -> Vec<u8> {
    std::fs::read(demo_root().join("index.html")).expect("the demo index.html")
}

#[test]
fn files_are_served_and_a_session_starts_once_where_configured() {
    let server = TestServer::start(demo_options());
    let mut client = server.connect();
    let first = client.get("/files/index.html", None);
    assert_eq!(first.status, 200, "{}", first.text());
    assert_eq!(first.body, index_html());
    assert_eq!(
        first.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(
        first.session_cookie(),
        None,
        "a static file starts no session"
    );

    // A session path (`/resources`) starts one.
    let resource = client.get("/resources/1", None);
    assert_eq!(resource.status, 200);
    let token = resource
        .session_cookie()
        .expect("the first answer under a session path sets a session");
    assert_eq!(token.len(), 32, "token {token:?}");
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "{token:?}");

    // A client that sends its cookie back is not given a new one.
    assert_eq!(
        client.get("/resources/2", Some(&token)).session_cookie(),
        None
    );
    let second = client.get("/files/map.svg", Some(&token));
    assert_eq!(second.status, 200);
    assert_eq!(second.header("content-type"), Some("image/svg+xml"));
    assert_eq!(
        second.body,
        std::fs::read(demo_root().join("map.svg")).expect("map.svg")
    );
    assert_eq!(second.session_cookie(), None);

    // A HEAD keeps the length and drops the body.
    client.send(
        format!(
            "HEAD /files/index.html HTTP/1.1\r\nHost: localhost\r\nCookie: session={token}\r\n\r\n"
        )
        .as_bytes(),
    );
    // Our reader would wait for the body: read the head by hand.
    while !client.buf.windows(4).any(|w| w == b"\r\n\r\n") {
        assert!(client.fill().expect("the HEAD response") > 0, "closed");
    }
    let head = String::from_utf8_lossy(&client.buf).into_owned();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.contains(&format!("Content-Length: {}\r\n", index_html().len())),
        "{head}"
    );
    assert!(
        head.ends_with("\r\n\r\n"),
        "a HEAD response has no body: {head}"
    );
    drop(client);
    server.wait_for_baseline();
    server.stop();
}

#[test]
fn keep_alive_serves_several_requests_on_one_connection() {
    let server = TestServer::start(demo_options());
    let mut client = server.connect();
    let mut cookie = None;
    for path in ["/files/index.html", "/resources/1", "/resources?limit=3"] {
        let response = client.get(path, cookie.as_deref());
        assert_eq!(response.status, 200, "{path}: {}", response.text());
        assert_eq!(response.header("connection"), Some("keep-alive"), "{path}");
        cookie = cookie.or(response.session_cookie());
    }
    // Still open: a fourth request on the same connection is answered.
    let fourth = client.get("/resources/2", cookie.as_deref());
    assert_eq!(fourth.status, 200);

    // HTTP/1.0 without keep-alive: answered with `Connection: close`, then closed.
    let mut old = server.connect();
    let response = old.exchange(b"GET /files/index.html HTTP/1.0\r\n\r\n");
    assert_eq!(response.status, 200);
    assert_eq!(response.body, index_html());
    assert_eq!(response.header("connection"), Some("close"));
    old.assert_closed_by_server();

    // HTTP/1.0 asking for keep-alive gets it.
    let mut kept = server.connect();
    for _ in 0..2 {
        let response =
            kept.exchange(b"GET /resources/3 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        assert_eq!(response.status, 200);
        assert_eq!(response.header("connection"), Some("keep-alive"));
    }

    // HTTP/1.1 with `Connection: close` is closed after its answer.
    let mut closing = server.connect();
    let response = closing
        .exchange(b"GET /resources/4 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert_eq!(response.status, 200);
    assert!(response.closes());
    closing.assert_closed_by_server();

    drop((client, kept));
    server.wait_for_baseline();
    server.stop();
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let server = TestServer::start(demo_options());
    let mut client = server.connect();
    let paths = [
        "/resources/1",
        "/resources/2",
        "/files/index.html",
        "/resources/3",
        "/nope",
        "/resources/4",
    ];
    let burst: String = paths.iter().map(|p| get(p, None)).collect();
    client.send(burst.as_bytes());
    for (i, path) in paths.iter().enumerate() {
        let response = client.read_response();
        match *path {
            "/files/index.html" => {
                assert_eq!(response.status, 200);
                assert_eq!(response.body, index_html());
            }
            "/nope" => assert_eq!(response.status, 404),
            resource => {
                assert_eq!(response.status, 200, "{resource}: {}", response.text());
                let id = resource.trim_start_matches("/resources/");
                assert!(
                    response.text().starts_with(&format!("{{\"id\":{id},")),
                    "answer {i} to {resource} is {}",
                    response.text()
                );
            }
        }
        // Only the first answer sets the session (never a file's).
        assert_eq!(response.session_cookie().is_some(), i == 0, "answer {i}");
    }
    // Many more than the connection holds at once (it pauses reading, then resumes).
    let burst: String = (1..=100)
        .map(|id| get(&format!("/resources/{id}"), None))
        .collect();
    client.send(burst.as_bytes());
    for id in 1..=100 {
        let response = client.read_response();
        assert_eq!(response.status, 200);
        assert!(
            response.text().starts_with(&format!("{{\"id\":{id},")),
            "answer {id}: {}",
            response.text()
        );
    }
    drop(client);
    server.wait_for_baseline();
    server.stop();
}

#[test]
fn malformed_requests_are_refused_and_closed() {
    let server = TestServer::start(demo_options());

    let mut client = server.connect();
    let response = client.exchange(b"this is not http\r\n\r\n");
    assert_eq!(response.status, 400);
    assert!(response.closes());
    client.assert_closed_by_server();

    let mut client = server.connect();
    let big = format!(
        "GET /files/index.html HTTP/1.1\r\nHost: localhost\r\nX-Big: {}\r\n\r\n",
        "a".repeat(9 * 1024)
    );
    let response = client.exchange(big.as_bytes());
    assert_eq!(response.status, 431);
    assert!(response.closes());
    client.assert_closed_by_server();

    // More than 100 headers, each small.
    let mut client = server.connect();
    let many: String = (0..100).map(|i| format!("X-H{i}: v\r\n")).collect();
    let response = client
        .exchange(format!("GET /resources/1 HTTP/1.1\r\nHost: localhost\r\n{many}\r\n").as_bytes());
    assert_eq!(response.status, 431);
    client.assert_closed_by_server();

    // A body over 1 MiB announced by Content-Length is refused before it is sent.
    let mut client = server.connect();
    let response = client
        .exchange(b"POST /login HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1048577\r\n\r\n");
    assert_eq!(response.status, 413);
    assert!(response.closes());
    client.assert_closed_by_server();

    // Transfer codings other than chunked are not implemented.
    let mut client = server.connect();
    let response = client
        .exchange(b"POST /login HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip\r\n\r\n");
    assert_eq!(response.status, 501);
    client.assert_closed_by_server();

    server.wait_for_baseline();
    server.stop();
}

#[test]
fn requests_before_a_malformed_one_are_answered_first() {
    let server = TestServer::start(demo_options());
    let mut client = server.connect();
    let mut burst = get("/resources/1", None);
    burst.push_str(&get("/resources/2", None));
    burst.push_str("this is not http\r\n\r\n");
    client.send(burst.as_bytes());
    let first = client.read_response();
    assert_eq!(first.status, 200, "first answer: {}", first.text());
    let second = client.read_response();
    assert_eq!(second.status, 200, "second answer: {}", second.text());
    let third = client.read_response();
    assert_eq!(third.status, 400);
    client.assert_closed_by_server();
    server.wait_for_baseline();
    server.stop();
}

#[test]
fn routing_errors() {
    let server = TestServer::start(demo_options());
    let mut client = server.connect();

    let response = client.get("/nope", None);
    assert_eq!(response.status, 404);
    let cookie = response.session_cookie();
    let cookie = cookie.as_deref();
    assert_eq!(client.get("/files/missing.html", cookie).status, 404);
    assert_eq!(client.get("/resources/999999", cookie).status, 404);

    let response = client.get("/login", cookie);
    assert_eq!(response.status, 405);
    assert_eq!(response.header("allow"), Some("POST"));
    let response = client.exchange(post_form("/files/index.html", "x=1", cookie).as_bytes());
    assert_eq!(response.status, 405);
    assert_eq!(response.header("allow"), Some("GET, HEAD"));

    // Sent raw: a client library would normalise the `..` away.
    for target in [
        "/files/../main.rs",
        "/files/../../Cargo.toml",
        "/files/%2e%2e/main.rs",
        "/files//etc/passwd",
    ] {
        let response = client.get(target, cookie);
        assert_eq!(response.status, 400, "{target}: {}", response.text());
        assert!(
            !response.closes(),
            "{target}: a bad path keeps the connection"
        );
    }
    // Still usable afterwards.
    assert_eq!(client.get("/files/index.html", cookie).status, 200);
    drop(client);
    server.wait_for_baseline();
    server.stop();
}

#[test]
fn login_gives_admins_the_status_page() {
    let server = TestServer::start(demo_options());
    let addr = server.addr();

    let mut client = server.connect();
    let response =
        client.exchange(post_form("/login", "user=admin&password=secret", None).as_bytes());
    assert_eq!(response.status, 200, "{}", response.text());
    let admin = response
        .session_cookie()
        .expect("a login sets the session cookie");
    // The same connection, now with the admin's cookie.
    let status = client.get("/status", Some(&admin));
    assert_eq!(status.status, 200, "{}", status.text());
    assert!(
        status.text().contains("live processes"),
        "{}",
        status.text()
    );
    // And a new connection.
    assert_eq!(
        Client::connect(addr).get("/status", Some(&admin)).status,
        200
    );
    // The same figures as JSON, for tools.
    let json = client.get("/status.json", Some(&admin));
    assert_eq!(json.status, 200, "{}", json.text());
    let stats: serde_json::Value = serde_json::from_str(&json.text()).expect("valid JSON");
    assert!(
        stats["live_processes"].as_u64().is_some_and(|n| n > 0),
        "{stats}"
    );
    assert!(stats["counts"]["handled"].as_u64().is_some(), "{stats}");
    let groups = stats["groups"].as_array().expect("a list of groups");
    assert!(groups.iter().any(|g| g["name"] == "default"), "{stats}");
    assert!(
        groups[0]["queue_latency"]["p90"]["nanos"].is_u64(),
        "{stats}"
    );

    // Anonymous: forbidden, on its connection's session or on an anonymous one.
    let mut anonymous = server.connect();
    let response = anonymous.get("/status", None);
    assert_eq!(response.status, 403);
    assert_eq!(response.session_cookie(), None, "/status starts no session");
    let anonymous_token = anonymous
        .get("/resources/1", None)
        .session_cookie()
        .expect("an anonymous session");
    assert_ne!(anonymous_token, admin);
    assert_eq!(anonymous.get("/status", Some(&anonymous_token)).status, 403);
    assert_eq!(
        anonymous.get("/status.json", Some(&anonymous_token)).status,
        403
    );

    // A user is not an admin.
    let alice = login(addr, "alice", "wonderland");
    assert_eq!(
        Client::connect(addr).get("/status", Some(&alice)).status,
        403
    );

    // Wrong password, unknown user, missing fields: 401, no session.
    for body in [
        "user=admin&password=wrong",
        "user=nobody&password=secret",
        "user=admin",
        "",
    ] {
        let response = Client::connect(addr).exchange(post_form("/login", body, None).as_bytes());
        assert_eq!(response.status, 401, "{body:?}");
    }

    drop((client, anonymous));
    server.wait_for_baseline();
    server.stop();
}

/// A cookie the server does not know (a session forgotten, a server restarted) is answered
/// as a cookie-less client is: with a new anonymous session.
#[test]
fn an_unknown_session_cookie_gets_a_new_session() {
    let server = TestServer::start(demo_options());
    let mut client = server.connect();
    client.send(get("/resources/1", Some("0123456789abcdef0123456789abcdef")).as_bytes());
    let answer = client.try_read_response();
    drop(client);
    // Stop the server before asserting, so a failure does not leave it busy.
    let back_to_idle = server.rt.block_until_idle_timeout(Duration::from_secs(5));
    server.stop();
    let response = answer.expect("an answer to a request with an unknown cookie");
    assert_eq!(response.status, 200);
    assert!(response.session_cookie().is_some());
    assert!(back_to_idle, "the server went idle after the client left");
}
