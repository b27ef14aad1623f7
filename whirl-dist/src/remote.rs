//! Messages that cross nodes: the [`Remote`] and [`Request`] traits and the wire tag.

use serde::de::DeserializeOwned;
use serde::Serialize;
use whirl::Message;

/// A message type that can cross nodes: serde-encodable, with a stable name.
///
/// Implement it by hand: the name is a promise about the wire, not something to derive from
/// the Rust path.
///
/// A whirl message crosses to another node as its serde encoding (postcard) behind a **type
/// tag**: a 64-bit hash of the stable name the type declares in [`Remote::TAG`]. The receiving
/// node finds the decoder by that tag, so the two sides must agree on the name and on the
/// encoding, not on Rust's type names (which change with module paths and compiler versions).
/// A frame whose tag the receiving process does not accept, or whose payload does not decode
/// as that type exactly (trailing bytes included), is bounced to the sender as
/// [`BounceReason::Incompatible`](crate::BounceReason::Incompatible); it is never half-read.
///
/// Version a message by its tag: when the encoding changes incompatibly, change the tag
/// (`"orders.Charge/2"`), and have the new receivers accept both during a rolling upgrade.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use whirl::prelude::*;
/// use whirl_dist::{Remote, Request};
///
/// #[derive(Message, Serialize, Deserialize)]
/// struct Charge {
///     account: u64,
///     cents: i64,
/// }
///
/// impl Remote for Charge {
///     const TAG: &'static str = "orders.Charge/1";
/// }
///
/// // A request: its handler answers a balance, which travels back as the reply.
/// impl Request for Charge {
///     type Reply = i64;
/// }
/// ```
pub trait Remote: Message + Serialize + DeserializeOwned {
    /// The name every node knows this message type by, such as `"orders.Charge/1"`: stable
    /// across builds, changed when the encoding changes incompatibly.
    const TAG: &'static str;
}

/// A [`Remote`] message that is asked (request/reply) across nodes: its handler's answer is
/// [`Reply`](Request::Reply), sent back serde-encoded.
///
/// The receiving process must answer it with this type (`P: Answers<M, Reply = M::Reply>`),
/// which [`ExportBuilder::answer`](crate::ExportBuilder::answer) checks at compile time.
pub trait Request: Remote {
    /// What the handler answers.
    type Reply: Serialize + DeserializeOwned + Send + 'static;
}

/// The wire tag of a stable name: 64-bit FNV-1a, computed at compile time.
///
/// Two names hashing alike on one node are refused when the second is registered
/// ([`DistError::TagCollision`](crate::DistError::TagCollision)).
pub(crate) const fn tag_of(name: &str) -> u64 {
    let bytes = name.as_bytes();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    hash
}

/// The tag of `M`, as a constant.
pub(crate) struct TagOf<M>(std::marker::PhantomData<M>);

impl<M: Remote> TagOf<M> {
    pub(crate) const TAG: u64 = tag_of(M::TAG);
}

#[cfg(test)]
mod tests {
    use super::tag_of;

    #[test]
    fn tags_are_fnv1a_of_the_name() {
        // Reference values of 64-bit FNV-1a.
        assert_eq!(tag_of(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(tag_of("a"), 0xaf63_dc4c_8601_ec8c);
        assert_ne!(tag_of("orders.Charge/1"), tag_of("orders.Charge/2"));
    }
}
