//! Runs the `hello` example and checks what it prints: the calls, the ask, the restart.

use std::process::Command;

#[test]
fn hello_prints_its_story() {
    let output = Command::new(env!("CARGO_BIN_EXE_hello"))
        .output()
        .expect("hello starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{}:\n{stdout}\n{stderr}",
        output.status
    );
    for line in [
        "counter: /about, 2 hits",
        "call: 2 hits",
        "ask: 2 hits",
        "restarted (1), a fresh state: 0 hits",
    ] {
        assert!(stdout.contains(line), "no {line:?} in:\n{stdout}");
    }
    // The crash reaches the failure hook, which prints it.
    assert!(stderr.contains("asked to crash"), "stderr: {stderr}");
}
