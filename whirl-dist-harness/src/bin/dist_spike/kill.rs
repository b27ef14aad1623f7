//! Gate 1 and 1b: a child node killed with SIGKILL, or frozen with SIGSTOP, must be seen Down
//! by the parent within lease + 1 s, in every trial.
//!
//! SIGKILL closes the child's socket, so the parent may learn at once; SIGSTOP leaves the
//! socket open and the child silent, so only the lease can tell. Each signal comes at a random
//! point of the keep-alive cycle.

use std::process::Child;
use std::thread;
use std::time::{Duration, Instant};

use whirl_dist::NodeEvent;

use crate::child::ChildProc;
use crate::figures::{describe, ms, Row};
use crate::nodes::{parent_node, random_below, random_cluster, wait_event, SETUP_DEADLINE};

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGKILL: the process dies, the kernel closes its socket.
    Kill,
    /// SIGSTOP: the process hangs with its socket open; only the lease can tell.
    Stop,
}

pub fn send_signal(child: &mut Child, signal: Signal) -> Result<(), String> {
    match signal {
        // std's `Child::kill` sends SIGKILL on Unix.
        Signal::Kill => child.kill().map_err(|e| format!("kill: {e}")),
        Signal::Stop => stop(child),
    }
}

/// Freezes the child with SIGSTOP through kill(1), which keeps this binary free of `unsafe`
/// FFI; the microseconds the extra process costs are far below the lease being measured.
pub fn stop(child: &Child) -> Result<(), String> {
    let status = std::process::Command::new("kill")
        .arg("-STOP")
        .arg(child.id().to_string())
        .status()
        .map_err(|e| format!("cannot run kill(1): {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("kill -STOP {} failed: {status}", child.id()))
    }
}

pub fn gate1(trials: u64, lease: Duration, signal: Signal) -> Result<Row, String> {
    let name = match signal {
        Signal::Kill => "gate 1: SIGKILL -> Down within lease+1s",
        Signal::Stop => "gate 1b: SIGSTOP (hung) -> Down within lease+1s",
    };
    println!();
    println!("== {name}: {trials} trials ==");
    let cluster = random_cluster()?;
    let (parent, port) = parent_node(&cluster, lease)?;
    let events = parent.events();
    let endpoint = format!("tcp/127.0.0.1:{port}");
    let bound = lease + Duration::from_secs(1);
    let mut times = Vec::new();
    let mut within = 0;
    let mut missed = 0;
    let started = Instant::now();
    for trial in 1..=trials {
        let mut child = ChildProc::spawn(&endpoint, &cluster, lease)?;
        let child_id = child.ready()?;
        let up = wait_event(
            &events,
            Instant::now() + SETUP_DEADLINE,
            |e| *e == NodeEvent::Up(child_id),
            |_| {},
        );
        if up.is_none() {
            child.finish(Duration::ZERO);
            return Err(format!(
                "trial {trial}: the parent never saw child {child_id} Up"
            ));
        }
        // At a random point of the keep-alive cycle: right after Up, the child has just sent
        // its token, which would always put the kill at the start of a lease.
        thread::sleep(random_below(lease));
        let t0 = Instant::now();
        send_signal(&mut child.child, signal)?;
        let down = wait_event(
            &events,
            t0 + bound + Duration::from_secs(10),
            |e| matches!(e, NodeEvent::Down { node, .. } if *node == child_id),
            |_| {},
        );
        match down {
            Some(at) => {
                let took = at.duration_since(t0);
                times.push(took);
                if took <= bound {
                    within += 1;
                    if signal == Signal::Kill && took > Duration::from_millis(50) {
                        println!("  trial {trial}: slow Down, after {} ms", ms(took));
                    }
                } else {
                    println!(
                        "  trial {trial}: Down after {} ms (over the bound)",
                        ms(took)
                    );
                }
            }
            None => {
                missed += 1;
                println!("  trial {trial}: no Down within lease + 11 s");
            }
        }
        // Reap (a stopped child is killed first).
        let _ = child.child.kill();
        let _ = child.child.wait();
        if trial % 10 == 0 {
            println!("  {trial}/{trials} trials done, {within} within bound");
        }
    }
    let figures = format!(
        "{}; within {} ms: {within}/{trials}{}",
        describe(&mut times),
        bound.as_millis(),
        if missed > 0 {
            format!(", {missed} never Down")
        } else {
            String::new()
        }
    );
    println!(
        "  lease {} ms, {trials} trials in {:.1} s: {figures}",
        lease.as_millis(),
        started.elapsed().as_secs_f64()
    );
    let _ = parent.shutdown();
    Ok(Row {
        name: name.into(),
        trials,
        passed: within,
        figures,
    })
}
