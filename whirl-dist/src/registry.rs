//! The cluster-wide name registry, as each node holds it: a full copy, fed by liveliness
//! tokens.
//!
//! `register(name, pid)` declares the token `whirl/<cluster>/reg/<name>/<ms>/<node-hex>/<local>`
//! (`ms`: the registration time in milliseconds since the Unix epoch), and on a TLS node a last
//! chunk: the registering node's signature (hex) of the name and the process, with its
//! certificate's key. Any member can declare any token, so a TLS node lists a registration only
//! once the signature verifies with the certificate of the node the key names (`core/registry.rs`). Tokens carry no payload:
//! the key is the whole entry. Every node subscribes, with history, to `whirl/<cluster>/reg/**`
//! and keeps every entry it sees, so `whereis` is a local lookup; Zenoh withdraws a token when
//! its node closes its session or is cut off, so a dead node's names vanish by themselves (the
//! failure kameo's DHT registry showed: entries that outlive their node). A node also drops the
//! names of a node it sees Down, without waiting for the withdrawal.
//!
//! A name may be held by several processes (Erlang's `pg`-style duplicates happen when two
//! nodes register at once): `whereis` answers the **first holder**, the registration this node
//! saw first, and keeps answering it until it goes; `whereis_all` lists all of them, first
//! holder first. A later registration never displaces a holder, whatever time its key states
//! (the time is the registering node's word, so it decides nothing); two nodes can disagree
//! only about registrations made within the time a token takes to spread. Each later holder
//! is a conflict, reported on the node as [`NodeEvent::NameConflict`](crate::NodeEvent).

use std::collections::BTreeMap;

use crate::{NodeId, Pid};

/// One registration: the registering node's time (informative only) and the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Entry {
    pub(crate) ms: u64,
    pub(crate) pid: Pid,
}

/// The registry table: for each name, its holders in the order this node saw them.
#[derive(Default)]
pub(crate) struct Registry {
    names: BTreeMap<String, Vec<Entry>>,
    /// Keys under the registry prefix that did not parse.
    pub(crate) malformed: u64,
}

/// Whether `name` can be one chunk of a key expression: non-empty, at most 128 bytes of ASCII
/// letters, digits, `-`, `_` and `.`.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The token key suffix (after `whirl/<cluster>/reg/`) of a registration, with the
/// registering node's signature (hex) last on a TLS node.
pub(crate) fn key_suffix(name: &str, entry: Entry, signature: Option<&[u8]>) -> String {
    let mut key = format!(
        "{name}/{}/{}/{}",
        entry.ms,
        entry.pid.node(),
        entry.pid.local()
    );
    if let Some(signature) = signature {
        key.push('/');
        for byte in signature {
            key.push_str(&format!("{byte:02x}"));
        }
    }
    key
}

/// The longest signature a key may carry, in bytes (an RSA-4096 one is 512, plus the scheme).
const MAX_SIGNATURE: usize = 1024;

/// Parses a key suffix, with its signature if it has one; `None` if it is not one this module
/// makes.
pub(crate) fn parse_suffix(suffix: &str) -> Option<(String, Entry, Option<Vec<u8>>)> {
    let mut parts = suffix.split('/');
    let (name, ms, node, local) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let signature = match parts.next() {
        None => None,
        Some(hex) => Some(parse_hex(hex)?),
    };
    if parts.next().is_some() || !valid_name(name) {
        return None;
    }
    let node: NodeId = node.parse().ok()?;
    let entry = Entry {
        ms: ms.parse().ok()?,
        pid: Pid::new(node, local.parse().ok()?),
    };
    Some((name.to_owned(), entry, signature))
}

/// Bytes from lowercase or uppercase hex, at most [`MAX_SIGNATURE`] of them.
fn parse_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.is_empty() || !hex.len().is_multiple_of(2) || hex.len() > 2 * MAX_SIGNATURE {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

impl Registry {
    /// Adds a holder of `name`; returns the first holder when this one is not it (a
    /// conflict), `None` when it is the first or was already known.
    pub(crate) fn insert(&mut self, name: String, entry: Entry) -> Option<Pid> {
        let holders = self.names.entry(name).or_default();
        if holders.contains(&entry) {
            return None;
        }
        holders.push(entry);
        (holders.len() > 1).then(|| holders[0].pid)
    }

    pub(crate) fn remove(&mut self, name: &str, entry: Entry) {
        if let Some(set) = self.names.get_mut(name) {
            set.retain(|e| *e != entry);
            if set.is_empty() {
                self.names.remove(name);
            }
        }
    }

    /// Drops every name held by a process of `node`.
    pub(crate) fn forget_node(&mut self, node: NodeId) {
        self.names.retain(|_, set| {
            set.retain(|e| e.pid.node() != node);
            !set.is_empty()
        });
    }

    pub(crate) fn first(&self, name: &str) -> Option<Pid> {
        self.names.get(name)?.first().map(|e| e.pid)
    }

    pub(crate) fn all(&self, name: &str) -> Vec<Pid> {
        self.names
            .get(name)
            .map(|set| set.iter().map(|e| e.pid).collect())
            .unwrap_or_default()
    }

    /// Every name, with how many processes hold it.
    pub(crate) fn names(&self) -> Vec<(String, usize)> {
        self.names
            .iter()
            .map(|(n, set)| (n.clone(), set.len()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_strangers_are_refused() {
        let entry = Entry {
            ms: 1_700_000_000_000,
            pid: Pid::new(NodeId::from_u128(0xabc), 42),
        };
        let key = key_suffix("orders.db", entry, None);
        assert_eq!(
            parse_suffix(&key),
            Some(("orders.db".to_owned(), entry, None))
        );
        let signed = key_suffix("orders.db", entry, Some(&[0, 0xab, 0x7f]));
        assert!(signed.ends_with("/00ab7f"), "{signed}");
        assert_eq!(
            parse_suffix(&signed),
            Some(("orders.db".to_owned(), entry, Some(vec![0, 0xab, 0x7f])))
        );
        for bad in [
            "",
            "a",
            "a/1/2",
            "a/x/00000000000000000000000000000abc/1",
            "a/1/abc/1",
            "a/1/00000000000000000000000000000abc/1/xyz",
            "a/1/00000000000000000000000000000abc/1/abc",
            "a/1/00000000000000000000000000000abc/1/00/extra",
            "a*/1/00000000000000000000000000000abc/1",
        ] {
            assert_eq!(parse_suffix(bad), None, "{bad}");
        }
        assert!(!valid_name("a/b") && !valid_name("") && !valid_name("**"));
        assert!(!valid_name(&"x".repeat(129)));
    }

    #[test]
    fn the_first_holder_answers_whatever_time_a_later_one_states() {
        let mut r = Registry::default();
        let (a, b) = (NodeId::from_u128(1), NodeId::from_u128(2));
        let first = Entry {
            ms: 20,
            pid: Pid::new(a, 1),
        };
        assert_eq!(r.insert("db".into(), first), None);
        assert_eq!(r.insert("db".into(), first), None);
        // A later registration claiming an earlier time does not take the name.
        let later = Entry {
            ms: 0,
            pid: Pid::new(b, 7),
        };
        assert_eq!(r.insert("db".into(), later), Some(Pid::new(a, 1)));
        assert_eq!(r.first("db"), Some(Pid::new(a, 1)));
        assert_eq!(r.all("db"), vec![Pid::new(a, 1), Pid::new(b, 7)]);
        r.forget_node(b);
        assert_eq!(r.first("db"), Some(Pid::new(a, 1)));
        r.remove(
            "db",
            Entry {
                ms: 20,
                pid: Pid::new(a, 1),
            },
        );
        assert_eq!(r.first("db"), None);
        assert!(r.names().is_empty());
    }
}
