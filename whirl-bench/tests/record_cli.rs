//! `whirl-bench record`, `history` and `compare` end to end, against a fake bench binary.

#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use whirl_bench::{RunId, Store};

fn temp_dir(name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir =
        std::env::temp_dir().join(format!("whirl-bench-{name}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write_script(path: &Path, script: &str) {
    std::fs::write(path, script).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A shell script printing a fixed `--json` document (its arguments echoed into the suite
/// name by the unquoted here-document), with `rate` as the ping-pong figure.
fn fake_bench(dir: &Path, name: &str, rate: f64) -> PathBuf {
    let path = dir.join(name);
    let script = format!(
        r#"#!/bin/sh
echo "progress: running ($*)" >&2
cat <<JSON
{{ "suite": "fake $*", "threads": 2, "figures": [
  {{ "name": "ping-pong whirl", "value": {rate}, "unit": "msgs/s", "higher_is_better": true }},
  {{ "name": "memory whirl", "value": 320, "unit": "B/proc", "higher_is_better": false }},
  {{ "name": "ping-pong whirl/tokio", "value": 2.4, "unit": "x", "higher_is_better": true }}
] }}
JSON
"#
    );
    write_script(&path, &script);
    path
}

fn whirl_bench(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_whirl-bench"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn record_history_compare_end_to_end() {
    let dir = temp_dir("cli");
    let fast = fake_bench(&dir, "fast.sh", 1_000_000.0);
    let slow = fake_bench(&dir, "slow.sh", 800_000.0);
    let db = dir.join("h.sqlite");
    let db_arg = db.to_str().unwrap();
    let record = |bench: &Path| {
        whirl_bench(
            &dir,
            &[
                "record",
                "--quick",
                "--db",
                db_arg,
                "--bench-bin",
                bench.to_str().unwrap(),
            ],
        )
    };

    let out = record(&fast);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("recorded run 1"), "{stdout}");
    assert!(stdout.contains("no earlier"), "{stdout}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("progress: running (quick --json)"),
        "the suite's stderr is passed through: {stderr}"
    );

    let out = record(&slow);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("recorded run 2"), "{stdout}");
    assert!(stdout.contains("REGRESSION"), "-20 % ping-pong: {stdout}");
    assert!(stdout.contains("1 regression beyond 5%"), "{stdout}");

    // The database holds both runs and every figure.
    let store = Store::open(&db).unwrap();
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].meta.suite, "fake quick --json");
    assert_eq!(runs[0].figures.len(), 3);
    assert_eq!(runs[1].figure("ping-pong whirl").unwrap().value, 800_000.0);
    assert_eq!(runs[1].figure("memory whirl").unwrap().unit, "B/proc");
    assert!(!runs[1].figure("memory whirl").unwrap().higher_is_better);
    assert!(runs[0].meta.cpus >= 1);
    assert!(!runs[0].meta.commit.is_empty());
    assert_eq!(runs[0].meta.date.len(), "2026-11-26T03:00:00Z".len());
    assert!(runs[0].meta.date.ends_with('Z'));
    drop(store);

    let out = whirl_bench(&dir, &["history", "--db", db_arg]);
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    assert!(stdout.contains("fake quick --json"), "{stdout}");
    assert!(stdout.lines().count() >= 3, "{stdout}");

    // A regression: exit status 2.
    let out = whirl_bench(&dir, &["compare", "1", "2", "--db", db_arg]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("REGRESSION"));
    // Within a 25 % threshold, or the other way round: none, exit 0.
    let out = whirl_bench(
        &dir,
        &["compare", "1", "2", "--threshold", "25", "--db", db_arg],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let out = whirl_bench(&dir, &["--db", db_arg, "compare", "2", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));

    // Unknown run: a clear error, exit 1, no panic.
    let out = whirl_bench(&dir, &["compare", "1", "9", "--db", db_arg]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("no such run: 9"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    // No database: exit 1, and none is created.
    let missing = dir.join("missing.sqlite");
    let out = whirl_bench(&dir, &["history", "--db", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no history database"));
    assert!(!missing.exists());

    // Usage errors are status 1, not 2 (2 means "regression").
    let out = whirl_bench(&dir, &["compare", "one", "2", "--db", db_arg]);
    assert_eq!(out.status.code(), Some(1));

    assert_eq!(
        Store::open(&db).unwrap().latest_two().unwrap(),
        Some((RunId(1), RunId(2)))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failing_or_garbled_suite_records_nothing() {
    let dir = temp_dir("cli-fail");
    let db = dir.join("h.sqlite");
    let db_arg = db.to_str().unwrap();
    let failing = dir.join("failing.sh");
    write_script(
        &failing,
        "#!/bin/sh\necho 'thread main panicked: boom' >&2\nexit 3\n",
    );
    let garbled = dir.join("garbled.sh");
    write_script(&garbled, "#!/bin/sh\necho 'not json'\n");
    let record = |bench: &Path| {
        whirl_bench(
            &dir,
            &[
                "record",
                "--db",
                db_arg,
                "--bench-bin",
                bench.to_str().unwrap(),
            ],
        )
    };

    let out = record(&failing);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("the bench suite failed"), "{stderr}");
    assert!(stderr.contains("exit status: 3"), "{stderr}");
    assert!(stderr.contains("boom"), "{stderr}");

    let out = record(&garbled);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("cannot parse"),
        "{}",
        text(&out.stderr)
    );

    let out = record(&dir.join("no-such-bench"));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("cannot run"),
        "{}",
        text(&out.stderr)
    );

    assert!(Store::open(&db).unwrap().runs().unwrap().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}
