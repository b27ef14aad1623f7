//! HTTP as clients expect it, compared with what nginx and the usual static file servers
//! do: `Date` and validators, conditional requests (304, 412), byte ranges (206, 416),
//! percent-encoded paths, directories, `Expect: 100-continue`, chunked request bodies and
//! the `Host` rule. Each test also checks that the connection stays usable after the answers
//! that keep it, by sending the next request on it.

use std::fs::{File, FileTimes};

use super::*;

/// The modification time given to the test files: 2023-11-14 22:13:20 UTC and a fraction.
fn mtime() -> SystemTime {
    UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789)
}

/// `mtime()` as an HTTP-date.
const LAST_MODIFIED: &str = "Tue, 14 Nov 2023 22:13:20 GMT";

/// 100 bytes: `0123456789` ten times.
fn data() -> Vec<u8> {
    b"0123456789".repeat(10)
}

/// A site and, beside its root, a file that must never be served.
struct TestSite {
    dir: TempRoot,
}

impl TestSite {
    /// `public/` (the root): `index.html`, `data.txt`, `a b.txt`, `sub/index.html`,
    /// `empty/`, `big.bin` (20 MiB, sparse); `secret.txt` beside it.
    fn new(tag: &str) -> TestSite {
        let dir = TempRoot::new(tag);
        let root = dir.path().join("public");
        std::fs::create_dir_all(root.join("sub")).expect("sub/");
        std::fs::create_dir_all(root.join("empty")).expect("empty/");
        let data = data();
        let files: [(&str, &[u8]); 4] = [
            ("index.html", b"<h1>root</h1>\n"),
            ("data.txt", &data),
            ("a b.txt", b"spaced\n"),
            ("sub/index.html", b"<h1>sub</h1>\n"),
        ];
        for (name, bytes) in files {
            std::fs::write(root.join(name), bytes).expect("a site file");
            let file = File::options()
                .write(true)
                .open(root.join(name))
                .expect("reopen");
            file.set_times(FileTimes::new().set_modified(mtime()))
                .expect("set the mtime");
        }
        File::create(root.join("big.bin"))
            .and_then(|f| f.set_len(20 * 1024 * 1024))
            .expect("a sparse 20 MiB file");
        std::fs::write(dir.path().join("secret.txt"), b"SECRET\n").expect("the secret");
        TestSite { dir }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("public")
    }

    fn start(&self) -> TestServer {
        TestServer::start(Options::new(self.root(), Users::default_demo()))
    }

    /// The entity tag the server should give `name`: mtime seconds and nanoseconds and
    /// length, in hex, quoted (computed from the file system's own record of the time).
    fn etag(&self, name: &str) -> String {
        let meta = std::fs::metadata(self.root().join(name)).expect("metadata");
        let since = meta
            .modified()
            .expect("mtime")
            .duration_since(UNIX_EPOCH)
            .expect("after 1970");
        format!(
            "\"{:x}.{:x}-{:x}\"",
            since.as_secs(),
            since.subsec_nanos(),
            meta.len()
        )
    }
}

/// A GET of `path` with extra header lines (each ending in CRLF).
fn get_with(path: &str, headers: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{headers}\r\n")
}

/// Asserts the response carries a `Date` that is an HTTP-date within a minute of now.
fn assert_fresh_date(response: &Response) {
    let date = response.header("date").expect("a Date header");
    let date = httpdate::parse_http_date(date).expect("an HTTP-date");
    let now = SystemTime::now();
    let skew = now.duration_since(date).unwrap_or_else(|e| e.duration());
    assert!(
        skew < Duration::from_secs(60),
        "Date {date:?} is far from {now:?}"
    );
}

#[test]
fn files_carry_date_validators_and_accept_ranges() {
    let site = TestSite::new("validators");
    let server = site.start();
    let mut client = server.connect();

    let response = client.exchange(get_with("/files/data.txt", "").as_bytes());
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.body, data());
    assert_eq!(
        response.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(
        response.header("etag"),
        Some(site.etag("data.txt").as_str())
    );
    assert_eq!(response.header("last-modified"), Some(LAST_MODIFIED));
    assert_eq!(response.header("accept-ranges"), Some("bytes"));
    assert_eq!(response.header("content-length"), Some("100"));
    assert_fresh_date(&response);

    // Not a file: a Date all the same, and the connection goes on.
    let missing = client.exchange(get_with("/nope", "").as_bytes());
    assert_eq!(missing.status, 404);
    assert_fresh_date(&missing);
    assert_eq!(missing.header("etag"), None);
    let again = client.exchange(get_with("/files/index.html", "").as_bytes());
    assert_eq!(again.status, 200);
    assert_eq!(again.body, b"<h1>root</h1>\n");
    assert_eq!(
        again.header("content-type"),
        Some("text/html; charset=utf-8")
    );

    // A refused request's answer has one too.
    let mut refused = server.connect();
    let response = refused.exchange(b"garbage\r\n\r\n");
    assert_eq!(response.status, 400);
    assert_fresh_date(&response);
    refused.assert_closed_by_server();

    drop(client);
    server.wait_for_baseline();
    server.stop();
}

#[test]
fn conditional_requests_get_304_and_keep_the_connection() {
    let site = TestSite::new("conditional");
    let server = site.start();
    let etag = site.etag("data.txt");
    let mut client = server.connect();

    let not_modified = [
        format!("If-None-Match: {etag}\r\n"),
        format!("If-None-Match: W/{etag}\r\n"),
        format!("If-None-Match: \"other\", {etag}\r\n"),
        format!("If-None-Match: \"other\"\r\nIf-None-Match: {etag}\r\n"),
        "If-None-Match: *\r\n".to_owned(),
        format!("If-Modified-Since: {LAST_MODIFIED}\r\n"),
        "If-Modified-Since: Wed, 15 Nov 2023 00:00:00 GMT\r\n".to_owned(),
    ];
    for headers in &not_modified {
        let response = client.exchange(get_with("/files/data.txt", headers).as_bytes());
        assert_eq!(response.status, 304, "{headers:?}");
        assert!(response.body.is_empty(), "{headers:?}");
        assert_eq!(response.header("content-length"), None, "{headers:?}");
        assert_eq!(response.header("etag"), Some(etag.as_str()), "{headers:?}");
        assert_eq!(response.header("last-modified"), Some(LAST_MODIFIED));
        assert_eq!(response.header("connection"), Some("keep-alive"));
        assert_fresh_date(&response);
    }

    let modified = [
        "If-None-Match: \"other\"\r\n".to_owned(),
        format!("If-None-Match: {}\r\n", etag.to_uppercase()),
        "If-Modified-Since: Tue, 14 Nov 2023 22:13:19 GMT\r\n".to_owned(),
        "If-Modified-Since: not a date\r\n".to_owned(),
        // If-None-Match decides alone when present.
        format!("If-None-Match: \"other\"\r\nIf-Modified-Since: {LAST_MODIFIED}\r\n"),
    ];
    for headers in &modified {
        let response = client.exchange(get_with("/files/data.txt", headers).as_bytes());
        assert_eq!(response.status, 200, "{headers:?}");
        assert_eq!(response.body, data(), "{headers:?}");
    }

    // HEAD too.
    client.send(
        format!(
            "HEAD /files/data.txt HTTP/1.1\r\nHost: localhost\r\nIf-None-Match: {etag}\r\n\r\n"
        )
        .as_bytes(),
    );
    let head = client.read_response();
    assert_eq!(head.status, 304);
    assert_eq!(head.header("etag"), Some(etag.as_str()));

    // Still in step: the next answer is whole.
    let last = client.exchange(get_with("/files/data.txt", "").as_bytes());
    assert_eq!(last.status, 200);
    assert_eq!(last.body, data());
    drop(client);
    server.wait_for_baseline();
    server.stop();
}

/// `If-Match` and `If-Unmodified-Since` (412 when false), and RFC 9110 §13.2.2's order:
/// each precondition is evaluated only when the ones before it passed or were absent.
#[test]
fn failed_preconditions_get_412_in_rfc_9110_order() {
    let site = TestSite::new("preconditions");
    let server = site.start();
    let etag = site.etag("data.txt");
    let mut client = server.connect();
    let before = "Tue, 14 Nov 2023 22:13:19 GMT";

    let failed = [
        "If-Match: \"other\"\r\n".to_owned(),
        // The strong comparison: a weak tag never matches.
        format!("If-Match: W/{etag}\r\n"),
        format!("If-Unmodified-Since: {before}\r\n"),
        // If-Match is evaluated first: it fails, so If-None-Match (which would be a 304)
        // is not looked at.
        format!("If-Match: \"other\"\r\nIf-None-Match: {etag}\r\n"),
        format!("If-Unmodified-Since: {before}\r\nIf-Modified-Since: {LAST_MODIFIED}\r\n"),
        // A failed precondition wins over a range.
        "If-Match: \"other\"\r\nRange: bytes=0-9\r\n".to_owned(),
    ];
    for headers in &failed {
        let response = client.exchange(get_with("/files/data.txt", headers).as_bytes());
        assert_eq!(response.status, 412, "{headers:?}");
        assert_eq!(response.text(), "412 Precondition Failed\n", "{headers:?}");
        assert_eq!(response.header("connection"), Some("keep-alive"));
    }

    let full = [
        format!("If-Match: {etag}\r\n"),
        "If-Match: *\r\n".to_owned(),
        format!("If-Match: \"other\", {etag}\r\n"),
        format!("If-Unmodified-Since: {LAST_MODIFIED}\r\n"),
        "If-Unmodified-Since: not a date\r\n".to_owned(),
        // If-Match holds, so If-Unmodified-Since is not evaluated.
        format!("If-Match: {etag}\r\nIf-Unmodified-Since: {before}\r\n"),
    ];
    for headers in &full {
        let response = client.exchange(get_with("/files/data.txt", headers).as_bytes());
        assert_eq!(response.status, 200, "{headers:?}");
        assert_eq!(response.body, data(), "{headers:?}");
    }

    // Both pass, then If-None-Match fails: 304.
    let headers = format!("If-Match: {etag}\r\nIf-None-Match: {etag}\r\n");
    let response = client.exchange(get_with("/files/data.txt", &headers).as_bytes());
    assert_eq!(response.status, 304);
    // Both pass, then a range.
    let headers = format!("If-Unmodified-Since: {LAST_MODIFIED}\r\nRange: bytes=0-9\r\n");
    let response = client.exchange(get_with("/files/data.txt", &headers).as_bytes());
    assert_eq!(response.status, 206);
    assert_eq!(response.body, b"0123456789");

    drop(client);
    server.wait_for_baseline();
    server.stop();
}

#[test]
fn single_byte_ranges_get_206_and_bad_ones_416() {
    let site = TestSite::new("ranges");
    let server = site.start();
    let etag = site.etag("data.txt");
    let data = data();
    let mut client = server.connect();

    for (range, first, last) in [
        ("bytes=0-9", 0, 9),
        ("bytes=90-", 90, 99),
        ("bytes=-5", 95, 99),
        ("bytes=95-1000", 95, 99),
        ("bytes=42-42", 42, 42),
        ("bytes=-500", 0, 99),
    ] {
        let response =
            client.exchange(get_with("/files/data.txt", &format!("Range: {range}\r\n")).as_bytes());
        assert_eq!(response.status, 206, "{range}: {}", response.text());
        assert_eq!(
            response.header("content-range"),
            Some(format!("bytes {first}-{last}/100").as_str()),
            "{range}"
        );
        assert_eq!(response.body, &data[first..=last], "{range}");
        let len = (last - first + 1).to_string();
        assert_eq!(response.header("content-length"), Some(len.as_str()));
        assert_eq!(response.header("etag"), Some(etag.as_str()));
        assert_eq!(response.header("accept-ranges"), Some("bytes"));
        assert_eq!(
            response.header("content-type"),
            Some("text/plain; charset=utf-8")
        );
    }

    for range in ["bytes=100-", "bytes=1000-2000", "bytes=-0"] {
        let response =
            client.exchange(get_with("/files/data.txt", &format!("Range: {range}\r\n")).as_bytes());
        assert_eq!(response.status, 416, "{range}");
        assert_eq!(response.header("content-range"), Some("bytes */100"));
        assert!(!response.closes(), "{range}: a 416 keeps the connection");
    }

    // Several ranges, or a malformed one, or another unit: the whole file.
    for range in ["bytes=0-1,5-6", "bytes=5-3", "lines=1-2", "bytes=x-"] {
        let response =
            client.exchange(get_with("/files/data.txt", &format!("Range: {range}\r\n")).as_bytes());
        assert_eq!(response.status, 200, "{range}");
        assert_eq!(response.body, data, "{range}");
    }

    // If-Range: the range only while the client's version is current.
    for (if_range, status) in [
        (etag.clone(), 206),
        (LAST_MODIFIED.to_owned(), 206),
        ("\"stale\"".to_owned(), 200),
        (format!("W/{etag}"), 200),
        ("Tue, 14 Nov 2023 22:13:19 GMT".to_owned(), 200),
    ] {
        let headers = format!("Range: bytes=0-9\r\nIf-Range: {if_range}\r\n");
        let response = client.exchange(get_with("/files/data.txt", &headers).as_bytes());
        assert_eq!(response.status, status, "If-Range: {if_range}");
        let expected: &[u8] = if status == 206 { &data[..10] } else { &data };
        assert_eq!(response.body, expected, "If-Range: {if_range}");
    }

    // HEAD ignores Range (RFC 9110 §14.2 defines it for GET alone).
    client.send(b"HEAD /files/data.txt HTTP/1.1\r\nHost: localhost\r\nRange: bytes=0-9\r\n\r\n");
    let head = client.read_head_response();
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-length"), Some("100"));

    // A file larger than a whole answer may hold: its ranges are still served, read alone.
    let big = 20 * 1024 * 1024;
    let response = client.exchange(get_with("/files/big.bin", "Range: bytes=-4\r\n").as_bytes());
    assert_eq!(response.status, 206);
    assert_eq!(
        response.header("content-range"),
        Some(format!("bytes {}-{}/{big}", big - 4, big - 1).as_str())
    );
    assert_eq!(response.body, [0, 0, 0, 0]);
    let whole = client.exchange(get_with("/files/big.bin", "").as_bytes());
    assert_eq!(whole.status, 413);

    let last = client.exchange(get_with("/files/data.txt", "").as_bytes());
    assert_eq!(last.status, 200);
    assert_eq!(last.body, data);
    drop(client);
    server.wait_for_baseline();
    server.stop();
}

#[test]
fn percent_encoded_paths_are_decoded_then_checked() {
    let site = TestSite::new("percent");
    let server = site.start();
    let mut client = server.connect();

    for (target, body) in [
        ("/files/d%61ta.txt", data()),
        ("/files/a%20b.txt", b"spaced\n".to_vec()),
        ("/files/s%75b/ind%65x.html", b"<h1>sub</h1>\n".to_vec()),
        ("/files/%64%61%74%61%2E%74%78%74", data()),
    ] {
        let response = client.exchange(get_with(target, "").as_bytes());
        assert_eq!(response.status, 200, "{target}: {}", response.text());
        assert_eq!(response.body, body, "{target}");
    }
    let missing = client.exchange(get_with("/files/D%61TA.txt", "").as_bytes());
    assert_eq!(missing.status, 404);

    // Sent raw: encoded traversal, encoded separators, NUL, bad UTF-8, bad escapes.
    for target in [
        "/files/%2e%2e/secret.txt",
        "/files/%2E%2E/secret.txt",
        "/files/.%2e/secret.txt",
        "/files/%2e./secret.txt",
        "/files/..%2fsecret.txt",
        "/files/..%2Fsecret.txt",
        "/files/%2e%2e%2fsecret.txt",
        "/files/sub/%2e%2e/%2e%2e/secret.txt",
        "/files/sub%2f..%2f..%2fsecret.txt",
        "/files/sub%2Findex.html",
        "/files/..%5csecret.txt",
        "/files/data.txt%00",
        "/files/%00",
        "/files/%ff",
        "/files/%c0%ae%c0%ae/secret.txt",
        "/files/%zz",
        "/files/%2",
        "/%2e%2e/secret.txt",
    ] {
        let response = client.exchange(get_with(target, "").as_bytes());
        assert_eq!(response.status, 400, "{target}: {}", response.text());
        assert!(!response.text().contains("SECRET"), "{target}");
        assert!(
            !response.closes(),
            "{target}: a bad path keeps the connection"
        );
    }

    let last = client.exchange(get_with("/files/ind%65x.html", "").as_bytes());
    assert_eq!(last.status, 200);
    assert_eq!(last.body, b"<h1>root</h1>\n");
    drop(client);
    server.wait_for_baseline();
    server.stop();
}

#[test]
fn directories_serve_their_index_or_redirect() {
    let site = TestSite::new("directories");
    let server = site.start();
    let mut client = server.connect();

    for (target, body) in [
        ("/files/sub/", &b"<h1>sub</h1>\n"[..]),
        ("/files/", b"<h1>root</h1>\n"),
        ("/files/sub/index.html", b"<h1>sub</h1>\n"),
    ] {
        let response = client.exchange(get_with(target, "").as_bytes());
        assert_eq!(response.status, 200, "{target}: {}", response.text());
        assert_eq!(response.body, body, "{target}");
        assert_eq!(
            response.header("content-type"),
            Some("text/html; charset=utf-8")
        );
    }

    for (target, location) in [
        ("/files/sub", "/files/sub/"),
        ("/files/empty", "/files/empty/"),
        ("/files/s%75b", "/files/s%75b/"),
        ("/files/sub?x=1", "/files/sub/?x=1"),
        ("/files", "/files/"),
    ] {
        let response = client.exchange(get_with(target, "").as_bytes());
        assert_eq!(response.status, 301, "{target}: {}", response.text());
        assert_eq!(response.header("location"), Some(location), "{target}");
        assert!(!response.closes(), "{target}");
    }

    // A directory without an index, and a file taken for a directory.
    for target in ["/files/empty/", "/files/data.txt/", "/files/missing/"] {
        let response = client.exchange(get_with(target, "").as_bytes());
        assert_eq!(response.status, 404, "{target}: {}", response.text());
    }

    let last = client.exchange(get_with("/files/data.txt", "").as_bytes());
    assert_eq!(last.status, 200);
    assert_eq!(last.body, data());
    drop(client);
    server.wait_for_baseline();
    server.stop();
}

/// A login POST head (no body yet) with `extra` header lines.
fn login_head(body_len: usize, extra: &str) -> String {
    format!(
        "POST /login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: {body_len}\r\n{extra}\r\n"
    )
}

#[test]
fn expect_100_continue_is_answered_before_the_body() {
    let server = TestServer::start(demo_options());
    let body = "user=admin&password=secret";

    // The interim answer, and nothing else, until the body is sent.
    let mut client = server.connect();
    client.send(login_head(body.len(), "Expect: 100-continue\r\n").as_bytes());
    let interim = client.read_response();
    assert_eq!(interim.status, 100);
    assert!(interim.headers.is_empty(), "{:?}", interim.headers);
    assert!(client.buf.is_empty(), "only the 100 before the body");
    client.send(body.as_bytes());
    let response = client.read_response();
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.text(), "welcome admin (admin)\n");
    let admin = response.session_cookie().expect("a session");
    let status = client.get("/status", Some(&admin));
    assert_eq!(status.status, 200, "the connection goes on");
    drop(client);

    // Behind a pipelined request: after its answer, never before.
    let mut client = server.connect();
    let mut burst = get("/resources/1", None);
    burst.push_str(&login_head(body.len(), "Expect: 100-continue\r\n"));
    client.send(burst.as_bytes());
    let first = client.read_response();
    assert_eq!(first.status, 200);
    assert!(first.text().starts_with("{\"id\":1,"), "{}", first.text());
    assert_eq!(client.read_response().status, 100);
    client.send(body.as_bytes());
    assert_eq!(client.read_response().status, 200);
    drop(client);

    // No body: no interim answer.
    let mut client = server.connect();
    let response = client.exchange(get_with("/resources/2", "Expect: 100-continue\r\n").as_bytes());
    assert_eq!(response.status, 200);
    assert_eq!(client.get("/resources/3", None).status, 200);
    drop(client);

    // Refused before the body: the final answer at once, no 100, and the connection closes
    // (whether the body follows is the client's guess).
    let mut client = server.connect();
    let response =
        client.exchange(login_head(2 * 1024 * 1024, "Expect: 100-continue\r\n").as_bytes());
    assert_eq!(response.status, 413);
    assert!(response.closes());
    client.assert_closed_by_server();

    let mut client = server.connect();
    let response = client.exchange(login_head(body.len(), "Expect: teapot\r\n").as_bytes());
    assert_eq!(response.status, 417);
    assert!(response.closes());
    client.assert_closed_by_server();

    drop(client);
    server.wait_for_baseline();
    server.stop();
}

/// A chunked login POST head.
const CHUNKED_LOGIN: &str = "POST /login HTTP/1.1\r\nHost: localhost\r\n\
    Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n";

#[test]
fn chunked_request_bodies_are_read_and_the_connection_kept() {
    let server = TestServer::start(demo_options());

    let mut client = server.connect();
    let chunks = "5\r\nuser=\r\n6;name=value\r\nadmin&\r\nF\r\npassword=secret\r\n0\r\n\
                  X-Checksum: none\r\n\r\n";
    let response = client.exchange(format!("{CHUNKED_LOGIN}{chunks}").as_bytes());
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.text(), "welcome admin (admin)\n");
    assert!(!response.closes());
    let admin = response.session_cookie().expect("a session");
    assert_eq!(client.get("/status", Some(&admin)).status, 200);

    // Pipelined behind a chunked body, sent in one go.
    let alice = "user=alice&password=wonderland";
    let mut burst = format!("{CHUNKED_LOGIN}{:x}\r\n{alice}\r\n0\r\n\r\n", alice.len());
    burst.push_str(&get("/resources/5", None));
    client.send(burst.as_bytes());
    let login = client.read_response();
    assert_eq!(login.status, 200, "{}", login.text());
    assert_eq!(login.text(), "welcome alice (user)\n");
    let next = client.read_response();
    assert_eq!(next.status, 200);
    assert!(next.text().starts_with("{\"id\":5,"), "{}", next.text());

    // Refused, and closed: the framing cannot be trusted after these.
    let head = |te: &str, extra: &str| {
        format!("POST /login HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: {te}\r\n{extra}\r\n")
    };
    let refused = [
        (head("chunked", "Content-Length: 5\r\n") + "0\r\n\r\n", 400),
        (head("gzip", ""), 501),
        (head("gzip, chunked", ""), 501),
        (head("chunked, chunked", ""), 400),
        (head("chunked", "") + "zz\r\n", 400),
        (head("chunked", "") + "3\r\nabcdef\r\n", 400),
        (head("chunked", "") + "5\nhello\r\n", 400),
        (head("chunked", "") + "fffffffffffffffff\r\n", 400),
        (head("chunked", "") + "100001\r\n", 413),
        (
            "POST /login HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".to_owned(),
            400,
        ),
    ];
    for (request, status) in refused {
        let mut client = server.connect();
        let response = client.exchange(request.as_bytes());
        assert_eq!(response.status, status, "{request:?}");
        assert!(response.closes(), "{request:?}");
        client.assert_closed_by_server();
    }

    drop(client);
    server.wait_for_baseline();
    server.stop();
}

#[test]
fn http_1_1_requires_exactly_one_host() {
    let server = TestServer::start(demo_options());

    for request in [
        "GET /resources/1 HTTP/1.1\r\n\r\n",
        "GET /resources/1 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        "GET /resources/1 HTTP/1.1\r\nHost: localhost\r\nhost: localhost\r\n\r\n",
        "GET /resources/1 HTTP/1.1\r\nHost: a/b\r\n\r\n",
        "GET /resources/1 HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n",
    ] {
        let mut client = server.connect();
        let response = client.exchange(request.as_bytes());
        assert_eq!(response.status, 400, "{request:?}");
        assert!(response.closes(), "{request:?}");
        client.assert_closed_by_server();
    }

    // HTTP/1.0 may leave it out.
    let mut old = server.connect();
    let response = old.exchange(b"GET /resources/1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert_eq!(response.status, 200);
    let cookie = response.session_cookie();
    let response = old.exchange(
        format!(
            "GET /resources/2 HTTP/1.0\r\nConnection: keep-alive\r\nCookie: session={}\r\n\r\n",
            cookie.unwrap_or_default()
        )
        .as_bytes(),
    );
    assert_eq!(response.status, 200);

    // With one Host, HTTP/1.1 is served and kept.
    let mut client = server.connect();
    assert_eq!(client.get("/resources/1", None).status, 200);
    assert_eq!(client.get("/resources/2", None).status, 200);

    drop((old, client));
    server.wait_for_baseline();
    server.stop();
}
