//! The command line: flags and their values, and the settings of gates 3 and 4 (the sink's
//! work and queue, the pacing, the credit window, the chaos trials and modes).
//!
//! Flags are `--name value` pairs looked up anywhere in the arguments; a missing flag takes
//! its default, a malformed value is a usage error (exit code 2).

use std::time::Duration;

use crate::proxy::PartitionMode;

pub fn flag_value<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

pub fn flag_number(args: &[String], name: &str, default: u64) -> Result<u64, String> {
    match flag_value(args, name) {
        None => Ok(default),
        Some(text) => text
            .parse()
            .map_err(|_| format!("{name} needs a whole number, got {text:?}")),
    }
}

pub fn flag_window(args: &[String]) -> Result<Option<usize>, String> {
    flag_value(args, "--window")
        .map(|text| {
            text.parse::<usize>()
                .map_err(|_| format!("--window needs a whole number, got {text:?}"))
        })
        .transpose()
}

/// Gate 3's settings.
pub struct Overload {
    /// Messages to post (0 skips the gate).
    pub posts: u64,
    /// The sink's work per message (a spin).
    pub work: Duration,
    /// The sink group's `QueueLength` threshold.
    pub queue_max: u64,
    /// How many times the sink's capacity the parent posts at.
    pub factor: u64,
    /// The sink's capacity the pacing assumes, in messages per second.
    pub capacity: u64,
    /// Both nodes' credit window, if not whirl-dist's default.
    pub window: Option<usize>,
}

impl Overload {
    pub fn from_args(args: &[String]) -> Result<Overload, String> {
        let work_us = flag_number(args, "--work-us", 10)?;
        Ok(Overload {
            posts: flag_number(args, "--overload-posts", 1_000_000)?,
            work: Duration::from_micros(work_us),
            queue_max: flag_number(args, "--queue-max", 1_000)?,
            factor: flag_number(args, "--overload", 10)?.max(1),
            capacity: flag_number(args, "--sink-rate", 1_000_000 / work_us.max(1))?.max(1),
            window: flag_window(args)?,
        })
    }
}

/// How a gate 4 trial cuts the traffic.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ChaosMode {
    /// Gate 2's proxy partitions the link; the sink lives on and reports.
    Partition(PartitionMode),
    /// SIGKILL of the sink.
    Kill,
}

/// Gate 4's settings.
pub struct Chaos {
    /// Trials per mode (0 skips the gate).
    pub trials: u64,
    /// Posts per trial; the cut comes after about a third of them.
    pub posts: u64,
    pub modes: Vec<ChaosMode>,
}

impl Chaos {
    pub fn from_args(args: &[String]) -> Result<Chaos, String> {
        let trials = flag_number(args, "--chaos-trials", 2)?;
        let posts = flag_number(args, "--chaos-posts", 60_000)?;
        if trials > 0 && posts < 3 {
            return Err("--chaos-posts needs at least 3 posts".into());
        }
        let modes = flag_value(args, "--chaos-modes")
            .unwrap_or("drop,blackhole,kill")
            .split(',')
            .filter(|m| !m.is_empty())
            .map(|m| match m {
                "drop" => Ok(ChaosMode::Partition(PartitionMode::Drop)),
                "blackhole" => Ok(ChaosMode::Partition(PartitionMode::Blackhole)),
                "kill" => Ok(ChaosMode::Kill),
                other => Err(format!("unknown chaos mode {other:?}")),
            })
            .collect::<Result<_, _>>()?;
        Ok(Chaos {
            trials,
            posts,
            modes,
        })
    }
}
