//! The node the console runs on: the process's resident memory, the CPU time it has used and
//! its threads, as [`ProcessUsage`] reads them (from `/proc/self` on Linux; the same figures as
//! the `process_*` metrics). Elsewhere all are `None` and the page shows "n/a".

use crate::control::ProcessUsage;

/// What the kernel says about this process at one sample.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct NodeReading {
    /// Resident set size, bytes.
    pub(crate) rss_bytes: Option<u64>,
    /// User plus system CPU time since the process started, seconds.
    pub(crate) cpu_seconds: Option<f64>,
    /// OS threads of the process.
    pub(crate) threads: Option<u64>,
}

/// Reads the figures now; all `None` where the operating system does not offer them.
pub(crate) fn read() -> NodeReading {
    ProcessUsage::now().map_or_else(NodeReading::default, |u| NodeReading {
        rss_bytes: Some(u.resident_bytes),
        cpu_seconds: Some(u.cpu.as_secs_f64()),
        threads: Some(u.threads),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_this_process() {
        let r = read();
        assert!(r.rss_bytes.is_some_and(|b| b > 0), "{r:?}");
        assert!(r.cpu_seconds.is_some(), "{r:?}");
        assert!(r.threads.is_some_and(|t| t >= 1), "{r:?}");
    }
}
