//! How a node joins a cluster: [`NodeConfig`], the settings [`Node::start`](crate::Node::start)
//! reads, and their translation into a Zenoh configuration (peer mode, the endpoints, scouting,
//! the lease and its keep-alives). The translation refuses, as errors, a cluster name that is
//! empty or holds characters other than ASCII letters, digits, `-`, `_` and `.`, a lease that
//! does not fit in milliseconds, and a value Zenoh does not accept. What each setting means,
//! and its default, is documented on the type, where users of the crate see it.

use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;

use crate::security::{Pem, TlsFiles, Transport};
use crate::{DistError, Policy};

/// Where a node listens, whom it connects to, and how fast it declares peers dead.
///
/// Built with [`NodeConfig::new`] and the builder methods; read back with the getters of the
/// same name.
///
/// The defaults are for one machine and for CI: listen on a loopback port, find peers only
/// through the endpoints you list, and declare a peer dead after a 3 s lease.
///
/// * **Endpoints.** Zenoh endpoints such as `tcp/127.0.0.1:7447`. A node listens on its
///   [`listen`](NodeConfig::listen) endpoints and opens links to its
///   [`connect`](NodeConfig::connect) endpoints, retrying in the background while a peer is
///   unreachable and again whenever a link is lost. Peers are not routed through one another:
///   with scouting off, make the mesh full (every pair of nodes linked by one side connecting to
///   the other).
/// * **Scouting.** Zenoh can find peers by UDP multicast and by gossip (peers telling each other
///   the addresses of further peers). Both are **off** by default: multicast is often missing in
///   containers, and gossip would let two nodes link directly around a proxy or firewall you
///   configured between them.
/// * **Lease.** Zenoh's link lease: a link on which nothing arrives for this long is closed,
///   and the peer's liveliness tokens are withdrawn, which is what makes it Down here. Four
///   keep-alives are sent per lease. A peer that dies with its socket (a crash, `kill -9`) is
///   usually seen at once, because the kernel closes the socket; the lease bounds the time for a
///   peer that hangs or a network that goes silent.
///
/// ```
/// use std::time::Duration;
/// use whirl_dist::NodeConfig;
///
/// let config = NodeConfig::new("orders")
///     .listen(["tcp/127.0.0.1:7447"])
///     .connect(["tcp/127.0.0.1:7448"])
///     .lease(Duration::from_secs(1));
/// assert_eq!(config.lease_duration(), Duration::from_secs(1));
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct NodeConfig {
    cluster: String,
    listen: Vec<String>,
    connect: Vec<String>,
    lease: Duration,
    multicast_scouting: bool,
    gossip_scouting: bool,
    reconnect_max: Duration,
    window: usize,
    max_frame: usize,
    transport: Transport,
    listen_set: bool,
    policy: Policy,
    max_peers: usize,
    max_handshakes: usize,
}

/// The PEM texts of a TLS node, read once at start: its chain, its key, the CA.
pub(crate) struct TlsPems {
    pub(crate) chain: Vec<u8>,
    pub(crate) key: Vec<u8>,
    pub(crate) ca: Vec<u8>,
}

impl NodeConfig {
    /// The default lease: 3 s (Zenoh's own default is 10 s).
    pub const DEFAULT_LEASE: Duration = Duration::from_secs(3);

    /// The default credit window: 8,192 unacknowledged messages per peer. Its lanes cost
    /// about 32 bytes per slot up front (the data lane holds `window` slots, the control lane
    /// `2 × window + 16`): 0.75 MiB per peer at the default.
    pub const DEFAULT_WINDOW: usize = 8192;

    /// The default frame limit: 1 MiB.
    pub const DEFAULT_MAX_FRAME: usize = 1 << 20;

    /// The default cap on peers: 128 sessions (Up or being set up) at once.
    pub const DEFAULT_MAX_PEERS: usize = 128;

    /// The default cap on TLS handshakes in flight at once: 16.
    pub const DEFAULT_MAX_HANDSHAKES: usize = 16;

    /// A configuration for a node of `cluster`, with the defaults: listen on
    /// `tls/127.0.0.1:0` (a free loopback port), connect to nobody, a 3 s lease, multicast and
    /// gossip scouting off, reconnect attempts at most 1 s apart, the default [`Policy`].
    ///
    /// A node needs one more thing before it starts: its certificate, key and CA
    /// ([`tls`](NodeConfig::tls)), or an explicit, stated
    /// [`insecure_plaintext`](NodeConfig::insecure_plaintext).
    ///
    /// Nodes see only nodes of their own cluster. The name must be one key-expression chunk:
    /// non-empty, of ASCII letters, digits, `-`, `_` and `.` (checked by
    /// [`Node::start`](crate::Node::start)).
    pub fn new(cluster: impl Into<String>) -> NodeConfig {
        NodeConfig {
            transport: Transport::Unset,
            listen_set: false,
            policy: Policy::new(),
            max_peers: Self::DEFAULT_MAX_PEERS,
            max_handshakes: Self::DEFAULT_MAX_HANDSHAKES,
            cluster: cluster.into(),
            listen: vec!["tls/127.0.0.1:0".to_owned()],
            connect: Vec::new(),
            lease: Self::DEFAULT_LEASE,
            multicast_scouting: false,
            gossip_scouting: false,
            reconnect_max: Duration::from_secs(1),
            window: Self::DEFAULT_WINDOW,
            max_frame: Self::DEFAULT_MAX_FRAME,
        }
    }

    /// Listen on these endpoints instead of the default `tcp/127.0.0.1:0`. An empty list
    /// means the node only connects out.
    ///
    /// Zenoh does not (in its stable API) report the port it picked for `:0`, so a node others
    /// must connect to needs a fixed port.
    pub fn listen<I, S>(mut self, endpoints: I) -> NodeConfig
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.listen = endpoints.into_iter().map(Into::into).collect();
        self.listen_set = true;
        self
    }

    /// Secures the node's links with mutual TLS: `chain` is the node's certificate (then any
    /// intermediate certificates), `key` its private key (PKCS#8, SEC1 or PKCS#1), `ca` the
    /// certificate(s) of the cluster's CA: peers must present a certificate it issued, and the
    /// node's own must be one. Each is a path (`&str`, `PathBuf`) or PEM bytes (`Vec<u8>`);
    /// files are read at [`Node::start`](crate::Node::start), which reports one that is
    /// missing, unreadable or does not verify.
    ///
    /// Endpoints must then be `tls/…` (TLS 1.3 over TCP, for example `tls/10.0.0.5:7447`) or
    /// `quic/…` (QUIC, a UDP port; on loopback it carried about 0.6x the posts of `tls/`); both
    /// authenticate both ends with these certificates. whirl builds Zenoh's TLS link with one
    /// fix (`third_party/zenoh-link-tls`): upstream, it reads and writes one TLS stream from
    /// two tasks at once, which rustls does not support, and under load it closed links at
    /// random (Zenoh issue #2557), which a cluster takes for a node's death.
    ///
    /// The certificate's common name (or first DNS name) is the node's **name** in
    /// [`Policy`] rules. Names are not checked against addresses: the CA is the trust domain
    /// (issue certificates of a cluster's CA to its nodes only). How to make a CA and
    /// certificates, and how to rotate them, is in whirl-dist's README.
    pub fn tls(
        mut self,
        chain: impl Into<Pem>,
        key: impl Into<Pem>,
        ca: impl Into<Pem>,
    ) -> NodeConfig {
        self.transport = Transport::Tls(TlsFiles {
            chain: chain.into(),
            key: key.into(),
            ca: ca.into(),
        });
        if !self.listen_set {
            self.listen = vec!["tls/127.0.0.1:0".to_owned()];
        }
        self
    }

    /// Runs the node with **no encryption and no authentication**: anyone who can reach its
    /// port joins the cluster, posts, asks, spawns and registers, and may claim to be any
    /// member. For loopback tests and benchmarks only. `why` is logged as a warning when the
    /// node starts. Endpoints are then `tcp/…` (the default listen endpoint becomes
    /// `tcp/127.0.0.1:0`).
    pub fn insecure_plaintext(mut self, why: impl Into<String>) -> NodeConfig {
        self.transport = Transport::Plaintext { why: why.into() };
        if !self.listen_set {
            self.listen = vec!["tcp/127.0.0.1:0".to_owned()];
        }
        self
    }

    /// What this node lets its peers do (default [`Policy::new`]).
    pub fn policy(mut self, policy: Policy) -> NodeConfig {
        self.policy = policy;
        self
    }

    /// The most peers this node has sessions with at once (default 128, at least 1): further
    /// peers are refused by Zenoh before any handshake, and peers beyond it that prove their
    /// identity anyway are not made Up.
    pub fn max_peers(mut self, peers: usize) -> NodeConfig {
        self.max_peers = peers.max(1);
        self
    }

    /// The most connections this node accepts that have not finished their handshake (default
    /// 16, at least 1); a flood of connections waits, and each must finish within 5 s.
    pub fn max_handshakes(mut self, handshakes: usize) -> NodeConfig {
        self.max_handshakes = handshakes.max(1);
        self
    }

    /// Why the node runs in plaintext, if it does.
    pub(crate) fn plaintext_reason(&self) -> Option<&str> {
        match &self.transport {
            Transport::Plaintext { why } => Some(why),
            _ => None,
        }
    }

    /// The authorisation policy.
    pub fn authorisation(&self) -> &Policy {
        &self.policy
    }

    /// The cap on peers.
    pub fn max_peer_count(&self) -> usize {
        self.max_peers
    }

    /// Whether links are TLS (`false` after
    /// [`insecure_plaintext`](NodeConfig::insecure_plaintext), or before either is said).
    pub fn is_tls(&self) -> bool {
        matches!(self.transport, Transport::Tls(_))
    }

    /// Connect to these endpoints (replacing any set before). Unreachable ones are retried in
    /// the background; [`Node::start`](crate::Node::start) does not fail because of them.
    pub fn connect<I, S>(mut self, endpoints: I) -> NodeConfig
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.connect = endpoints.into_iter().map(Into::into).collect();
        self
    }

    /// The link lease: how long a silent link lives before its peer is Down.
    pub fn lease(mut self, lease: Duration) -> NodeConfig {
        self.lease = lease;
        self
    }

    /// Whether to find peers by UDP multicast (off by default).
    pub fn multicast_scouting(mut self, on: bool) -> NodeConfig {
        self.multicast_scouting = on;
        self
    }

    /// Whether to connect to peers that other peers tell about (off by default; keep it off
    /// when a proxy or firewall must stand between two nodes).
    pub fn gossip_scouting(mut self, on: bool) -> NodeConfig {
        self.gossip_scouting = on;
        self
    }

    /// The longest pause between two attempts to (re)connect to a
    /// [`connect`](NodeConfig::connect) endpoint (default 1 s; attempts start 1/4 of it apart
    /// and double).
    pub fn reconnect_max(mut self, max: Duration) -> NodeConfig {
        self.reconnect_max = max;
        self
    }

    /// The credit window: how many messages (posts and asks) this node may have sent to one
    /// peer without the peer acknowledging them (default 8,192; at least 1). When it is used
    /// up, posts to that peer return `Rejected` at once: the receiver or the network is
    /// behind, and the sender sheds instead of queueing without bound. It also bounds the asks
    /// awaiting an answer from one peer. Give every node of a cluster the same window: a
    /// receiver sizes its way back for bounces by its own window, and bounces that do not fit
    /// are dead-lettered there ([`DistCounts::bounce_overflow`](crate::DistCounts::bounce_overflow)).
    pub fn window(mut self, window: usize) -> NodeConfig {
        self.window = window.max(1);
        self
    }

    /// The largest frame this node sends or accepts, in bytes (default 1 MiB). A message
    /// whose encoding exceeds it is refused at the sender (`TooLarge`); a larger frame from
    /// the network is dropped and counted as malformed.
    pub fn max_frame(mut self, bytes: usize) -> NodeConfig {
        self.max_frame = bytes.max(64);
        self
    }

    /// The credit window.
    pub fn window_size(&self) -> usize {
        self.window
    }

    /// The frame limit.
    pub fn max_frame_size(&self) -> usize {
        self.max_frame
    }

    /// The cluster name.
    pub fn cluster(&self) -> &str {
        &self.cluster
    }

    /// The listen endpoints.
    pub fn listen_endpoints(&self) -> &[String] {
        &self.listen
    }

    /// The connect endpoints.
    pub fn connect_endpoints(&self) -> &[String] {
        &self.connect
    }

    /// The lease.
    pub fn lease_duration(&self) -> Duration {
        self.lease
    }

    /// Whether multicast scouting is on.
    pub fn is_multicast_scouting(&self) -> bool {
        self.multicast_scouting
    }

    /// Whether gossip scouting is on.
    pub fn is_gossip_scouting(&self) -> bool {
        self.gossip_scouting
    }

    /// Checks the cluster name.
    pub(crate) fn validate_cluster(&self) -> Result<(), DistError> {
        let invalid = |reason| DistError::InvalidCluster {
            name: self.cluster.clone(),
            reason,
        };
        if self.cluster.is_empty() {
            return Err(invalid("it is empty"));
        }
        if !self
            .cluster
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        {
            return Err(invalid(
                "only ASCII letters, digits, '-', '_' and '.' are allowed",
            ));
        }
        Ok(())
    }

    /// The Zenoh configuration for a peer-mode session with these settings.
    ///
    /// For a TLS node it also returns the PEM texts it read (the node binds its identity to
    /// them); a node that said neither [`tls`](NodeConfig::tls) nor
    /// [`insecure_plaintext`](NodeConfig::insecure_plaintext) is refused, and so is a plaintext
    /// endpoint on a TLS node.
    pub(crate) fn to_zenoh(&self) -> Result<(zenoh::Config, Option<TlsPems>), DistError> {
        self.validate_cluster()?;
        let pems = match &self.transport {
            Transport::Unset => return Err(DistError::NoTransportSecurity),
            Transport::Plaintext { .. } => None,
            Transport::Tls(files) => {
                let endpoints = self.listen.iter().chain(&self.connect);
                if let Some(plain) = endpoints
                    .into_iter()
                    .find(|e| !e.starts_with("tls/") && !e.starts_with("quic/"))
                {
                    return Err(DistError::PlaintextEndpoint {
                        endpoint: plain.clone(),
                    });
                }
                Some(TlsPems {
                    chain: files.chain.read()?,
                    key: files.key.read()?,
                    ca: files.ca.read()?,
                })
            }
        };
        let config = self.zenoh_config(pems.as_ref())?;
        Ok((config, pems))
    }

    fn zenoh_config(&self, pems: Option<&TlsPems>) -> Result<zenoh::Config, DistError> {
        let lease_ms = millis(self.lease).ok_or(DistError::InvalidLease(self.lease))?;
        let reconnect_max_ms = millis(self.reconnect_max).unwrap_or(1000).max(4);
        let mut config = zenoh::Config::default();
        set(&mut config, "mode", "\"peer\"".to_owned())?;
        let ordered = |list: &[String]| list.iter().map(|e| single_stream(e)).collect::<Vec<_>>();
        set(
            &mut config,
            "listen/endpoints",
            json_strings(&ordered(&self.listen)),
        )?;
        set(
            &mut config,
            "connect/endpoints",
            json_strings(&ordered(&self.connect)),
        )?;
        set(
            &mut config,
            "connect/retry",
            format!(
                "{{ period_init_ms: {}, period_max_ms: {reconnect_max_ms}, period_increase_factor: 2 }}",
                reconnect_max_ms / 4
            ),
        )?;
        set(
            &mut config,
            "scouting/multicast/enabled",
            self.multicast_scouting.to_string(),
        )?;
        set(
            &mut config,
            "scouting/gossip/enabled",
            self.gossip_scouting.to_string(),
        )?;
        set(&mut config, "transport/link/tx/lease", lease_ms.to_string())?;
        set(&mut config, "transport/link/tx/keep_alive", "4".to_owned())?;
        // Zenoh reassembles a fragmented message before handing it over: refuse larger ones
        // there, so a peer cannot make this node buffer more than a frame (plus the header
        // and the MAC trailer) per message.
        set(
            &mut config,
            "transport/link/rx/max_message_size",
            (self.max_frame + FRAME_SLACK).to_string(),
        )?;
        set(
            &mut config,
            "transport/unicast/max_sessions",
            self.max_peers.to_string(),
        )?;
        set(
            &mut config,
            "transport/unicast/accept_pending",
            self.max_handshakes.to_string(),
        )?;
        set(
            &mut config,
            "transport/unicast/accept_timeout",
            "5000".to_owned(),
        )?;
        // An attempt to link to a peer that is gone waits this long (a QUIC handshake to a
        // dead UDP port gets no refusal), and closing the session waits for attempts in flight.
        set(
            &mut config,
            "transport/unicast/open_timeout",
            "2000".to_owned(),
        )?;
        if let Some(pems) = pems {
            let b64 = |bytes: &[u8]| format!("\"{}\"", BASE64.encode(bytes));
            set(
                &mut config,
                "transport/link/tls/root_ca_certificate_base64",
                b64(&pems.ca),
            )?;
            for side in ["listen", "connect"] {
                let (key, cert): (&'static str, &'static str) = match side {
                    "listen" => (
                        "transport/link/tls/listen_private_key_base64",
                        "transport/link/tls/listen_certificate_base64",
                    ),
                    _ => (
                        "transport/link/tls/connect_private_key_base64",
                        "transport/link/tls/connect_certificate_base64",
                    ),
                };
                set(&mut config, key, b64(&pems.key))?;
                set(&mut config, cert, b64(&pems.chain))?;
            }
            set(
                &mut config,
                "transport/link/tls/enable_mtls",
                "true".to_owned(),
            )?;
            // The CA is the trust domain: a certificate need not name the address it is
            // reached at (nodes move, addresses are often IPs).
            set(
                &mut config,
                "transport/link/tls/verify_name_on_connect",
                "false".to_owned(),
            )?;
        }
        Ok(config)
    }
}

/// Room for a frame's header and MAC trailer above [`NodeConfig::max_frame`] in Zenoh's
/// reassembly limit.
const FRAME_SLACK: usize = 4096;

/// A whole number of milliseconds, at least one.
fn millis(d: Duration) -> Option<u64> {
    u64::try_from(d.as_millis()).ok().filter(|&ms| ms >= 1)
}

fn set(config: &mut zenoh::Config, key: &'static str, value: String) -> Result<(), DistError> {
    config
        .insert_json5(key, &value)
        .map_err(|source| DistError::Config { key, value, source })
}

/// A QUIC endpoint on one stream (`multistream=0`) unless it says otherwise; other endpoints as
/// they are. Zenoh's QUIC link otherwise opens a stream per priority, and frames of different
/// priorities can overtake each other; whirl-dist relies on a node's hello reaching a peer
/// before any frame it sends after it (see `core/handshake.rs`), as over TCP.
fn single_stream(endpoint: &str) -> String {
    if !endpoint.starts_with("quic/") || endpoint.contains("multistream=") {
        return endpoint.to_owned();
    }
    let (head, config) = match endpoint.split_once('#') {
        Some((head, config)) => (head, Some(config)),
        None => (endpoint, None),
    };
    let separator = if head.contains('?') { ';' } else { '?' };
    match config {
        Some(config) => format!("{head}{separator}multistream=0#{config}"),
        None => format!("{head}{separator}multistream=0"),
    }
}

/// A JSON array of strings.
fn json_strings(items: &[String]) -> String {
    let mut out = String::from("[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('"');
        for c in item.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_loopback_no_scouting_and_a_3s_lease() {
        let c = NodeConfig::new("c").insecure_plaintext("a unit test");
        assert_eq!(c.listen_endpoints(), ["tcp/127.0.0.1:0"]);
        assert_eq!(NodeConfig::new("c").listen_endpoints(), ["tls/127.0.0.1:0"]);
        assert!(c.connect_endpoints().is_empty());
        assert_eq!(c.lease_duration(), Duration::from_secs(3));
        assert!(!c.is_multicast_scouting());
        assert!(!c.is_gossip_scouting());
        let (z, _) = c.to_zenoh().expect("valid");
        assert_eq!(
            z.get_json("scouting/multicast/enabled").ok().as_deref(),
            Some("false")
        );
        assert_eq!(
            z.get_json("scouting/gossip/enabled").ok().as_deref(),
            Some("false")
        );
        assert_eq!(
            z.get_json("transport/link/tx/lease").ok().as_deref(),
            Some("3000")
        );
    }

    #[test]
    fn bad_names_leases_and_endpoints_are_errors_not_panics() {
        for name in ["", "a/b", "a*", "$x", "a b"] {
            assert!(matches!(
                NodeConfig::new(name).insecure_plaintext("test").to_zenoh(),
                Err(DistError::InvalidCluster { .. })
            ));
        }
        assert!(matches!(
            NodeConfig::new("c")
                .insecure_plaintext("test")
                .lease(Duration::ZERO)
                .to_zenoh(),
            Err(DistError::InvalidLease(_))
        ));
        assert!(matches!(
            NodeConfig::new("c")
                .insecure_plaintext("test")
                .connect(["not an endpoint"])
                .to_zenoh(),
            Err(DistError::Config { .. })
        ));
    }

    #[test]
    fn a_node_must_say_how_its_links_are_secured() {
        assert!(matches!(
            NodeConfig::new("c").to_zenoh(),
            Err(DistError::NoTransportSecurity)
        ));
        assert!(matches!(
            NodeConfig::new("c")
                .tls("a.pem", "a.key", "ca.pem")
                .connect(["tcp/127.0.0.1:1"])
                .to_zenoh(),
            Err(DistError::PlaintextEndpoint { .. })
        ));
        assert!(matches!(
            NodeConfig::new("c")
                .tls("/nonexistent/a.pem", "a.key", "ca.pem")
                .to_zenoh(),
            Err(DistError::ReadPem { .. })
        ));
    }

    #[test]
    fn quic_endpoints_get_one_stream() {
        assert_eq!(single_stream("quic/h:1"), "quic/h:1?multistream=0");
        assert_eq!(single_stream("quic/h:1?a=b"), "quic/h:1?a=b;multistream=0");
        assert_eq!(
            single_stream("quic/h:1#initial_mtu=1400"),
            "quic/h:1?multistream=0#initial_mtu=1400"
        );
        assert_eq!(
            single_stream("quic/h:1?multistream=1"),
            "quic/h:1?multistream=1"
        );
        assert_eq!(single_stream("tls/h:1"), "tls/h:1");
    }

    #[test]
    fn strings_are_escaped_as_json() {
        assert_eq!(json_strings(&[]), "[]");
        assert_eq!(
            json_strings(&["a\"b".to_owned(), "c\\".to_owned()]),
            r#"["a\"b","c\\"]"#
        );
    }
}
