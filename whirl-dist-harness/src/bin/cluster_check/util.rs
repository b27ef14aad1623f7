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

/// Makes the cluster's CA and a certificate for each of `labels` in [`certs_dir`]:
/// `ca.pem`, and `<label>.pem` and `<label>.key` (readable by this user only).
pub fn make_certs(cluster: &str, labels: &[&str]) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = certs_dir(cluster);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot make {dir:?}: {e}"))?;
    let ca = whirl_dist::certs::ClusterCa::new(&format!("{cluster}-ca"))
        .map_err(|e| format!("cannot make the CA: {e}"))?;
    let write = |name: String, text: &str| -> Result<(), String> {
        let path = dir.join(name);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| format!("cannot write {path:?}: {e}"))?;
        std::io::Write::write_all(&mut file, text.as_bytes())
            .map_err(|e| format!("cannot write {path:?}: {e}"))
    };
    write("ca.pem".to_owned(), &ca.certificate_pem())?;
    for label in labels {
        let cert = ca
            .node(&format!("node-{label}"), 1)
            .map_err(|e| format!("cannot make {label}'s certificate: {e}"))?;
        write(format!("{label}.pem"), &cert.certificate)?;
        write(format!("{label}.key"), &cert.key)?;
    }
    Ok(())
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
