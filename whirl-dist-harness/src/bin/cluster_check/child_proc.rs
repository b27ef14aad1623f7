//! The parent's view of a child: the OS process it started, the lines it answers with, and its
//! membership events; killed when dropped, if still running.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use whirl_dist::{NodeId, Pid};

use crate::settings::{Args, REQUEST_TIMEOUT};

/// A child node process: its stdin (commands; closing it asks the child to shut down), its
/// answers, and its membership events with the time they arrived. Killed when dropped, if
/// still running: no orphans on an error path.
pub struct ChildProc {
    pub label: &'static str,
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    pub answers: Receiver<String>,
    pub events: Receiver<(Instant, String)>,
    /// From its `READY` line.
    pub id: NodeId,
    pub account: Pid,
}

impl ChildProc {
    /// Starts `cluster_check --child <label>` listening on `port`, connecting to `connect`
    /// (then see [`ChildProc::ready`]).
    pub fn spawn(
        label: &'static str,
        cluster: &str,
        port: u16,
        connect: &[String],
        args: &Args,
    ) -> Result<ChildProc, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let mut child = Command::new(exe)
            .args(["--child", label, "--cluster", cluster])
            .args(["--listen", &port.to_string()])
            .args(["--connect", &connect.join(",")])
            .args(["--peers", "2", "--lease-ms", &args.lease_ms.to_string()])
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
                    Some(event) => events_tx.send((Instant::now(), event.to_owned())).is_ok(),
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
            account: Pid::new(NodeId::from_u128(0), 0),
        })
    }

    /// Waits for the child's `READY <node-id> <account-local-id>`: it has seen its peers Up
    /// and registered its account.
    pub fn ready(&mut self, deadline: Instant) -> Result<(), String> {
        let label = self.label;
        let ready = self.answer("READY", deadline)?;
        let (id, local) = ready
            .split_once(' ')
            .ok_or_else(|| format!("malformed READY from node {label}: {ready:?}"))?;
        self.id = id.parse().map_err(|e| format!("node {label}: {e}"))?;
        let local = local
            .parse()
            .map_err(|_| format!("malformed READY from node {label}: {ready:?}"))?;
        self.account = Pid::new(self.id, local);
        Ok(())
    }

    /// Sends `command` and returns the rest of the answer line that starts with `word`.
    pub fn request(&mut self, command: &str, word: &str) -> Result<String, String> {
        let label = self.label;
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| format!("node {label}'s stdin is closed"))?;
        writeln!(stdin, "{command}")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("cannot send {command:?} to node {label}: {e}"))?;
        self.answer(word, Instant::now() + REQUEST_TIMEOUT)
    }

    /// The rest of the next answer line that starts with `word`; other lines are echoed.
    pub fn answer(&self, word: &str, deadline: Instant) -> Result<String, String> {
        let label = self.label;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.answers.recv_timeout(left) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!("node {label} did not answer {word} in time"))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!("node {label} exited before answering {word}"))
                }
            };
            let (first, rest) = line.split_once(' ').unwrap_or((&line, ""));
            if first == word {
                return Ok(rest.to_owned());
            }
            if first == "ERR" {
                return Err(format!("node {label}: {rest}"));
            }
            eprintln!("  node {label} said: {line}");
        }
    }

    /// Waits for the membership event `event` (e.g. `DOWN <id>`); returns when it arrived.
    pub fn wait_event(&self, event: &str, deadline: Instant) -> Option<Instant> {
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            match self.events.recv_timeout(left) {
                Ok((at, line)) if line == event => return Some(at),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }

    /// Kills the child with SIGKILL (std's `Child::kill` on Unix); returns when, and how it
    /// ended.
    pub fn kill(&mut self) -> Result<(Instant, ExitStatus), String> {
        let at = Instant::now();
        self.child
            .kill()
            .map_err(|e| format!("cannot kill node {}: {e}", self.label))?;
        let status = self
            .child
            .wait()
            .map_err(|e| format!("cannot reap node {}: {e}", self.label))?;
        Ok((at, status))
    }

    /// Closes the child's stdin (it shuts down) and waits for it to exit successfully.
    pub fn finish(&mut self, grace: Duration) -> Result<(), String> {
        drop(self.stdin.take());
        let deadline = Instant::now() + grace;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => {
                    return Err(format!("node {} exited with {status}", self.label))
                }
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
                Ok(None) => {
                    return Err(format!(
                        "node {} did not shut down within {grace:?}",
                        self.label
                    ))
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
