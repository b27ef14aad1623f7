//! iris_http's HTTP/2 against an independent client: the `h2check` suite (`examples/iris/
//! h2check/`, h2spec's sections written in Python with `hyperframe` and `hpack`, and the
//! h2-specific attacks) over h2c and over TLS with ALPN `h2`, then h2load's load on both.
//!
//! Skipped, saying so, where Python's `h2` packages (or h2load) are not installed, unless
//! `IRIS_REQUIRE_H2CHECK` is set, as CI sets it: then a missing tool fails the test.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const IRIS: &str = env!("CARGO_BIN_EXE_iris_http");

/// A case the server fails because the `h2` crate, which parses HTTP/2 for iris_http, lets it
/// through: pseudo-header fields in a request's trailers are dropped instead of making the
/// request malformed (RFC 9113 §8.1). The suite fails if it starts passing, so that this
/// list stays true.
const KNOWN: &[&str] = &["8.1.2.1/4"];

fn required() -> bool {
    std::env::var_os("IRIS_REQUIRE_H2CHECK").is_some()
}

/// Whether `program args` runs; if not, and the tools are not required, why the test skips.
fn available(program: &str, args: &[&str]) -> bool {
    let ran = Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !ran {
        assert!(
            !required(),
            "IRIS_REQUIRE_H2CHECK is set and `{program} {}` fails",
            args.join(" ")
        );
        eprintln!("`{program} {}` fails: skipped", args.join(" "));
    }
    ran
}

/// The site: the demo's index and a 1 MiB file, in a fresh temp dir.
fn site() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("iris-h2check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("iris_root/index.html");
    std::fs::copy(demo, dir.join("index.html")).expect("the demo index");
    let big: Vec<u8> = (0..1024 * 1024u32).map(|i| (i * 31 % 253) as u8).collect();
    std::fs::write(dir.join("1m.bin"), big).expect("written");
    let made =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("a certificate");
    std::fs::write(dir.join("cert.pem"), made.cert.pem()).expect("written");
    std::fs::write(dir.join("key.pem"), made.signing_key.serialize_pem()).expect("written");
    dir
}

/// A running iris_http, killed on drop.
struct Iris {
    child: Child,
    addr: SocketAddr,
}

impl Iris {
    fn start(root: &Path, args: &[&str]) -> Iris {
        let mut child = Command::new(IRIS)
            .args(["--port", "0", "--root"])
            .arg(root)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("iris_http starts");
        let mut first = String::new();
        let stdout = child.stdout.take().expect("its stdout");
        BufReader::new(stdout)
            .read_line(&mut first)
            .expect("its first line");
        let addr = first
            .trim()
            .rsplit("://")
            .next()
            .map(|rest| rest.trim_end_matches('/'))
            .and_then(|addr| addr.parse().ok())
            .unwrap_or_else(|| panic!("no address in {first:?}"));
        Iris { child, addr }
    }
}

impl Drop for Iris {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the suite against `iris` as `transport` (`--h2c` or `--h2`); its output.
fn h2check(iris: &Iris, transport: &str) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("h2check/h2check.py");
    let mut command = Command::new("python3");
    command
        .arg(script)
        .arg(transport)
        .arg(iris.addr.to_string())
        .args([
            "--pid",
            &iris.child.id().to_string(),
            "--big",
            "/files/1m.bin",
        ]);
    for id in KNOWN {
        command.args(["--known", id]);
    }
    let out = command.output().expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let failures: Vec<&str> = stdout.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(
        out.status.success() && failures.is_empty(),
        "h2check {transport}: {}\n{}\n{stderr}",
        out.status,
        failures.join("\n")
    );
    let last = stdout.lines().last().unwrap_or_default();
    assert!(last.ends_with(" passed, 0 failed"), "{stdout}");
    let passed: usize = last
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(passed >= 120, "only {passed} cases ran: {stdout}");
    stdout
}

/// h2load's 2,000 requests on 4 connections, 16 streams each, at `url`: all succeed.
fn h2load(url: &str) {
    let out = Command::new("h2load")
        .args(["-n", "2000", "-c", "4", "-m", "16", "--npn-list=h2", url])
        .output()
        .expect("h2load runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("2000 succeeded, 0 failed, 0 errored")
            && stdout.contains("status codes: 2000 2xx"),
        "h2load {url}:\n{stdout}"
    );
}

#[test]
fn h2check_passes_over_h2c_and_tls_and_h2load_is_served() {
    if !available("python3", &["-c", "import h2, hpack, hyperframe"]) {
        return;
    }
    let root = site();
    let cert = root.join("cert.pem").display().to_string();
    let key = root.join("key.pem").display().to_string();
    let plain = Iris::start(&root, &[]);
    let tls = Iris::start(&root, &["--tls-cert", &cert, "--tls-key", &key]);
    let h2c = h2check(&plain, "--h2c");
    let h2 = h2check(&tls, "--h2");
    for (transport, out) in [("h2c", &h2c), ("h2", &h2)] {
        eprintln!(
            "h2check {transport}: {}",
            out.lines().last().unwrap_or_default()
        );
    }
    if available("h2load", &["--version"]) {
        h2load(&format!("http://{}/files/index.html", plain.addr));
        h2load(&format!(
            "https://localhost:{}/files/1m.bin",
            tls.addr.port()
        ));
    }
    // Both servers survived everything.
    for iris in [plain, tls] {
        let mut iris = iris;
        assert!(
            matches!(iris.child.try_wait(), Ok(None)),
            "iris_http at {} exited",
            iris.addr
        );
    }
    let _ = std::fs::remove_dir_all(&root);
}
