//! What can go wrong when a node starts or stops.
//!
//! Every error from the network or from Zenoh is kept as the [`source`](std::error::Error::source)
//! of a [`DistError`], so `{:#}`-style reporters (and `anyhow`) print the whole chain. Nothing a
//! remote peer sends can produce a `DistError`: a malformed liveliness key is counted in
//! [`NodeStats::malformed_keys`](crate::NodeStats::malformed_keys) and ignored.

use std::time::Duration;

/// An error from starting or stopping a [`Node`](crate::Node).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DistError {
    /// The cluster name cannot be one chunk of a Zenoh key expression.
    #[error("invalid cluster name {name:?}: {reason}")]
    InvalidCluster {
        /// The name given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The lease is zero or too long to express in milliseconds.
    #[error("invalid lease {0:?}: it must be at least 1 ms and fit in a u64 of milliseconds")]
    InvalidLease(Duration),
    /// Zenoh rejected a configuration value (an endpoint that does not parse, for example).
    #[error("invalid Zenoh configuration for `{key}` = {value}")]
    Config {
        /// The Zenoh configuration key, such as `listen/endpoints`.
        key: &'static str,
        /// The JSON5 value whirl tried to set.
        value: String,
        /// Zenoh's reason.
        #[source]
        source: zenoh::Error,
    },
    /// The Zenoh session could not be opened (a listen endpoint could not be bound, for example).
    #[error("cannot open the Zenoh session")]
    Open(#[source] zenoh::Error),
    /// A liveliness token or subscriber could not be declared.
    #[error("cannot declare the {what}")]
    Declare {
        /// What was being declared.
        what: &'static str,
        /// The transport's reason.
        #[source]
        source: crate::transport::TransportError,
    },
    /// Undeclaring or closing failed during [`Node::shutdown`](crate::Node::shutdown). The node
    /// is gone all the same; peers see it Down at the latest when its lease expires.
    #[error("error while shutting down: cannot {what}")]
    Shutdown {
        /// The step that failed.
        what: &'static str,
        /// The transport's reason.
        #[source]
        source: crate::transport::TransportError,
    },
    /// Two different message tag names of this node hash to the same 64-bit wire tag (a
    /// chance of 1 in 2^64 per pair). Rename one.
    #[error("message tags {first:?} and {second:?} have the same wire hash; rename one")]
    TagCollision {
        /// The tag registered first.
        first: &'static str,
        /// The tag refused.
        second: &'static str,
    },
    /// A registry name must be one key-expression chunk: 1 to 128 ASCII letters, digits, `-`,
    /// `_` and `.`.
    #[error(
        "invalid registry name {name:?}: use 1 to 128 ASCII letters, digits, '-', '_' and '.'"
    )]
    InvalidName {
        /// The name given.
        name: String,
    },
    /// Only a process of this node, exported and alive, can be registered.
    #[error("{0} is not an exported, live process of this node")]
    NotExported(crate::Pid),
    /// A thread the node needs could not be started.
    #[error("cannot start the node's {what} thread")]
    Thread {
        /// Which thread.
        what: &'static str,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The configuration says neither how to secure links ([`NodeConfig::tls`](crate::NodeConfig::tls))
    /// nor that they may be insecure ([`NodeConfig::insecure_plaintext`](crate::NodeConfig::insecure_plaintext)).
    #[error("the node has no credentials: give it NodeConfig::tls(certificate, key, ca), or NodeConfig::insecure_plaintext(\"why\") for a loopback test")]
    NoTransportSecurity,
    /// A TLS node was given a plaintext endpoint.
    #[error("endpoint {endpoint:?} is not secured: a node with NodeConfig::tls listens and connects on tls/… or quic/… endpoints only")]
    PlaintextEndpoint {
        /// The endpoint.
        endpoint: String,
    },
    /// A certificate, key or CA file could not be read.
    #[error("cannot read {path:?}")]
    ReadPem {
        /// The file.
        path: std::path::PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The node's certificate, key or CA is unusable (does not parse, the key does not match
    /// the certificate, or the certificate is not issued by the CA).
    #[error("the node's credentials are unusable")]
    Credentials(#[source] crate::auth::AuthError),
    /// The operating system could not supply randomness for a fresh [`NodeId`](crate::NodeId).
    #[error("cannot draw a random node id")]
    Entropy(#[from] getrandom::Error),
}
