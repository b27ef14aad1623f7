//! End to end against a tiny fake server: the real threads, sockets, login, keep-alive and
//! 503-then-close path, checked against what the server saw.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use crate::cli::{Config, Credentials, Target};
use crate::report::Report;
use crate::{json, run, table};

/// What the fake server saw.
#[derive(Default)]
struct Seen {
    requests: AtomicU64,
    logins_ok: AtomicU64,
    gets_admin_cookie: AtomicU64,
    gets_user_cookie: AtomicU64,
    gets_no_cookie: AtomicU64,
    gets_other_cookie: AtomicU64,
}

/// Starts the fake server: 200 to GETs, 200 plus a session cookie to a good `POST /login`,
/// 401 to a bad one, and every 5th request a 503 that closes the connection.
fn fake_server() -> (u16, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Seen::default());
    let s = Arc::clone(&seen);
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let s = Arc::clone(&s);
            thread::spawn(move || {
                let _ = serve(stream, &s);
            });
        }
    });
    (port, seen)
}

fn serve(stream: TcpStream, seen: &Seen) -> std::io::Result<()> {
    let mut out = stream.try_clone()?;
    let mut r = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if r.read_line(&mut request_line)? == 0 {
            return Ok(());
        }
        let (mut length, mut cookie) = (0usize, None);
        loop {
            let mut line = String::new();
            r.read_line(&mut line)?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').unwrap();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap(),
                "cookie" => cookie = Some(value.trim().to_string()),
                _ => {}
            }
        }
        let mut body = vec![0; length];
        r.read_exact(&mut body)?;
        let n = seen.requests.fetch_add(1, Ordering::SeqCst) + 1;
        if n.is_multiple_of(5) {
            out.write_all(
                b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\n\
                  Content-Length: 4\r\n\r\nbusy",
            )?;
            return Ok(());
        }
        if request_line.starts_with("POST /login ") {
            let body = String::from_utf8_lossy(&body);
            let user = match body.as_ref() {
                "user=admin&password=secret" => Some("admin"),
                "user=alice&password=wonderland" => Some("alice"),
                _ => None,
            };
            match user {
                Some(user) => {
                    seen.logins_ok.fetch_add(1, Ordering::SeqCst);
                    write!(
                        out,
                        "HTTP/1.1 200 OK\r\nSet-Cookie: session=tok-{user}; Path=/; HttpOnly\r\n\
                         Content-Length: 2\r\n\r\nok"
                    )?;
                }
                None => out.write_all(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")?,
            }
            continue;
        }
        let counter = match cookie.as_deref() {
            None => &seen.gets_no_cookie,
            Some("session=tok-admin") => &seen.gets_admin_cookie,
            Some("session=tok-alice") => &seen.gets_user_cookie,
            Some(_) => &seen.gets_other_cookie,
        };
        counter.fetch_add(1, Ordering::SeqCst);
        out.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world")?;
    }
}

fn config(port: u16, duration: Duration) -> Config {
    Config {
        target: Target {
            host: "127.0.0.1".into(),
            port,
            authority: format!("127.0.0.1:{port}"),
        },
        admins: 2,
        users: 2,
        anonymous: 2,
        think: Duration::from_millis(5),
        think_fixed: false,
        honor_retry_after: false,
        duration,
        warmup: Duration::ZERO,
        paths: vec![
            "/files/index.html".into(),
            "/resources".into(),
            "/resources/3".into(),
        ],
        admin_cred: Credentials {
            user: "admin".into(),
            password: "secret".into(),
        },
        user_cred: Credentials {
            user: "alice".into(),
            password: "wonderland".into(),
        },
        timeout: Duration::from_secs(2),
        json: false,
        seed: 7,
    }
}

fn row<'a>(report: &'a Report, name: &str) -> &'a crate::report::Row {
    report.rows.iter().find(|r| r.name == name).unwrap()
}

#[test]
fn closed_loop_against_fake_server_counts_add_up_and_sends_cookies() {
    let (port, seen) = fake_server();
    let report = run::run(&config(port, Duration::from_secs(1))).unwrap();
    println!("{}", table::render(&report));
    println!("{}", json::render(&report));

    for name in ["admin", "user", "anonymous"] {
        let r = row(&report, name);
        assert_eq!(r.sessions, 2, "{name}");
        assert!(r.counts.ok > 0, "{name} got no 200s");
        assert_eq!(
            r.hist.len(),
            r.counts.responses(),
            "{name}: one latency per response"
        );
    }
    assert_eq!(row(&report, "login_failed").sessions, 0);

    let t = &report.total;
    let c = &t.counts;
    assert_eq!(t.sessions, 6);
    assert_eq!(
        c.requests,
        c.ok + c.unavailable + c.other + c.conn_errors + c.timeouts + c.malformed
    );
    let summed: u64 = report.rows.iter().map(|r| r.counts.requests).sum();
    assert_eq!(c.requests, summed);
    assert!(c.unavailable > 0, "every 5th request is a 503");
    assert_eq!(
        (c.other, c.errors()),
        (0, 0),
        "the fake server gives no reason for errors"
    );
    // Each 503 closes the connection, so the next request on it reconnects: every 503 but
    // each session's last (the run may end before that session asks again) is followed by a
    // connect.
    assert!(
        c.connects + t.sessions as u64 >= c.unavailable,
        "{} connects, {} 503s, {} sessions",
        c.connects,
        c.unavailable,
        t.sessions
    );
    assert_eq!(t.hist.len(), c.responses());
    // Logins are extra requests and a request in flight at the end is dropped, so the server
    // sees at least as many as were counted.
    assert!(seen.requests.load(Ordering::SeqCst) >= c.requests);

    assert_eq!(seen.logins_ok.load(Ordering::SeqCst), 4);
    assert!(
        seen.gets_admin_cookie.load(Ordering::SeqCst) > 0,
        "admins send their cookie"
    );
    assert!(
        seen.gets_user_cookie.load(Ordering::SeqCst) > 0,
        "users send their cookie"
    );
    assert!(
        seen.gets_no_cookie.load(Ordering::SeqCst) > 0,
        "anonymous sessions send none"
    );
    assert_eq!(seen.gets_other_cookie.load(Ordering::SeqCst), 0);
    let jain = t.jain_ok.unwrap();
    assert!(jain > 0.5 && jain <= 1.0 + 1e-9, "jain {jain}");
}

#[test]
fn refused_login_moves_the_session_to_login_failed() {
    let (port, seen) = fake_server();
    let mut cfg = config(port, Duration::from_millis(300));
    cfg.user_cred.password = "wrong".into();
    let report = run::run(&cfg).unwrap();
    assert_eq!(row(&report, "admin").sessions, 2);
    assert_eq!(row(&report, "user").sessions, 0);
    assert_eq!(row(&report, "login_failed").sessions, 2);
    assert!(row(&report, "login_failed").counts.requests > 0);
    assert_eq!(seen.gets_user_cookie.load(Ordering::SeqCst), 0);
    assert!(json::render(&report).contains("\"login_failed\":{\"sessions\":2,"));
}

#[test]
fn dead_server_gives_connection_errors_not_a_panic() {
    // Bind then drop, so the port is (very likely) closed.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cfg = config(port, Duration::from_millis(200));
    cfg.admins = 0;
    cfg.users = 0;
    let report = run::run(&cfg).unwrap();
    let c = &report.total.counts;
    assert!(c.conn_errors > 0 && c.responses() == 0, "{c:?}");
    assert_eq!(report.total.quantile_ms(0.5), None);
    assert!(table::render(&report).contains(" - "));
    assert!(json::render(&report).contains("\"p50_ms\":null"));
}
