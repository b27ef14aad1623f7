//! Node identity: a fresh random 128-bit number per start.
//!
//! A node's id is its *incarnation*, like Erlang's creation number or an Orleans silo's epoch:
//! a process that restarts gets a new id, so a pid of the old incarnation can never resolve to
//! the new one, and a quarantined id stays quarantined for good.

use std::fmt;
use std::str::FromStr;

/// The identity of one node incarnation: a random `u128`, drawn anew on every start.
///
/// Its text form is exactly 32 lowercase hexadecimal digits, zero-padded; that is the last
/// chunk of the node's liveliness key `whirl/<cluster>/alive/<node-hex>`.
///
/// ```
/// use whirl_dist::NodeId;
///
/// let id = NodeId::from_u128(0xabc);
/// assert_eq!(id.to_string(), "00000000000000000000000000000abc");
/// assert_eq!("00000000000000000000000000000abc".parse::<NodeId>(), Ok(id));
/// assert!("abc".parse::<NodeId>().is_err()); // not canonical: 32 digits are required
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, whirl::Isolated)]
pub struct NodeId(u128);

impl NodeId {
    /// A fresh id from the operating system's random source.
    pub fn random() -> Result<NodeId, getrandom::Error> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes)?;
        Ok(NodeId(u128::from_le_bytes(bytes)))
    }

    /// The id with this number (for tests and for parsing wire formats).
    pub const fn from_u128(n: u128) -> NodeId {
        NodeId(n)
    }

    /// The number.
    pub const fn as_u128(self) -> u128 {
        self.0
    }
}

/// Serialized as its text form, 32 hex digits (a JSON number cannot hold 128 bits).
impl serde::Serialize for NodeId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeId({:032x})", self.0)
    }
}

/// The text was not a node id: 32 lowercase hexadecimal digits.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a node id (32 lowercase hex digits): {0:?}")]
pub struct ParseNodeIdError(pub String);

impl FromStr for NodeId {
    type Err = ParseNodeIdError;

    fn from_str(s: &str) -> Result<NodeId, ParseNodeIdError> {
        let canonical = s.len() == 32
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !canonical {
            return Err(ParseNodeIdError(s.to_owned()));
        }
        u128::from_str_radix(s, 16)
            .map(NodeId)
            .map_err(|_| ParseNodeIdError(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_form_round_trips_and_rejects_non_canonical_forms() {
        let id = NodeId::random().expect("entropy");
        assert_eq!(id.to_string().parse::<NodeId>(), Ok(id));
        for bad in [
            "",
            "xyz",
            "+0000000000000000000000000000abc",
            "00000000000000000000000000000ABC",
            "000000000000000000000000000000abc",
            "0000000000000000000000000000 abc",
        ] {
            assert!(bad.parse::<NodeId>().is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn random_ids_differ() {
        let a = NodeId::random().expect("entropy");
        let b = NodeId::random().expect("entropy");
        assert_ne!(a, b);
    }
}
