//! iris_http assembled from its configuration file: a broken file is refused with its line
//! and a non-zero exit, and the shipped file serves requests.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

const IRIS: &str = env!("CARGO_BIN_EXE_iris_http");

fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("iris-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("written");
    path
}

fn root() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/iris_root").to_string()
}

#[test]
fn a_broken_file_exits_non_zero_naming_the_line() {
    let broken = temp_file(
        "broken.toml",
        "[groups.sockets]\nthreads = 1\n\n[groups.http]\nthreads = \"one\"\n",
    );
    let out = Command::new(IRIS)
        .args(["--port", "0", "--root", &root(), "--config"])
        .arg(&broken)
        .output()
        .expect("iris_http runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "exit status {:?}", out.status);
    let expected = format!("error: {}:5:", broken.display());
    assert!(stderr.starts_with(&expected), "stderr: {stderr}");
}

#[test]
fn a_file_missing_a_group_is_refused() {
    let partial = temp_file("partial.toml", "[groups.sockets]\nthreads = 1\n");
    let out = Command::new(IRIS)
        .args(["--port", "0", "--root", &root(), "--config"])
        .arg(&partial)
        .output()
        .expect("iris_http runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "exit status {:?}", out.status);
    assert!(stderr.contains("no group `http`"), "stderr: {stderr}");
}

#[test]
fn the_shipped_file_serves_requests() {
    let mut child = Command::new(IRIS)
        .args(["--port", "0", "--root", &root()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("iris_http starts");
    let stdout = child.stdout.take().expect("its stdout");
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    let addr = first
        .rsplit("http://")
        .next()
        .map(|s| s.trim_end_matches('/').to_string())
        .unwrap_or_default();
    let result = (|| -> std::io::Result<String> {
        let mut stream = TcpStream::connect(&addr)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        stream
            .write_all(b"GET /files/index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        Ok(response)
    })();
    let config_line = lines.next().and_then(Result::ok).unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    let response = result.unwrap_or_else(|e| panic!("request to {addr:?} ({first:?}): {e}"));
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(config_line.contains("iris.toml"), "{config_line}");
}

#[test]
fn an_edited_file_is_applied_while_serving() {
    let shipped = include_str!("../src/bin/iris_http/iris.toml");
    let path = temp_file("live.toml", shipped);
    let mut child = Command::new(IRIS)
        .args(["--port", "0", "--root", &root(), "--config"])
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("iris_http starts");
    // Read on, so that the server's later lines do not meet a closed pipe.
    let stdout = child.stdout.take().expect("its stdout");
    let (out_tx, out_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if out_tx.send(line).is_err() {
                return;
            }
        }
    });
    let first = out_rx.recv_timeout(Duration::from_secs(60)).ok();
    assert!(first.is_some_and(|l| l.contains("serving")), "started");
    let stderr = child.stderr.take().expect("its stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let edited = shipped
        .replace(
            "cost_budget = { budget = 64 }",
            "cost_budget = { budget = 32 }",
        )
        .replace("[groups.db]\n", "[groups.db]\nconcurrency = 1\n");
    assert_ne!(edited, shipped);
    std::fs::write(&path, edited).expect("edited");
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !(seen
        .iter()
        .any(|l: &String| l.contains("applied groups.files.predicate.inner.all[1].budget"))
        && seen
            .iter()
            .any(|l| l.contains("groups.db.concurrency") && l.contains("needs a restart")))
    {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => seen.push(line),
            Err(_) => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        seen.iter()
            .any(|l| l.contains("applied groups.files.predicate.inner.all[1].budget")),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|l| l.contains("live.toml:") && l.contains("groups.db.concurrency")),
        "{seen:?}"
    );
}
