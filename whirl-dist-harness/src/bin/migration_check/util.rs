//! Small helpers every part of the check uses: a lock that survives poisoning, the JSON of
//! the children's answers, certificates and free ports, pids as text, and a small PRNG.

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
