//! Cookies and the headers that go with them, over plain HTTP (`tls.rs` has the HTTPS side:
//! `Secure`, HSTS): every cookie `HttpOnly` and `SameSite=Lax`, an answer that sets one
//! `Cache-Control: private`, a session started only where the site needs one (a login, a
//! configured path), never by a static file or a 304, and no HSTS over plain HTTP.

use super::*;

/// Every `Set-Cookie` value of `response`.
fn set_cookies(response: &Response) -> Vec<&str> {
    response
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("set-cookie"))
        .map(|(_, v)| v.as_str())
        .collect()
}

/// The attribute names of a `Set-Cookie` value, lowercase.
fn attributes(cookie: &str) -> Vec<String> {
    cookie
        .split(';')
        .skip(1)
        .map(|a| a.trim().to_ascii_lowercase())
        .collect()
}

#[test]
fn a_session_cookie_is_http_only_same_site_lax_and_private() {
    let mut options = demo_options();
    // Configured, but HSTS is only ever sent over TLS.
    options.hsts = Some(Duration::from_secs(31_536_000));
    let server = TestServer::start(options);
    let mut client = server.connect();

    let started = client.get("/resources/1", None);
    assert_eq!(started.status, 200);
    let cookies = set_cookies(&started);
    assert_eq!(cookies.len(), 1, "{cookies:?}");
    let attributes = attributes(cookies[0]);
    for wanted in ["httponly", "samesite=lax", "path=/"] {
        assert!(
            attributes.iter().any(|a| a == wanted),
            "{wanted} in {cookies:?}"
        );
    }
    assert!(
        !attributes.iter().any(|a| a == "secure"),
        "not Secure over plain HTTP: {cookies:?}"
    );
    assert_eq!(started.header("cache-control"), Some("private"));
    assert_eq!(started.header("strict-transport-security"), None);

    // Answers that set no cookie are left as they were.
    let token = started.session_cookie().expect("a session");
    let next = client.get("/resources/2", Some(&token));
    assert!(set_cookies(&next).is_empty());
    assert_eq!(next.header("cache-control"), None);
    let file = client.get("/files/index.html", Some(&token));
    assert_eq!(file.header("cache-control"), None);
    assert_eq!(file.header("strict-transport-security"), None);

    // A login's cookie too.
    let login =
        client.exchange(post_form("/login", "user=alice&password=wonderland", None).as_bytes());
    assert_eq!(login.status, 200);
    let cookies = set_cookies(&login);
    assert_eq!(cookies.len(), 1, "{cookies:?}");
    let attributes = self::attributes(cookies[0]);
    assert!(attributes.iter().any(|a| a == "httponly"), "{cookies:?}");
    assert!(
        attributes.iter().any(|a| a == "samesite=lax"),
        "{cookies:?}"
    );
    assert_eq!(login.header("cache-control"), Some("private"));

    drop(client);
    server.wait_for_baseline();
    server.stop();
}

/// With sessions starting everywhere (`--session-path /`), a static file and a 304 still
/// set no cookie: the session starts with the first answer that is neither.
#[test]
fn static_files_and_304s_never_set_a_session_cookie() {
    let mut options = demo_options();
    options.session_paths = vec!["/".to_owned()];
    let server = TestServer::start(options);
    let mut client = server.connect();

    let file = client.get("/files/index.html", None);
    assert_eq!(file.status, 200);
    assert!(set_cookies(&file).is_empty(), "{:?}", file.headers);
    let etag = file.header("etag").expect("an ETag").to_owned();
    let request = format!(
        "GET /files/index.html HTTP/1.1\r\nHost: localhost\r\nIf-None-Match: {etag}\r\n\r\n"
    );
    let not_modified = client.exchange(request.as_bytes());
    assert_eq!(not_modified.status, 304);
    assert!(
        set_cookies(&not_modified).is_empty(),
        "{:?}",
        not_modified.headers
    );
    let redirect = client.get("/files", None);
    assert_eq!(redirect.status, 301);
    assert!(set_cookies(&redirect).is_empty());
    // A file that is not there is still a file request.
    assert!(set_cookies(&client.get("/files/missing.txt", None)).is_empty());

    // Anything else under `/` starts one, once.
    let status = client.get("/status", None);
    assert_eq!(status.status, 403);
    let token = status.session_cookie().expect("a session starts under /");
    let again = client.get("/status", Some(&token));
    assert!(set_cookies(&again).is_empty());

    drop(client);
    server.wait_for_baseline();
    server.stop();
}

/// Sessions start under the configured paths only; a client elsewhere is served without one.
#[test]
fn sessions_start_only_under_the_configured_paths() {
    let mut options = demo_options();
    options.session_paths = vec!["/status".to_owned()];
    let server = TestServer::start(options);
    let addr = server.addr();
    let admin = login(addr, "admin", "secret");
    let sessions = |admin: &str| {
        let response = Client::connect(addr).get("/status/sessions", Some(admin));
        assert_eq!(response.status, 200, "{}", response.text());
        response.text()
    };
    assert!(
        sessions(&admin).starts_with("sessions 1\n"),
        "{}",
        sessions(&admin)
    );

    let mut client = server.connect();
    for path in ["/resources/1", "/resources?limit=2", "/files/index.html"] {
        let response = client.get(path, None);
        assert_eq!(response.status, 200, "{path}");
        assert!(
            set_cookies(&response).is_empty(),
            "{path}: {:?}",
            response.headers
        );
    }
    assert!(
        sessions(&admin).starts_with("sessions 1\n"),
        "nothing stored for them"
    );
    let status = client.get("/status", None);
    assert!(status.session_cookie().is_some(), "{:?}", status.headers);
    assert!(
        sessions(&admin).starts_with("sessions 2\n"),
        "{}",
        sessions(&admin)
    );

    drop(client);
    server.wait_for_baseline();
    server.stop();
}
