//! A running node: a Zenoh session, its liveliness token, and its membership table.
//!
//! [`Node::start`] opens a Zenoh session in peer mode, declares the token
//! `whirl/<cluster>/alive/<node-hex>` and subscribes, with history, to
//! `whirl/<cluster>/alive/*`: the history delivers the nodes already present, then the
//! subscription delivers every later appearance and withdrawal. See [`crate::membership`] for
//! how those become [`NodeEvent`]s.
//!
//! The API is blocking. Zenoh runs on its own tokio runtime threads; whirl-dist calls it through
//! Zenoh's [`Wait`] trait, so the calling thread needs no async runtime. The liveliness
//! callback runs on a Zenoh thread; it only takes a short lock and sends into unbounded
//! channels, so it never blocks Zenoh's I/O.

use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use zenoh::liveliness::LivelinessToken;
use zenoh::pubsub::Subscriber;
use zenoh::sample::{Sample, SampleKind};
use zenoh::{Session, Wait};

use crate::membership::{parse_alive_key, Membership, Observation};
use crate::{DistError, MemberState, NodeConfig, NodeEvent, NodeId, NodeStats};

/// One node of a whirl cluster: a Zenoh session with a fresh [`NodeId`].
///
/// ```no_run
/// use std::time::Duration;
/// use whirl_dist::{Node, NodeConfig, NodeEvent};
///
/// # fn main() -> Result<(), whirl_dist::DistError> {
/// let node = Node::start(
///     NodeConfig::new("orders")
///         .listen(["tcp/127.0.0.1:7447"])
///         .connect(["tcp/127.0.0.1:7448"]),
/// )?;
/// let events = node.events();
/// while let Ok(event) = events.recv_timeout(Duration::from_secs(10)) {
///     match event {
///         NodeEvent::Up(peer) => println!("{peer} is up"),
///         NodeEvent::Down { node, reason } => println!("{node} is down: {reason:?}"),
///         other => println!("{other:?}"),
///     }
/// }
/// node.shutdown()?;
/// # Ok(())
/// # }
/// ```
pub struct Node {
    id: NodeId,
    cluster: String,
    shared: Arc<Shared>,
    // Dropped in this order if `shutdown` is not called: subscriber, token, session.
    subscriber: Option<Subscriber<()>>,
    token: Option<LivelinessToken>,
    session: Session,
}

/// What the liveliness callback and the node's methods share.
struct Shared {
    /// `whirl/<cluster>/alive/`.
    prefix: String,
    state: Mutex<State>,
}

struct State {
    membership: Membership,
    listeners: Vec<Sender<NodeEvent>>,
}

impl Shared {
    /// Handles one liveliness sample. Runs on a Zenoh thread: must not block or panic.
    fn on_sample(&self, sample: &Sample) {
        let key = sample.key_expr().as_str();
        let mut state = self.state.lock();
        let Some(node) = parse_alive_key(&self.prefix, key) else {
            state.membership.malformed_key();
            drop(state);
            tracing::warn!(key, "ignored a liveliness key that names no node");
            return;
        };
        let observation = match sample.kind() {
            SampleKind::Put => Observation::Alive(node),
            SampleKind::Delete => Observation::Gone(node),
        };
        let Some(event) = state.membership.observe(observation) else {
            return;
        };
        // A listener whose receiver was dropped is forgotten.
        state
            .listeners
            .retain(|listener| listener.send(event).is_ok());
        drop(state);
        match event {
            NodeEvent::Up(node) => tracing::debug!(%node, "node up"),
            NodeEvent::Down { node, reason } => tracing::info!(%node, ?reason, "node down"),
            NodeEvent::ResurrectionRefused(node) => {
                tracing::warn!(%node, "quarantined node reappeared; refused")
            }
        }
    }
}

impl Node {
    /// Starts a node: opens a peer-mode Zenoh session with `config`, announces the node and
    /// starts watching the others.
    ///
    /// Returns once the session is open and the token and subscription are declared. Peers
    /// found through the connect endpoints are reported as [`NodeEvent::Up`] as they are seen,
    /// possibly before this returns (then [`events`](Node::events) replays them).
    pub fn start(config: NodeConfig) -> Result<Node, DistError> {
        let zenoh_config = config.to_zenoh()?;
        let id = NodeId::random()?;
        let cluster = config.cluster().to_owned();
        let prefix = format!("whirl/{cluster}/alive/");
        let session = zenoh::open(zenoh_config).wait().map_err(DistError::Open)?;
        let token = session
            .liveliness()
            .declare_token(format!("{prefix}{id}"))
            .wait()
            .map_err(|source| DistError::Declare {
                what: "liveliness token",
                source,
            })?;
        let shared = Arc::new(Shared {
            prefix: prefix.clone(),
            state: Mutex::new(State {
                membership: Membership::new(id),
                listeners: Vec::new(),
            }),
        });
        let callback_shared = Arc::clone(&shared);
        let subscriber = session
            .liveliness()
            .declare_subscriber(format!("{prefix}*"))
            .history(true)
            .callback(move |sample| callback_shared.on_sample(&sample))
            .wait()
            .map_err(|source| DistError::Declare {
                what: "liveliness subscriber",
                source,
            })?;
        tracing::debug!(%id, cluster, "node started");
        Ok(Node {
            id,
            cluster,
            shared,
            subscriber: Some(subscriber),
            token: Some(token),
            session,
        })
    }

    /// This node's id (fresh on every start).
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The cluster this node belongs to.
    pub fn cluster(&self) -> &str {
        &self.cluster
    }

    /// A new receiver of membership events. It first receives an [`NodeEvent::Up`] for each
    /// node Up at the time of the call, then every later event, in order. Each call makes an
    /// independent receiver (every receiver gets every event); drop it when done. The channel
    /// is unbounded: a receiver that is never read grows by one small value per event.
    pub fn events(&self) -> Receiver<NodeEvent> {
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut state = self.shared.state.lock();
        for node in state.membership.up() {
            // The receiver is alive: it is in our hands.
            let _ = tx.send(NodeEvent::Up(node));
        }
        state.listeners.push(tx);
        rx
    }

    /// The nodes that are Up now (not this one), in id order.
    pub fn members(&self) -> Vec<NodeId> {
        self.shared.state.lock().membership.up().collect()
    }

    /// The nodes quarantined so far, in id order.
    pub fn quarantined(&self) -> Vec<NodeId> {
        self.shared.state.lock().membership.quarantined().collect()
    }

    /// Where `node` stands: Up, Quarantined, or `None` if never seen.
    pub fn state(&self, node: NodeId) -> Option<MemberState> {
        self.shared.state.lock().membership.state(node)
    }

    /// What the membership table has counted so far.
    pub fn stats(&self) -> NodeStats {
        self.shared.state.lock().membership.stats()
    }

    /// Leaves the cluster: withdraws the token (peers see this node Down at once), stops
    /// watching, closes the session. Every step is attempted; the first error is returned.
    /// Event receivers are disconnected.
    pub fn shutdown(mut self) -> Result<(), DistError> {
        let mut first_error = None;
        let mut note = |what: &'static str, result: zenoh::Result<()>| {
            if let Err(source) = result {
                tracing::warn!(what, error = %source, "shutdown step failed");
                first_error.get_or_insert(DistError::Shutdown { what, source });
            }
        };
        if let Some(token) = self.token.take() {
            note("undeclare the liveliness token", token.undeclare().wait());
        }
        if let Some(subscriber) = self.subscriber.take() {
            note(
                "undeclare the liveliness subscriber",
                subscriber.undeclare().wait(),
            );
        }
        note("close the session", self.session.close().wait());
        self.shared.state.lock().listeners.clear();
        tracing::debug!(id = %self.id, "node shut down");
        first_error.map_or(Ok(()), Err)
    }
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("id", &self.id)
            .field("cluster", &self.cluster)
            .finish_non_exhaustive()
    }
}
