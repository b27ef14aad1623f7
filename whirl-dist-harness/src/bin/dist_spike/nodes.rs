//! Nodes of the spike on loopback: a free port, the parent's node, waiting for a node event,
//! and the random choices (cluster names, the point of the keep-alive cycle a cut comes at).
//!
//! Every node runs in peer mode on `127.0.0.1` with multicast and gossip scouting off (the
//! defaults of [`NodeConfig`]); each gate uses a fresh random cluster name, so that nodes of
//! an earlier trial never join a later one.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use whirl_dist::{Node, NodeConfig, NodeEvent, NodeId};

/// How long to wait for anything that should happen but is not being timed.
pub const SETUP_DEADLINE: Duration = Duration::from_secs(20);

pub fn free_loopback_port() -> Result<u16, String> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(|e| format!("cannot find a free port: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("cannot find a free port: {e}"))
}

pub fn parent_node(cluster: &str, lease: Duration) -> Result<(Node, u16), String> {
    let port = free_loopback_port()?;
    let node = Node::start(
        NodeConfig::new(cluster)
            .insecure_plaintext("the dist_spike gate measures the failure detector on loopback")
            .listen([format!("tcp/127.0.0.1:{port}")])
            .lease(lease),
    )
    .map_err(|e| format!("parent cannot start its node: {e:#?}"))?;
    Ok((node, port))
}

/// Waits for a parent event matching `want`; returns when it arrived. Other events are passed
/// to `other`.
pub fn wait_event(
    events: &Receiver<NodeEvent>,
    deadline: Instant,
    want: impl Fn(&NodeEvent) -> bool,
    mut other: impl FnMut(NodeEvent),
) -> Option<Instant> {
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        match events.recv_timeout(left) {
            Ok(event) if want(&event) => return Some(Instant::now()),
            Ok(event) => other(event),
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return None,
        }
    }
}

/// A random duration in `[0, limit)`, to the microsecond.
pub fn random_below(limit: Duration) -> Duration {
    let micros = u64::try_from(limit.as_micros()).unwrap_or(u64::MAX).max(1);
    Duration::from_micros(getrandom::u64().unwrap_or(0) % micros)
}

pub fn random_cluster() -> Result<String, String> {
    let id = NodeId::random().map_err(|e| format!("{e}"))?;
    Ok(format!("spike-{}", &id.to_string()[..12]))
}
