//! Small helpers every part of the check uses: a lock that survives poisoning, the JSON of
//! the children's answers, certificates and free ports, pids as text, and a small PRNG.

use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use whirl_dist::{NodeId, Pid};

pub fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

pub fn to_json<T: Serialize>(value: &T) -> Result<String, String> {
    serde_json::to_string(value).map_err(|e| format!("cannot encode an answer: {e}"))
}

pub fn from_json<T: for<'de> Deserialize<'de>>(what: &str, text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| format!("malformed {what} {text:?}: {e}"))
}

/// Makes a cluster CA and a certificate for each of `labels` in `dir`: `ca.pem`, and
/// `<label>.pem` and `<label>.key` (readable by this user only).
pub fn make_certs(dir: &Path, labels: &[&str]) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot make {dir:?}: {e}"))?;
    let ca = whirl_dist::certs::ClusterCa::new("migration-check-ca")
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

/// Three distinct loopback ports nobody listens on now.
pub fn free_ports() -> Result<[u16; 3], String> {
    let listeners = (0..3)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
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

pub fn endpoint(port: u16) -> String {
    format!("tls/127.0.0.1:{port}")
}

/// Parses a pid's text form, `<local>@<node-hex>`.
pub fn parse_pid(text: &str) -> Result<Pid, String> {
    let (local, node) = text
        .split_once('@')
        .ok_or_else(|| format!("not a pid: {text:?}"))?;
    let local = local.parse().map_err(|_| format!("not a pid: {text:?}"))?;
    let node = node.parse::<NodeId>().map_err(|e| e.to_string())?;
    Ok(Pid::new(node, local))
}

pub fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// Signed microseconds as milliseconds, with their sign.
pub fn signed_ms(us: i64) -> String {
    format!("{:+.1} ms", us as f64 / 1e3)
}

/// SplitMix64: a small, seedable generator (the kill delays need reproducibility, not
/// quality).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// A seed from the operating system.
    pub fn os_seed() -> Result<u64, String> {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).map_err(|e| format!("no entropy for a seed: {e}"))?;
        Ok(u64::from_le_bytes(bytes))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `low..=high`.
    pub fn between(&mut self, low: i64, high: i64) -> i64 {
        let span = u64::try_from(high - low).unwrap_or(0) + 1;
        low + i64::try_from(self.next_u64() % span).unwrap_or(0)
    }
}

/// One line to the parent. A parent that is gone cannot read it; the child notices when its
/// stdin closes.
pub fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = std::io::Write::write_fmt(&mut out, format_args!("{line}\n"));
    let _ = std::io::Write::flush(&mut out);
}
