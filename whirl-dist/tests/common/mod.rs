//! What the distribution tests share: free loopback ports, fresh cluster names, clusters of
//! nodes that have seen each other Up, raw Zenoh sessions, waiting for a condition, and a
//! minimal executor. Each test binary uses part of it.
#![allow(dead_code)]

use std::net::TcpListener;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use whirl_dist::certs::ClusterCa;
use whirl_dist::{Node, NodeConfig, NodeId};
use zenoh::Wait;

/// How long a wait for something to happen may take before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// A loopback port nobody listens on now, on TCP or UDP (QUIC endpoints are UDP).
pub fn free_port() -> u16 {
    loop {
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind a free UDP port");
        let port = udp.local_addr().expect("local address").port();
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// A cluster name no other test uses.
pub fn cluster_name(prefix: &str) -> String {
    let id = NodeId::random().expect("entropy");
    format!("{prefix}-{}", &id.to_string()[..12])
}

/// The Zenoh endpoint of a loopback port (mutual TLS, as nodes speak by default).
pub fn endpoint(port: u16) -> String {
    format!("tls/127.0.0.1:{port}")
}

/// The QUIC endpoint of a loopback port (a UDP port).
pub fn quic_endpoint(port: u16) -> String {
    format!("quic/127.0.0.1:{port}")
}

/// The plaintext Zenoh endpoint of a loopback port.
pub fn tcp_endpoint(port: u16) -> String {
    format!("tcp/127.0.0.1:{port}")
}

/// The tests' cluster CA, made once per test binary.
pub fn test_ca() -> &'static ClusterCa {
    static CA: OnceLock<ClusterCa> = OnceLock::new();
    CA.get_or_init(|| ClusterCa::new("whirl-dist-tests").expect("a CA"))
}

/// `config` with a fresh certificate named `name` from the tests' CA.
pub fn secure(config: NodeConfig, name: &str) -> NodeConfig {
    let ca = test_ca();
    let cert = ca.node(name, 2).expect("a node certificate");
    config.tls(
        cert.certificate.into_bytes(),
        cert.key.into_bytes(),
        ca.certificate_pem().into_bytes(),
    )
}

/// A node configuration for tests that run without TLS on purpose.
pub fn plaintext(cluster: &str) -> NodeConfig {
    NodeConfig::new(cluster).insecure_plaintext("a loopback test of plaintext behaviour")
}

/// `n` nodes of a fresh cluster in a full mesh (each connects to those started before it),
/// over TLS with certificates named `node-<i>`, configured by `config`, each having seen all
/// the others Up. Returns the nodes and their ports.
pub fn cluster(n: usize, config: impl Fn(NodeConfig) -> NodeConfig) -> (Vec<Node>, Vec<u16>) {
    cluster_with(n, true, config)
}

/// [`cluster`], over TLS or (`tls` false) in plaintext.
pub fn cluster_with(
    n: usize,
    tls: bool,
    config: impl Fn(NodeConfig) -> NodeConfig,
) -> (Vec<Node>, Vec<u16>) {
    let name = cluster_name("mesh");
    let ports: Vec<u16> = (0..n).map(|_| free_port()).collect();
    let at = |port| match tls {
        true => endpoint(port),
        false => tcp_endpoint(port),
    };
    let nodes: Vec<Node> = (0..n)
        .map(|i| {
            let base = NodeConfig::new(&name)
                .listen([at(ports[i])])
                .connect(ports[..i].iter().map(|&p| at(p)))
                .lease(Duration::from_millis(1000));
            let base = match tls {
                true => secure(base, &format!("node-{i}")),
                false => base.insecure_plaintext("a loopback test of plaintext behaviour"),
            };
            Node::start(config(base)).expect("node starts")
        })
        .collect();
    for node in &nodes {
        let others: Vec<NodeId> = nodes
            .iter()
            .map(Node::id)
            .filter(|&i| i != node.id())
            .collect();
        wait_for("all up", || {
            others.iter().all(|o| node.members().contains(o))
        });
    }
    (nodes, ports)
}

/// Waits for an event matching `want`, skipping others; panics after [`DEADLINE`].
pub fn expect_event(
    events: &crossbeam_channel::Receiver<whirl_dist::NodeEvent>,
    what: &str,
    want: impl Fn(&whirl_dist::NodeEvent) -> bool,
) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let left = deadline
            .checked_duration_since(Instant::now())
            .unwrap_or_else(|| panic!("no {what} within {DEADLINE:?}"));
        match events.recv_timeout(left) {
            Ok(event) if want(&event) => return,
            Ok(_) => {}
            Err(e) => panic!("no {what} within {DEADLINE:?}: {e}"),
        }
    }
}

/// Polls `ok` every 5 ms; fails the test with `what` if it does not hold within [`DEADLINE`].
pub fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !ok() {
        assert!(Instant::now() < deadline, "{what}: not within {DEADLINE:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// As [`wait_for`], with the failure told by `explain` when it happens (counters, say).
pub fn wait_explained(mut ok: impl FnMut() -> bool, explain: impl FnOnce() -> String) {
    let deadline = Instant::now() + DEADLINE;
    while !ok() {
        if Instant::now() >= deadline {
            panic!("{}: not within {DEADLINE:?}", explain());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A plain Zenoh session (not a whirl node) linked to the plaintext node listening on `port`.
pub fn raw_session(port: u16) -> zenoh::Session {
    let mut config = zenoh::Config::default();
    for (key, value) in [
        ("mode", "\"peer\"".to_owned()),
        ("listen/endpoints", "[]".to_owned()),
        ("connect/endpoints", format!("[\"{}\"]", tcp_endpoint(port))),
        ("scouting/multicast/enabled", "false".to_owned()),
        ("scouting/gossip/enabled", "false".to_owned()),
    ] {
        config.insert_json5(key, &value).expect("zenoh config");
    }
    zenoh::open(config).wait().expect("raw session opens")
}

/// Polls a future to completion on this thread.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

/// A plain Zenoh peer session (not a whirl node) that dials the TLS nodes listening on `ports`:
/// it trusts `ca_pem` for their certificates and presents `identity` (its certificate chain
/// and private key, PEM) when given, or no certificate at all. Opening succeeds even when
/// every link is refused (Zenoh keeps retrying in the background); [`linked_peers`] tells
/// whether it got in.
pub fn raw_tls_session(
    ports: &[u16],
    identity: Option<(&str, &str)>,
    ca_pem: &str,
) -> zenoh::Session {
    use base64::Engine as _;
    let b64 = |pem: &str| {
        format!(
            "\"{}\"",
            base64::engine::general_purpose::STANDARD.encode(pem)
        )
    };
    let endpoints: Vec<String> = ports
        .iter()
        .map(|&p| format!("\"{}\"", endpoint(p)))
        .collect();
    let mut settings = vec![
        ("mode", "\"peer\"".to_owned()),
        ("listen/endpoints", "[]".to_owned()),
        ("connect/endpoints", format!("[{}]", endpoints.join(","))),
        (
            "connect/retry",
            "{ period_init_ms: 250, period_max_ms: 1000, period_increase_factor: 2 }".to_owned(),
        ),
        ("scouting/multicast/enabled", "false".to_owned()),
        ("scouting/gossip/enabled", "false".to_owned()),
        ("transport/link/tls/root_ca_certificate_base64", b64(ca_pem)),
        (
            "transport/link/tls/verify_name_on_connect",
            "false".to_owned(),
        ),
        (
            "transport/link/tls/enable_mtls",
            identity.is_some().to_string(),
        ),
    ];
    if let Some((chain, key)) = identity {
        settings.extend([
            ("transport/link/tls/connect_certificate_base64", b64(chain)),
            ("transport/link/tls/connect_private_key_base64", b64(key)),
            ("transport/link/tls/listen_certificate_base64", b64(chain)),
            ("transport/link/tls/listen_private_key_base64", b64(key)),
        ]);
    }
    let mut config = zenoh::Config::default();
    for (key, value) in settings {
        config.insert_json5(key, &value).expect("zenoh config");
    }
    zenoh::open(config).wait().expect("raw session opens")
}

/// How many peers a Zenoh session has a link with now.
pub fn linked_peers(session: &zenoh::Session) -> usize {
    session.info().peers_zid().wait().count()
}
