//! Runs the `async_demo` binary end to end: SQLite through an async handler, HTTP fetches
//! from a real `iris_http` child process (the `iris` package's), and the runtime's accounting.

use std::process::Command;

#[test]
fn the_async_demo_passes_its_checks() {
    // iris_http is another package's binary (`iris`): the demo takes $WHIRL_IRIS_HTTP, or finds
    // it next to itself (a workspace build made it), or has cargo build it there.
    let output = Command::new(env!("CARGO_BIN_EXE_async_demo"))
        .output()
        .expect("the demo starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the demo failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    for line in [
        "answered 1000 (840 found, 160 nobody)",
        "-> 404",
        "iris_http: stopped",
        "async_demo: all checks passed",
    ] {
        assert!(stdout.contains(line), "no {line:?} in:\n{stdout}\n{stderr}");
    }
}
