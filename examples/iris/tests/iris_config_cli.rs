//! iris_http's `--config` from the command line: a file whose values would make a group refuse
//! everything is refused at its line and column, and one that lacks a group the server needs
//! is refused naming the file and the group; both with exit status 2, before anything serves.

use std::path::PathBuf;
use std::process::{Command, Output};

const IRIS: &str = env!("CARGO_BIN_EXE_iris_http");

/// Writes `text` to a fresh file named after `tag` and runs iris_http with it as `--config`.
fn run_with_config(tag: &str, text: &str) -> (PathBuf, Output) {
    let dir = std::env::temp_dir().join(format!("iris-config-cli-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let file = dir.join("iris.toml");
    std::fs::write(&file, text).expect("written");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/iris_root");
    let out = Command::new(IRIS)
        .args(["--port", "0", "--root", root, "--config"])
        .arg(&file)
        .output()
        .expect("iris_http runs");
    (file, out)
}

#[test]
fn a_predicate_that_refuses_everything_exits_2_at_its_line() {
    let (file, out) = run_with_config(
        "max0",
        "[groups.sockets]\nthreads = 1\npredicate = { queue_length = { max = 0 } }\n",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(
        stderr.contains(&format!("{}:3:13:", file.display())),
        "stderr: {stderr}"
    );
    assert!(stderr.contains("refuses every message"), "stderr: {stderr}");
    let _ = std::fs::remove_dir_all(file.parent().expect("a dir"));
}

#[test]
fn a_missing_group_exits_2_naming_the_file_and_the_group() {
    let (file, out) = run_with_config("missing", "[runtime]\nthreads = 1\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(
        stderr.contains(&file.display().to_string()),
        "stderr: {stderr}"
    );
    assert!(stderr.contains("no group `sockets`"), "stderr: {stderr}");
    let _ = std::fs::remove_dir_all(file.parent().expect("a dir"));
}
