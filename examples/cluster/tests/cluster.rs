//! Runs the `cluster` example (two nodes on loopback) and checks what it prints.

use std::process::Command;

#[test]
fn two_nodes_find_ask_and_monitor() {
    let output = Command::new(env!("CARGO_BIN_EXE_cluster"))
        .output()
        .expect("the example starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{}:\n{stdout}\n{stderr}",
        output.status
    );
    for line in [
        ": balance 400",
        "A: ask from a process: balance 400",
        "A: monitor: ",
        "A: the name went with the process",
        "is down: NoConnection",
    ] {
        assert!(stdout.contains(line), "no {line:?} in:\n{stdout}\n{stderr}");
    }
}
