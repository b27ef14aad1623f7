//! The spawn row: spawn N processes (or tasks), give each one message, keep them all alive and
//! idle, and measure spawn rate and memory. Runs in a child process per side so each side's
//! resident set is its own.

use std::process::Command;
use std::time::Instant;

use crate::{tokio_side, whirl_side};

pub struct SpawnReport {
    pub rate: f64,
    pub bytes_per_process: u64,
    pub peak_rss_mib: u64,
}

/// Reads a `/proc/self/status` field in kB, as bytes.
fn status_bytes(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

pub fn spawn_in_child(side: &str, n: u64, threads: usize) -> Result<SpawnReport, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = Command::new(exe)
        .args(["--spawn-child", side, &n.to_string(), &threads.to_string()])
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<f64> = text
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    match fields[..] {
        [rate, bytes, peak] => Ok(SpawnReport {
            rate,
            bytes_per_process: bytes as u64,
            peak_rss_mib: peak as u64,
        }),
        _ => Err(format!("unexpected child output: {text}")),
    }
}

/// The child: prints "rate bytes_per_process peak_rss_mib".
pub fn run_spawn_child(args: &[String]) {
    let parse = |i: usize| args.get(i).and_then(|a| a.parse::<u64>().ok());
    let (Some(side), Some(n), Some(threads)) = (args.first(), parse(1), parse(2)) else {
        eprintln!("usage: --spawn-child whirl|tokio N THREADS");
        std::process::exit(2);
    };
    let before = status_bytes("VmRSS:");
    let start = Instant::now();
    // Each side returns a guard that keeps all N processes alive and idle.
    let keep_alive: Box<dyn std::any::Any> = match side.as_str() {
        "whirl" => Box::new(whirl_side::spawn_many(n, threads as usize)),
        "tokio" => Box::new(tokio_side::spawn_many(n, threads as usize)),
        other => {
            eprintln!("unknown side {other}");
            std::process::exit(2);
        }
    };
    let elapsed = start.elapsed();
    let after = status_bytes("VmRSS:");
    let peak = status_bytes("VmHWM:");
    println!(
        "{} {} {}",
        n as f64 / elapsed.as_secs_f64(),
        after.saturating_sub(before) / n.max(1),
        peak / (1024 * 1024)
    );
    // Exit without tearing a million processes down one by one.
    std::mem::forget(keep_alive);
    std::process::exit(0);
}
