//! Who a node lets in and what it lets them do: its transport security ([`NodeConfig::tls`](crate::NodeConfig::tls) or,
//! for loopback tests only, [`NodeConfig::insecure_plaintext`](crate::NodeConfig::insecure_plaintext)) and its authorisation
//! [`Policy`].
//!
//! **Links.** A node talks to its peers over TLS 1.3 (on TCP, or QUIC), mutually
//! authenticated: the node presents its certificate, demands one from every peer, and accepts
//! only certificates issued by the cluster's certificate authority (CA). A process that holds
//! no such certificate cannot open a session with the node at all: it cannot declare
//! membership, post, ask, spawn or register. Zenoh's `transport_tls` and `transport_quic` do
//! this; the certificates are read once, at [`Node::start`](crate::Node::start).
//!
//! **Identities.** On top of the link, each pair of nodes runs a handshake (see `auth.rs`):
//! each signs a hello with its certificate's key, which binds its [`NodeId`](crate::NodeId) (a
//! hash of the certificate and a fresh nonce) to the certificate, and agrees a key with the
//! peer. Every later frame carries a MAC under that pair's key, so a member cannot speak as
//! another member, and a peer is Up only once its hello verified. The certificate's common name
//! is the peer's **name**, which the [`Policy`] refers to.
//!
//! **Authorisation.** A [`Policy`] says which message types peers may send, which factories
//! which peers may call (none by default), which registry names this node accepts from peers,
//! and how far each peer's principals are believed: a peer asserts a principal's priority and
//! utility, and the node caps them at what it trusts that peer with (nothing above the
//! default priority 0 unless told), because a principal is a claim the peer makes, not a fact
//! the link proves.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// PEM text, from a file or from memory.
#[derive(Clone)]
pub enum Pem {
    /// Read from this file when the node starts.
    File(PathBuf),
    /// These bytes.
    Inline(Vec<u8>),
}

impl Pem {
    /// The PEM text, read from its file if it is one.
    pub(crate) fn read(&self) -> Result<Vec<u8>, crate::DistError> {
        match self {
            Pem::Inline(bytes) => Ok(bytes.clone()),
            Pem::File(path) => std::fs::read(path).map_err(|source| crate::DistError::ReadPem {
                path: path.clone(),
                source,
            }),
        }
    }
}

impl std::fmt::Debug for Pem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pem::File(path) => f.debug_tuple("File").field(path).finish(),
            // Never print key material.
            Pem::Inline(bytes) => write!(f, "Inline({} bytes)", bytes.len()),
        }
    }
}

impl From<PathBuf> for Pem {
    fn from(path: PathBuf) -> Pem {
        Pem::File(path)
    }
}

impl From<&std::path::Path> for Pem {
    fn from(path: &std::path::Path) -> Pem {
        Pem::File(path.to_owned())
    }
}

impl From<&str> for Pem {
    /// A path.
    fn from(path: &str) -> Pem {
        Pem::File(path.into())
    }
}

impl From<Vec<u8>> for Pem {
    /// PEM text.
    fn from(bytes: Vec<u8>) -> Pem {
        Pem::Inline(bytes)
    }
}

/// A node's certificate chain (its own certificate first), its private key, and the
/// certificate(s) of the cluster's CA.
#[derive(Clone, Debug)]
pub(crate) struct TlsFiles {
    pub(crate) chain: Pem,
    pub(crate) key: Pem,
    pub(crate) ca: Pem,
}

/// How a node's links are secured.
#[derive(Clone, Debug)]
pub(crate) enum Transport {
    /// Not said yet: [`Node::start`](crate::Node::start) refuses to start.
    Unset,
    /// Mutually authenticated TLS, identities bound to certificates.
    Tls(TlsFiles),
    /// No encryption, no authentication: anyone who reaches a port is a member. The reason is
    /// logged as a warning at start.
    Plaintext {
        /// Why, as the user said it.
        why: String,
    },
}

/// A set of peers, by the names in their certificates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Peers {
    /// Every member of the cluster (every holder of a certificate of its CA; in plaintext mode,
    /// anyone who reaches the node).
    Any,
    /// The peers whose certificate names are listed. Never matches in plaintext mode, where
    /// peers have no proven name.
    Named(BTreeSet<String>),
}

impl Peers {
    /// The peers with these certificate names.
    pub fn named<I, S>(names: I) -> Peers
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Peers::Named(names.into_iter().map(Into::into).collect())
    }

    /// Whether a peer of this proven name (or of none) is in the set.
    pub(crate) fn contains(&self, name: Option<&str>) -> bool {
        match self {
            Peers::Any => true,
            Peers::Named(names) => name.is_some_and(|n| names.contains(n)),
        }
    }
}

/// What this node lets its peers do; given with [`NodeConfig::policy`](crate::NodeConfig::policy).
///
/// The default ([`Policy::new`]): peers may post and ask any message type this node
/// [exports](crate::Node::export) (the export already lists, per process, the types it
/// accepts); no peer may call any factory; any name a peer registers is accepted; a peer's
/// principals arrive with their priority capped at 0 and their utility at 1.0 (the defaults of
/// a [`whirl::Principal`]), so no peer can jump an admission queue by claiming to matter.
///
/// ```
/// use whirl_dist::{Peers, Policy};
///
/// let policy = Policy::new()
///     .allow_factory("counter", Peers::named(["frontend-1", "frontend-2"]))
///     .trust_principals(Peers::named(["frontend-1", "frontend-2"]), 200, 10.0)
///     .messages(["bank.Deposit/1", "bank.Balance/1"]);
/// assert!(policy.may_call("counter", Some("frontend-1")));
/// assert!(!policy.may_call("counter", Some("batch-7")));
/// assert!(!policy.may_call("counter", None));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    messages: Option<BTreeSet<String>>,
    factories: BTreeMap<String, Peers>,
    names: Option<BTreeSet<String>>,
    principals: Vec<(Peers, u8, f64)>,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy::new()
    }
}

impl Policy {
    /// The default policy (see the type's documentation).
    pub fn new() -> Policy {
        Policy {
            messages: None,
            factories: BTreeMap::new(),
            names: None,
            principals: Vec::new(),
        }
    }

    /// Peers may send only these message types (by their [`Remote::TAG`](crate::Remote::TAG)),
    /// even to a process that exports more; anything else bounces as
    /// [`Unauthorised`](crate::BounceReason::Unauthorised) and is counted in
    /// [`DistCounts::unauthorised`](crate::DistCounts::unauthorised).
    pub fn messages<I, S>(mut self, tags: I) -> Policy
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.messages = Some(tags.into_iter().map(Into::into).collect());
        self
    }

    /// `peers` may call the factory `name` with [`Node::spawn_on`](crate::Node::spawn_on).
    /// Factories are denied by default; a refused call fails with
    /// [`SpawnRemoteError::Unauthorised`](crate::SpawnRemoteError::Unauthorised).
    pub fn allow_factory(mut self, name: impl Into<String>, peers: Peers) -> Policy {
        self.factories.insert(name.into(), peers);
        self
    }

    /// This node accepts peers' registrations only under these names; others are ignored
    /// (not in [`whereis`](crate::Node::whereis)) and counted in
    /// [`DistCounts::unauthorised`](crate::DistCounts::unauthorised).
    pub fn names<I, S>(mut self, names: I) -> Policy
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.names = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Principals asserted by `peers` keep a priority up to `max_priority` and a utility up to
    /// `max_utility` (higher claims are lowered to these). Later calls take precedence over
    /// earlier ones for the peers they name.
    pub fn trust_principals(mut self, peers: Peers, max_priority: u8, max_utility: f64) -> Policy {
        let max_utility = if max_utility.is_finite() {
            max_utility.max(0.0)
        } else {
            f64::MAX
        };
        self.principals.push((peers, max_priority, max_utility));
        self
    }

    /// Whether a peer of this name may send messages tagged `tag`.
    pub fn may_send(&self, tag: &str) -> bool {
        self.messages.as_ref().is_none_or(|m| m.contains(tag))
    }

    /// Whether a peer of this proven name (`None` in plaintext mode) may call factory `name`.
    pub fn may_call(&self, factory: &str, peer: Option<&str>) -> bool {
        self.factories
            .get(factory)
            .is_some_and(|peers| peers.contains(peer))
    }

    /// Whether a peer's registration under `name` is accepted.
    pub fn may_register(&self, name: &str) -> bool {
        self.names.as_ref().is_none_or(|n| n.contains(name))
    }

    /// The highest priority and utility believed from a peer of this proven name.
    pub fn principal_caps(&self, peer: Option<&str>) -> (u8, f64) {
        self.principals
            .iter()
            .rev()
            .find(|(peers, _, _)| peers.contains(peer))
            .map_or((0, 1.0), |&(_, p, u)| (p, u))
    }

    /// The message tags peers may send, hashed, or `None` for any.
    pub(crate) fn message_tags(&self) -> Option<rustc_hash::FxHashSet<u64>> {
        self.messages
            .as_ref()
            .map(|m| m.iter().map(|t| crate::remote::tag_of(t)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_denies_factories_and_caps_principals() {
        let p = Policy::new();
        assert!(p.may_send("anything/1"));
        assert!(!p.may_call("counter", Some("a")));
        assert!(p.may_register("x"));
        assert_eq!(p.principal_caps(Some("a")), (0, 1.0));
    }

    #[test]
    fn named_peers_need_a_proven_name() {
        let p = Policy::new()
            .allow_factory("f", Peers::named(["a"]))
            .trust_principals(Peers::Any, 3, 2.0)
            .trust_principals(Peers::named(["a"]), 250, f64::NAN);
        assert!(p.may_call("f", Some("a")));
        assert!(!p.may_call("f", Some("b")));
        assert!(!p.may_call("f", None));
        assert_eq!(p.principal_caps(Some("a")), (250, f64::MAX));
        assert_eq!(p.principal_caps(Some("b")), (3, 2.0));
        assert_eq!(p.principal_caps(None), (3, 2.0));
    }

    #[test]
    fn inline_key_material_is_never_printed() {
        let pem = Pem::from(b"-----BEGIN PRIVATE KEY-----secret".to_vec());
        assert!(!format!("{pem:?}").contains("secret"));
    }
}
