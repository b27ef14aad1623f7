//! How a node joins a cluster: [`NodeConfig`], the settings [`Node::start`](crate::Node::start)
//! reads, and their translation into a Zenoh configuration (peer mode, the endpoints, scouting,
//! the lease and its keep-alives). The translation refuses, as errors, a cluster name that is
//! empty or holds characters other than ASCII letters, digits, `-`, `_` and `.`, a lease that
//! does not fit in milliseconds, and a value Zenoh does not accept. What each setting means,
//! and its default, is documented on the type, where users of the crate see it.

use std::time::Duration;

use crate::DistError;

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

    /// A configuration for a node of `cluster`, with the defaults: listen on
    /// `tcp/127.0.0.1:0` (a free loopback port), connect to nobody, a 3 s lease, multicast and
    /// gossip scouting off, reconnect attempts at most 1 s apart.
    ///
    /// Nodes see only nodes of their own cluster. The name must be one key-expression chunk:
    /// non-empty, of ASCII letters, digits, `-`, `_` and `.` (checked by
    /// [`Node::start`](crate::Node::start)).
    pub fn new(cluster: impl Into<String>) -> NodeConfig {
        NodeConfig {
            cluster: cluster.into(),
            listen: vec!["tcp/127.0.0.1:0".to_owned()],
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
        self
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
    pub(crate) fn to_zenoh(&self) -> Result<zenoh::Config, DistError> {
        self.validate_cluster()?;
        let lease_ms = millis(self.lease).ok_or(DistError::InvalidLease(self.lease))?;
        let reconnect_max_ms = millis(self.reconnect_max).unwrap_or(1000).max(4);
        let mut config = zenoh::Config::default();
        set(&mut config, "mode", "\"peer\"".to_owned())?;
        set(&mut config, "listen/endpoints", json_strings(&self.listen))?;
        set(
            &mut config,
            "connect/endpoints",
            json_strings(&self.connect),
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
        Ok(config)
    }
}

/// A whole number of milliseconds, at least one.
fn millis(d: Duration) -> Option<u64> {
    u64::try_from(d.as_millis()).ok().filter(|&ms| ms >= 1)
}

fn set(config: &mut zenoh::Config, key: &'static str, value: String) -> Result<(), DistError> {
    config
        .insert_json5(key, &value)
        .map_err(|source| DistError::Config { key, value, source })
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
        let c = NodeConfig::new("c");
        assert_eq!(c.listen_endpoints(), ["tcp/127.0.0.1:0"]);
        assert!(c.connect_endpoints().is_empty());
        assert_eq!(c.lease_duration(), Duration::from_secs(3));
        assert!(!c.is_multicast_scouting());
        assert!(!c.is_gossip_scouting());
        let z = c.to_zenoh().expect("valid");
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
                NodeConfig::new(name).to_zenoh(),
                Err(DistError::InvalidCluster { .. })
            ));
        }
        assert!(matches!(
            NodeConfig::new("c").lease(Duration::ZERO).to_zenoh(),
            Err(DistError::InvalidLease(_))
        ));
        assert!(matches!(
            NodeConfig::new("c").connect(["not an endpoint"]).to_zenoh(),
            Err(DistError::Config { .. })
        ));
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
