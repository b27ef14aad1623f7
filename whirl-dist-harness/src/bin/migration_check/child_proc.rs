//! The parent's view of a child: the OS process it started, the lines it answers with, and its
//! membership events; killed when dropped, if still running.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use whirl_dist::NodeId;

use crate::settings::REQUEST_TIMEOUT;

/// A child node process: its stdin (commands; closing it asks the child to shut down), its
/// answers, and its membership events. Killed when dropped, if still running: no orphans on
/// an error path.
pub struct ChildProc {
    pub label: &'static str,
    child: Child,
    stdin: Option<ChildStdin>,
    answers: Receiver<String>,
    events: Receiver<String>,
    /// From its `READY` line.
    pub id: NodeId,
}

impl ChildProc {
    /// Starts `migration_check --child <label>` listening on `port`, connecting to `connect`
    /// (then see [`ChildProc::ready`]).
    pub fn spawn(
        label: &'static str,
        cluster: &str,
        certs: &Path,
        port: u16,
        connect: &[String],
        lease_ms: u64,
    ) -> Result<ChildProc, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let mut command = Command::new(exe);
        command
            .args(["--child", label, "--cluster", cluster])
            .arg("--certs")
            .arg(certs)
            .args(["--listen", &port.to_string()])
            .args(["--lease-ms", &lease_ms.to_string()]);
        if !connect.is_empty() {
            command.args(["--connect", &connect.join(",")]);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start node {label}: {e}"))?;
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("node {label} has no stdin or stdout"));
        };
        let (answers_tx, answers) = mpsc::channel();
        let (events_tx, events) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let sent = match line.strip_prefix("EVENT ") {
                    Some(event) => events_tx.send(event.to_owned()).is_ok(),
                    None => answers_tx.send(line).is_ok(),
                };
                if !sent {
                    break;
                }
            }
        });
        Ok(ChildProc {
            label,
            child,
            stdin: Some(stdin),
            answers,
            events,
            id: NodeId::from_u128(0),
        })
    }

    /// Waits for the child's `READY <node-id>`: it has seen its two peers Up.
    pub fn ready(&mut self, deadline: Instant) -> Result<(), String> {
        let ready = self.answer("READY", deadline)?;
        self.id = ready
            .parse()
            .map_err(|e| format!("node {}: {e}", self.label))?;
        Ok(())
    }

    /// Sends `command` without waiting for an answer.
    pub fn send(&mut self, command: &str) -> Result<(), String> {
        let label = self.label;
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| format!("node {label}'s stdin is closed"))?;
        writeln!(stdin, "{command}")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("cannot send {command:?} to node {label}: {e}"))
    }

    /// Sends `command` and returns the rest of the answer line that starts with `word`.
    pub fn request(&mut self, command: &str, word: &str) -> Result<String, String> {
        self.send(command)?;
        self.answer(word, Instant::now() + REQUEST_TIMEOUT)
    }

    /// The rest of the next answer line that starts with `word`; other lines are echoed.
    pub fn answer(&self, word: &str, deadline: Instant) -> Result<String, String> {
        self.answer_by(word, deadline)?
            .ok_or_else(|| format!("node {} did not answer {word} in time", self.label))
    }

    /// The answer starting with `word` if one arrives before `deadline`; `Ok(None)` if none
    /// did.
    pub fn answer_by(&self, word: &str, deadline: Instant) -> Result<Option<String>, String> {
        let label = self.label;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.answers.recv_timeout(left) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => return Ok(None),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!("node {label} exited before answering {word}"))
                }
            };
            let (first, rest) = line.split_once(' ').unwrap_or((&line, ""));
            if first == word {
                return Ok(Some(rest.to_owned()));
            }
            if first == "ERR" {
                return Err(format!("node {label}: {rest}"));
            }
            if first == "HELD" {
                // S's note that the account's hold ended, for those who wait for it.
                continue;
            }
            eprintln!("  node {label} said: {line}");
        }
    }

    /// Waits for the membership event `event` (e.g. `DOWN <id>`); whether it came in time.
    pub fn wait_event(&self, event: &str, deadline: Instant) -> bool {
        loop {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return false;
            };
            match self.events.recv_timeout(left) {
                Ok(line) if line == event => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
    }

    /// Kills the child with SIGKILL (std's `Child::kill` on Unix) and reaps it.
    pub fn kill(&mut self) -> Result<(), String> {
        self.child
            .kill()
            .map_err(|e| format!("cannot kill node {}: {e}", self.label))?;
        self.child
            .wait()
            .map_err(|e| format!("cannot reap node {}: {e}", self.label))?;
        Ok(())
    }

    /// Closes the child's stdin: it shuts down (see [`ChildProc::finish`]).
    pub fn close(&mut self) {
        drop(self.stdin.take());
    }

    /// Closes the child's stdin and waits until `deadline` for it to exit successfully; kills
    /// it otherwise. A child that was killed already is fine.
    pub fn finish(&mut self, deadline: Instant, killed: bool) -> Result<(), String> {
        self.close();
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) if status.success() || killed => return Ok(()),
                Ok(Some(status)) => {
                    return Err(format!("node {} exited with {status}", self.label))
                }
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
                Ok(None) => {
                    let _ = self.kill();
                    return Err(format!("node {} did not shut down in time", self.label));
                }
                Err(e) => return Err(format!("cannot wait for node {}: {e}", self.label)),
            }
        }
    }
}

impl Drop for ChildProc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
