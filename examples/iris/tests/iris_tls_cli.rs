//! iris_http's TLS options from the command line: a key file that holds no key is refused,
//! naming the file, with exit status 2; one option without the other is a usage error.

use std::path::PathBuf;
use std::process::Command;

const IRIS: &str = env!("CARGO_BIN_EXE_iris_http");

/// A self-signed certificate in `cert.pem` and its key in `key.pem`, in a fresh temp dir.
fn certificate(tag: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("iris-tls-cli-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let made =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("a certificate");
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, made.cert.pem()).expect("written");
    std::fs::write(&key, made.signing_key.serialize_pem()).expect("written");
    (cert, key)
}

fn root() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/iris_root").to_string()
}

#[test]
fn a_key_file_without_a_key_exits_2_naming_it() {
    let (cert, _key) = certificate("nokey");
    let out = Command::new(IRIS)
        .args(["--port", "0", "--root", &root(), "--tls-cert"])
        .arg(&cert)
        .arg("--tls-key")
        .arg(&cert)
        .output()
        .expect("iris_http runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(
        stderr.contains(&cert.display().to_string()),
        "stderr: {stderr}"
    );
    assert!(stderr.contains("no private key"), "stderr: {stderr}");
    let _ = std::fs::remove_dir_all(cert.parent().expect("a dir"));
}

#[test]
fn a_certificate_without_its_key_is_a_usage_error() {
    let (cert, _key) = certificate("alone");
    let out = Command::new(IRIS)
        .args(["--port", "0", "--root", &root(), "--tls-cert"])
        .arg(&cert)
        .output()
        .expect("iris_http runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.contains("--tls-key"), "stderr: {stderr}");
    let _ = std::fs::remove_dir_all(cert.parent().expect("a dir"));
}
