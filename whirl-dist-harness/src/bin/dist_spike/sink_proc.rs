//! The sink as the parent sees it (gates 3 and 4): the child process, the lines it prints
//! (`READY`, `REPORT`, `TALLY`, `PROGRESS`, `OUT_OF_ORDER`) parsed, and the bounces its node's
//! refusals bring back to the parent.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use parking_lot::Mutex;
use whirl_dist::{BounceReason, NodeId, Pid};

use crate::nodes::SETUP_DEADLINE;
use crate::settings::Overload;

/// What the sink reported.
pub struct SinkReport {
    pub settled: bool,
    pub posted: u64,
    pub handled: u64,
    pub rejected: u64,
    pub dead_lettered: u64,
    pub queued: u64,
    pub received: u64,
    pub delivered: u64,
    pub bounced: u64,
    pub malformed: u64,
    pub from_quarantined: u64,
    /// Frames from a node that was not Up (here: the parent's, after the sink saw it Down).
    pub from_unknown: u64,
    pub control_overflow: u64,
    /// Bounces the sink could not send back (its control lane was full): dead letters there.
    pub bounce_overflow: u64,
}

/// The `key=value` fields of a line whose first word is `word`; `get` reads one.
pub struct Fields<'a> {
    line: &'a str,
    fields: std::collections::HashMap<&'a str, u64>,
}

impl<'a> Fields<'a> {
    fn parse(line: &'a str, word: &str) -> Result<Fields<'a>, String> {
        let mut fields = std::collections::HashMap::new();
        let mut words = line.split_whitespace();
        if words.next() != Some(word) {
            return Err(format!("not a {word} line: {line:?}"));
        }
        for field in words {
            let (key, value) = field
                .split_once('=')
                .ok_or_else(|| format!("malformed field {field:?} in {line:?}"))?;
            let value: u64 = value
                .parse()
                .map_err(|_| format!("malformed field {field:?} in {line:?}"))?;
            fields.insert(key, value);
        }
        Ok(Fields { line, fields })
    }

    fn get(&self, key: &str) -> Result<u64, String> {
        self.fields
            .get(key)
            .copied()
            .ok_or_else(|| format!("the sink's line lacks {key}: {:?}", self.line))
    }
}

impl SinkReport {
    fn parse(line: &str) -> Result<SinkReport, String> {
        let fields = Fields::parse(line, "REPORT")?;
        let get = |key: &str| fields.get(key);
        Ok(SinkReport {
            settled: get("settled")? == 1,
            posted: get("posted")?,
            handled: get("handled")?,
            rejected: get("rejected")?,
            dead_lettered: get("dead_lettered")?,
            queued: get("queued")?,
            received: get("received")?,
            delivered: get("delivered")?,
            bounced: get("bounced")?,
            malformed: get("malformed")?,
            from_quarantined: get("from_quarantined")?,
            from_unknown: get("from_unknown")?,
            control_overflow: get("control_overflow")?,
            bounce_overflow: get("bounce_overflow")?,
        })
    }
}

/// The sink's last `PROGRESS` line (gate 4), how many it printed, and how many
/// `OUT_OF_ORDER` lines (the sink prints the first [`OUT_OF_ORDER_LINES`]).
#[derive(Clone, Copy, Default, Debug)]
pub struct Progress {
    pub lines: u64,
    pub handled: u64,
    pub received: u64,
    pub out_of_order: u64,
}

impl Progress {
    /// Counts `line` in, if it is a well-formed `PROGRESS` line.
    fn update(&mut self, line: &str) -> Result<(), String> {
        let fields = Fields::parse(line, "PROGRESS")?;
        self.lines += 1;
        self.handled = fields.get("handled")?;
        self.received = fields.get("received")?;
        Ok(())
    }
}

/// The sink child process: its stdin (a `REPORT` line asks for a report, closing it asks the
/// child to shut down), its stdout lines with when they were read, and its last `PROGRESS`
/// line (those are not passed on as lines).
pub struct SinkProc {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<(Instant, String)>,
    progress: Arc<Mutex<Progress>>,
}

impl SinkProc {
    pub fn spawn(
        connect: &str,
        cluster: &str,
        lease: Duration,
        overload: &Overload,
        chaos: bool,
    ) -> Result<SinkProc, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let mut command = Command::new(exe);
        command
            .args(["--child-sink", "--connect", connect, "--cluster", cluster])
            .args(["--lease-ms", &lease.as_millis().to_string()])
            .args(["--work-us", &overload.work.as_micros().to_string()])
            .args(["--queue-max", &overload.queue_max.to_string()]);
        if let Some(window) = overload.window {
            command.args(["--window", &window.to_string()]);
        }
        if chaos {
            command.arg("--chaos");
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot spawn the sink: {e}"))?;
        let stdout = child.stdout.take().ok_or("the sink has no stdout")?;
        let stdin = child.stdin.take();
        let (tx, lines) = crossbeam_channel::unbounded();
        let progress = Arc::new(Mutex::new(Progress::default()));
        let last = Arc::clone(&progress);
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.starts_with("PROGRESS ") {
                    if let Err(why) = last.lock().update(&line) {
                        eprintln!("  {why}");
                    }
                    continue;
                }
                if line.starts_with("OUT_OF_ORDER ") {
                    last.lock().out_of_order += 1;
                    eprintln!("  sink said: {line}");
                    continue;
                }
                if tx.send((Instant::now(), line)).is_err() {
                    break;
                }
            }
        });
        Ok(SinkProc {
            child,
            stdin,
            lines,
            progress,
        })
    }

    /// The next line whose first word is `word`; the lines before it are echoed.
    fn next_line(&self, deadline: Instant, word: &str) -> Result<String, String> {
        self.next_line_at(deadline, word).map(|(_, line)| line)
    }

    /// The next line whose first word is `word`, and when it was read; the lines before it
    /// are echoed.
    pub fn next_line_at(&self, deadline: Instant, word: &str) -> Result<(Instant, String), String> {
        loop {
            let left = deadline
                .checked_duration_since(Instant::now())
                .ok_or_else(|| format!("the sink printed no {word} line in time"))?;
            match self.lines.recv_timeout(left) {
                Ok((at, line)) if line.split_whitespace().next() == Some(word) => {
                    return Ok((at, line))
                }
                Ok((_, line)) => eprintln!("  sink said: {line}"),
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!("the sink printed no {word} line in time"))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!("the sink exited before printing a {word} line"))
                }
            }
        }
    }

    /// The pid of the sink's process, from its `READY` line.
    pub fn ready(&self) -> Result<Pid, String> {
        let line = self.next_line(Instant::now() + SETUP_DEADLINE, "READY")?;
        match line.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["READY", node, local] => {
                let node: NodeId = node
                    .parse()
                    .map_err(|e| format!("malformed node id in {line:?}: {e}"))?;
                let local: u64 = local
                    .parse()
                    .map_err(|_| format!("malformed process id in {line:?}"))?;
                Ok(Pid::new(node, local))
            }
            _ => Err(format!("malformed READY line {line:?}")),
        }
    }

    pub fn report(&mut self, deadline: Instant) -> Result<SinkReport, String> {
        let stdin = self.stdin.as_mut().ok_or("the sink's stdin is closed")?;
        stdin
            .write_all(b"REPORT\n")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("cannot ask the sink for a report: {e}"))?;
        SinkReport::parse(&self.next_line(deadline, "REPORT")?)
    }

    /// The sink process's own count, asked of it locally: (handled, out of order, µs busy).
    pub fn tally(&mut self, deadline: Instant) -> Result<(u64, u64, u64), String> {
        let stdin = self.stdin.as_mut().ok_or("the sink's stdin is closed")?;
        stdin
            .write_all(b"TALLY\n")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("cannot ask the sink for its tally: {e}"))?;
        let line = self.next_line(deadline, "TALLY")?;
        let fields = Fields::parse(&line, "TALLY")?;
        Ok((
            fields.get("handled")?,
            fields.get("out_of_order")?,
            fields.get("busy_us")?,
        ))
    }

    /// Reads the sink's stdout to its end (the sink has exited), echoing what it said;
    /// `false` if the end did not come by `deadline`.
    pub fn drain(&self, deadline: Instant) -> bool {
        loop {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return false;
            };
            match self.lines.recv_timeout(left) {
                Ok((_, line)) => eprintln!("  sink said: {line}"),
                Err(RecvTimeoutError::Timeout) => return false,
                Err(RecvTimeoutError::Disconnected) => return true,
            }
        }
    }

    /// The last `PROGRESS` line read so far.
    pub fn progress(&self) -> Progress {
        *self.progress.lock()
    }

    /// Asks the sink to shut down; kills it if it has not exited within `grace`.
    pub fn finish(mut self, grace: Duration) {
        drop(self.stdin.take());
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Bounces that came back to the parent, by reason.
#[derive(Default)]
pub struct Bounces {
    total: AtomicU64,
    pub by_reason: Mutex<std::collections::HashMap<BounceReason, u64>>,
}

impl Bounces {
    pub fn record(&self, reason: BounceReason) {
        *self.by_reason.lock().entry(reason).or_default() += 1;
        self.total.fetch_add(1, Ordering::SeqCst);
    }

    pub fn total(&self) -> u64 {
        self.total.load(Ordering::SeqCst)
    }

    /// Bounces for any reason but `Rejected`.
    pub fn not_rejected(&self) -> u64 {
        self.by_reason
            .lock()
            .iter()
            .filter(|(reason, _)| **reason != BounceReason::Rejected)
            .map(|(_, n)| n)
            .sum()
    }
}
