//! What the operating system says this process uses ([`ProcessUsage`]): CPU time, memory,
//! file descriptors, threads, start time. The figures of Prometheus's standard `process_*`
//! metrics, read from `/proc/self` on Linux; elsewhere there are none.

use std::time::Duration;

/// The operating system's figures for this process, as of [`ProcessUsage::now`].
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct ProcessUsage {
    /// CPU time spent, user and system.
    pub cpu: Duration,
    /// Resident memory, bytes.
    pub resident_bytes: u64,
    /// Virtual memory, bytes.
    pub virtual_bytes: u64,
    /// Open file descriptors.
    pub open_fds: u64,
    /// The limit on open file descriptors (soft), if there is one.
    pub max_fds: Option<u64>,
    /// Operating-system threads.
    pub threads: u64,
    /// When the process started, seconds since the Unix epoch.
    pub start_time_seconds: f64,
}

impl ProcessUsage {
    /// Reads the figures now: `None` where the operating system does not offer them (only
    /// Linux's `/proc` is read) or they cannot be read.
    pub fn now() -> Option<ProcessUsage> {
        read()
    }
}

#[cfg(target_os = "linux")]
fn read() -> Option<ProcessUsage> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    let fields: Vec<&str> = stat.get(stat.rfind(')')? + 2..)?.split(' ').collect();
    // `fields[0]` is field 3 (the state): field n is `fields[n - 3]`.
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    let ticks = rustix::param::clock_ticks_per_second();
    if ticks == 0 {
        return None;
    }
    let from_ticks = |t: u64| Duration::from_secs_f64(t as f64 / ticks as f64);
    let cpu = from_ticks(field(14)? + field(15)?);
    let page = rustix::param::page_size() as u64;
    let boot = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime ")?.trim().parse::<u64>().ok())?;
    let open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
    let max_fds = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|limits| {
            let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
            line.split_whitespace().nth(3)?.parse().ok()
        });
    Some(ProcessUsage {
        cpu,
        resident_bytes: field(24)? * page,
        virtual_bytes: field(23)?,
        // Reading the directory opened one descriptor more.
        open_fds: open_fds.saturating_sub(1),
        max_fds,
        threads: field(20)?,
        start_time_seconds: boot as f64 + from_ticks(field(22)?).as_secs_f64(),
    })
}

#[cfg(not(target_os = "linux"))]
fn read() -> Option<ProcessUsage> {
    None
}

#[cfg(all(test, target_os = "linux", not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_figures_describe_this_process() {
        let before = ProcessUsage::now().expect("Linux has /proc/self");
        let file = std::fs::File::open("/proc/self/stat").expect("readable");
        let spin = std::time::Instant::now();
        while spin.elapsed() < Duration::from_millis(50) {
            std::hint::black_box(0u64);
        }
        let after = ProcessUsage::now().expect("Linux has /proc/self");
        assert!(after.cpu > before.cpu, "{before:?} then {after:?}");
        assert_eq!(after.open_fds, before.open_fds + 1, "one more file open");
        drop(file);
        assert!(after.resident_bytes > 0 && after.virtual_bytes >= after.resident_bytes);
        assert!(after.threads >= 1);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after the epoch")
            .as_secs_f64();
        assert!(
            after.start_time_seconds <= now + 1.0 && after.start_time_seconds > now - 86_400.0,
            "started {} s before now",
            now - after.start_time_seconds
        );
        assert!(after.max_fds.is_some_and(|m| m >= after.open_fds));
    }
}
