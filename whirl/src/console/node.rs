//! The node the console runs on: the process's resident memory and the CPU time it has used,
//! read from `/proc/self` on Linux. Elsewhere both are `None` and the page shows "n/a".
//!
//! The parsing is kept apart from the reading so that it is tested on fixed text.

/// What the kernel says about this process at one sample.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct NodeReading {
    /// Resident set size, bytes (`VmRSS` of `/proc/self/status`).
    pub(crate) rss_bytes: Option<u64>,
    /// User plus system CPU time since the process started, seconds (`utime` + `stime` of
    /// `/proc/self/stat`).
    pub(crate) cpu_seconds: Option<f64>,
    /// OS threads of the process (`Threads` of `/proc/self/status`).
    pub(crate) threads: Option<u64>,
}

/// Clock ticks per second of `/proc/<pid>/stat`'s times: the kernel's `USER_HZ`, which is 100
/// on every architecture Linux runs whirl on (it is part of the kernel's ABI, whatever `HZ`
/// the kernel was built with).
const USER_HZ: f64 = 100.0;

/// Reads `/proc/self` (Linux); all `None` elsewhere or if it cannot be read.
pub(crate) fn read() -> NodeReading {
    if !cfg!(target_os = "linux") {
        return NodeReading::default();
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    NodeReading {
        rss_bytes: status_field(&status, "VmRSS:").map(|kb| kb.saturating_mul(1024)),
        cpu_seconds: cpu_ticks(&stat).map(|ticks| ticks as f64 / USER_HZ),
        threads: status_field(&status, "Threads:"),
    }
}

/// The number after `key` in `/proc/<pid>/status` (`VmRSS:   1234 kB` gives 1234).
fn status_field(status: &str, key: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse().ok()
}

/// `utime` + `stime` of `/proc/<pid>/stat`, in clock ticks. The command name (field 2) is in
/// parentheses and may hold spaces and parentheses itself, so fields are counted after the
/// last `)`: `utime` and `stime` are fields 14 and 15, the 12th and 13th after it.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime.saturating_add(stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_and_stat() {
        let status = "Name:\tdemo\nVmPeak:\t  20000 kB\nVmRSS:\t   5120 kB\nThreads:\t7\n";
        assert_eq!(status_field(status, "VmRSS:"), Some(5120));
        assert_eq!(status_field(status, "Threads:"), Some(7));
        assert_eq!(status_field(status, "VmSwap:"), None);
        // A command name with a space and a parenthesis in it.
        let stat = "4242 (my (odd) demo) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 7 0";
        assert_eq!(cpu_ticks(stat), Some(325));
        assert_eq!(cpu_ticks("garbage"), None);
        assert_eq!(cpu_ticks("1 (x) S 1"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_this_process() {
        let r = read();
        assert!(r.rss_bytes.is_some_and(|b| b > 0), "{r:?}");
        assert!(r.cpu_seconds.is_some(), "{r:?}");
        assert!(r.threads.is_some_and(|t| t >= 1), "{r:?}");
    }
}
