//! The plain child node of gates 1 and 2, both sides: the child's `main` (`--child`), which
//! starts a node and prints its events, and the parent's handle on the child process, which
//! reads those lines.
//!
//! The child prints one line per fact on stdout (`READY <id>`, `EVENT UP|DOWN|REFUSED <id>`,
//! `BYE`) and shuts down when its stdin closes.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStdin, Command, ExitCode, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use whirl_dist::{Node, NodeConfig, NodeEvent, NodeId};

use crate::nodes::SETUP_DEADLINE;
use crate::settings::{flag_number, flag_value};

pub fn child_main(args: &[String]) -> Result<ExitCode, String> {
    let connect = flag_value(args, "--connect").ok_or("--child needs --connect")?;
    let cluster = flag_value(args, "--cluster").ok_or("--child needs --cluster")?;
    let lease = Duration::from_millis(flag_number(args, "--lease-ms", 1000)?);
    let node = Node::start(
        NodeConfig::new(cluster)
            .insecure_plaintext("the dist_spike gate measures the failure detector on loopback")
            .listen(Vec::<String>::new())
            .connect([connect])
            .lease(lease)
            .reconnect_max(Duration::from_millis(500)),
    )
    .map_err(|e| format!("child cannot start its node: {e}"))?;
    let events = node.events();
    println!("READY {}", node.id());
    thread::spawn(move || {
        for event in events {
            match event {
                NodeEvent::Up(id) => println!("EVENT UP {id}"),
                NodeEvent::Down { node, .. } => println!("EVENT DOWN {node}"),
                NodeEvent::ResurrectionRefused(id) => println!("EVENT REFUSED {id}"),
                other => println!("EVENT OTHER {other:?}"),
            }
        }
    });
    // Idle until the parent closes our stdin (or dies).
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    let shutdown = node.shutdown();
    println!("BYE");
    match shutdown {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => Err(format!("child shutdown: {e}")),
    }
}

/// What a child printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChildLine {
    Ready(NodeId),
    Up(NodeId),
    Down(NodeId),
    Refused(NodeId),
    Bye,
    Other(String),
}

pub fn parse_child_line(line: &str) -> ChildLine {
    let words: Vec<&str> = line.split_whitespace().collect();
    let id = |text: &str| text.parse::<NodeId>().ok();
    match words.as_slice() {
        ["READY", x] => id(x).map_or_else(|| ChildLine::Other(line.into()), ChildLine::Ready),
        ["EVENT", "UP", x] => id(x).map_or_else(|| ChildLine::Other(line.into()), ChildLine::Up),
        ["EVENT", "DOWN", x] => {
            id(x).map_or_else(|| ChildLine::Other(line.into()), ChildLine::Down)
        }
        ["EVENT", "REFUSED", x] => {
            id(x).map_or_else(|| ChildLine::Other(line.into()), ChildLine::Refused)
        }
        ["BYE"] => ChildLine::Bye,
        _ => ChildLine::Other(line.into()),
    }
}

/// A child node process, its stdin (closing it asks the child to shut down) and its lines.
pub struct ChildProc {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<(Instant, ChildLine)>,
}

impl ChildProc {
    pub fn spawn(connect: &str, cluster: &str, lease: Duration) -> Result<ChildProc, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let mut child = Command::new(exe)
            .args(["--child", "--connect", connect, "--cluster", cluster])
            .args(["--lease-ms", &lease.as_millis().to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot spawn a child: {e}"))?;
        let stdout = child.stdout.take().ok_or("child has no stdout")?;
        let stdin = child.stdin.take();
        let (tx, lines) = crossbeam_channel::unbounded();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send((Instant::now(), parse_child_line(&line))).is_err() {
                    break;
                }
            }
        });
        Ok(ChildProc {
            child,
            stdin,
            lines,
        })
    }

    /// Waits for a line matching `want`; returns when it arrived.
    pub fn wait_line(
        &self,
        deadline: Instant,
        want: impl Fn(&ChildLine) -> bool,
    ) -> Option<Instant> {
        self.wait_line_or(deadline, want, |_| {})
    }

    /// Waits for a line matching `want`, passing the lines before it to `other`.
    pub fn wait_line_or(
        &self,
        deadline: Instant,
        want: impl Fn(&ChildLine) -> bool,
        mut other: impl FnMut(&ChildLine),
    ) -> Option<Instant> {
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            match self.lines.recv_timeout(left) {
                Ok((at, line)) if want(&line) => return Some(at),
                Ok((_, ChildLine::Other(text))) => eprintln!("  child said: {text}"),
                Ok((_, line)) => other(&line),
                Err(_) => return None,
            }
        }
    }

    pub fn ready(&self) -> Result<NodeId, String> {
        let deadline = Instant::now() + SETUP_DEADLINE;
        loop {
            let left = deadline
                .checked_duration_since(Instant::now())
                .ok_or("child did not print READY in time")?;
            match self.lines.recv_timeout(left) {
                Ok((_, ChildLine::Ready(id))) => return Ok(id),
                Ok((_, other)) => eprintln!("  child said before READY: {other:?}"),
                Err(_) => return Err("child did not print READY in time".into()),
            }
        }
    }

    /// Asks the child to shut down; kills it if it has not exited within `grace`.
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
