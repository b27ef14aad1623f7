//! Small helpers every part of the check uses: a lock that survives poisoning, the JSON of the
//! children's reports, free ports, and how ids and durations are written.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use whirl_dist::{NodeId, Pid};

pub fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

pub fn to_json<T: Serialize>(value: &T) -> Result<String, String> {
    serde_json::to_string(value).map_err(|e| format!("cannot encode a report: {e}"))
}

pub fn from_json<T: for<'de> Deserialize<'de>>(what: &str, text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| format!("malformed {what} {text:?}: {e}"))
}

/// Where the certificates of `cluster`'s nodes are: made by the parent, read by each node.
pub fn certs_dir(cluster: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("whirl-{cluster}-certs"))
}

/// Makes the cluster's CA and a certificate for each of `labels` in [`certs_dir`].
pub fn make_certs(cluster: &str, labels: &[&str]) -> Result<(), String> {
    whirl_dist_harness::make_certs(&certs_dir(cluster), &format!("{cluster}-ca"), labels)
}

/// Three distinct loopback ports nobody listens on now (QUIC endpoints are UDP ports).
pub fn free_ports() -> Result<[u16; 3], String> {
    let listeners = (0..3)
        .map(|_| std::net::UdpSocket::bind("127.0.0.1:0"))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("cannot find a free port: {e}"))?;
    let mut ports = [0; 3];
    for (port, listener) in ports.iter_mut().zip(&listeners) {
        *port = listener
            .local_addr()
            .map_err(|e| format!("cannot find a free port: {e}"))?
            .port();
    }
    Ok(ports)
}

/// A node id's first 8 hex digits.
pub fn short(id: NodeId) -> String {
    id.to_string()[..8].to_owned()
}

pub fn short_pid(pid: Pid) -> String {
    format!("{}@{}", pid.local(), short(pid.node()))
}

/// Nearest-rank percentile of sorted durations.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}
