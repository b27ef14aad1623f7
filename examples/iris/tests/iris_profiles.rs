//! iris_http's command line as a user runs it: with no flags a static file server without
//! simulated work, `--demo overload` the paper's overload demo, and the flags of the head
//! limits, sessions and HSTS reaching the server (or refused when they make no sense).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const IRIS: &str = env!("CARGO_BIN_EXE_iris_http");

fn root() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/iris_root").to_string()
}

/// A running iris_http, killed on drop.
struct Server {
    child: Child,
    addr: String,
    /// What it printed on starting, up to its `Ctrl-C` line.
    banner: Vec<String>,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let mut child = Command::new(IRIS)
            .args(["--port", "0", "--root", &root()])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("iris_http starts");
        let stdout = child.stdout.take().expect("its stdout");
        let mut banner = Vec::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let last = line.contains("Ctrl-C");
            banner.push(line);
            if last {
                break;
            }
        }
        let addr = banner
            .first()
            .and_then(|first| first.rsplit("http://").next())
            .map(|s| s.trim_end_matches('/').to_string())
            .unwrap_or_default();
        Server {
            child,
            addr,
            banner,
        }
    }

    /// Sends `request` on a new connection (which the request closes) and returns all the
    /// server wrote back.
    fn exchange(&self, request: &str) -> String {
        let result = (|| -> std::io::Result<String> {
            let mut stream = TcpStream::connect(&self.addr)?;
            stream.set_read_timeout(Some(Duration::from_secs(30)))?;
            stream.write_all(request.as_bytes())?;
            let mut response = String::new();
            stream.read_to_string(&mut response)?;
            Ok(response)
        })();
        result.unwrap_or_else(|e| panic!("request to {:?} ({:?}): {e}", self.addr, self.banner))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn with_no_flags_it_serves_files_without_simulated_work_or_cookies() {
    let server = Server::start(&[]);
    assert!(
        server
            .banner
            .iter()
            .any(|l| l.trim() == "no simulated work"),
        "{:?}",
        server.banner
    );
    let response =
        server.exchange("GET /files/index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(response.starts_with("HTTP/1.1 200 "), "{response}");
    assert!(
        !response.to_ascii_lowercase().contains("\r\nset-cookie:"),
        "{response}"
    );
}

#[test]
fn demo_overload_is_the_papers_overload_demo() {
    let server = Server::start(&["--demo", "overload"]);
    assert!(
        server
            .banner
            .iter()
            .any(|l| l.trim() == "simulated work: 100 us per unit of request work"),
        "{:?}",
        server.banner
    );
    let response =
        server.exchange("GET /resources/3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(response.starts_with("HTTP/1.1 200 "), "{response}");
    drop(server);

    // A flag given with the profile wins.
    let server = Server::start(&["--demo", "overload", "--work-us", "800"]);
    assert!(
        server
            .banner
            .iter()
            .any(|l| l.trim() == "simulated work: 800 us per unit of request work"),
        "{:?}",
        server.banner
    );
}

#[test]
fn the_head_limits_and_session_paths_come_from_the_flags() {
    let server = Server::start(&["--max-header-line-bytes", "64", "--session-path", "/status"]);
    let long = format!(
        "GET /files/{} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "a".repeat(64)
    );
    let response = server.exchange(&long);
    assert!(response.starts_with("HTTP/1.1 414 "), "{response}");
    let line = format!(
        "GET /files/index.html HTTP/1.1\r\nHost: x\r\nX-Long: {}\r\nConnection: close\r\n\r\n",
        "b".repeat(64)
    );
    let response = server.exchange(&line);
    assert!(response.starts_with("HTTP/1.1 431 "), "{response}");
    // Sessions start under /status, not under the default /resources.
    let response =
        server.exchange("GET /resources/3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(response.starts_with("HTTP/1.1 200 "), "{response}");
    assert!(!response.contains("Set-Cookie: session="), "{response}");
    let response = server.exchange("GET /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(response.starts_with("HTTP/1.1 403 "), "{response}");
    assert!(response.contains("Set-Cookie: session="), "{response}");
    assert!(response.contains("Cache-Control: private"), "{response}");
}

#[test]
fn flags_that_make_no_sense_are_refused() {
    for args in [
        &["--hsts-max-age", "60"][..],
        &["--session-path", "resources"],
        &["--demo", "nonsense"],
    ] {
        let out = Command::new(IRIS)
            .args(["--port", "0", "--root", &root()])
            .args(args)
            .output()
            .expect("iris_http runs");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?} says why");
    }
}
