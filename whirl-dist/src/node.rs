//! A running node: a Zenoh session, its liveliness token, and its membership table.
//!
//! [`Node::start`] opens a Zenoh session in peer mode, declares the token
//! `whirl/<cluster>/alive/<node-hex>` and subscribes, with history, to
//! `whirl/<cluster>/alive/*`: the history delivers the nodes already present, then the
//! subscription delivers every later appearance and withdrawal. See [`crate::membership`] for
//! how those become [`NodeEvent`]s.
//!
//! It also subscribes to its own mailbox key, `whirl/<cluster>/n/<node-hex>/mbox`: one key per
//! node, not per process, so a million processes do not mean a million routing entries. See
//! [`crate::core`] for what happens to the frames that arrive there.
//!
//! The API is blocking. Zenoh runs on its own tokio runtime threads; whirl-dist calls it through
//! Zenoh's [`Wait`] trait, so the calling thread needs no async runtime. The callbacks run on
//! Zenoh threads; they only take short locks, post into the runtime (which never blocks) and
//! send into bounded or per-event channels, so they never block Zenoh's I/O.

use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::Receiver;
use whirl::Process;
use zenoh::liveliness::LivelinessToken;
use zenoh::pubsub::Subscriber;
use zenoh::{Session, Wait};

use crate::core::Core;
use crate::export::ExportBuilder;
use crate::remote::Remote;
use crate::{
    DistCounts, DistError, MemberState, NodeConfig, NodeEvent, NodeId, NodeStats, Pid, RemoteAddr,
};

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
    core: Arc<Core>,
    cluster: String,
    // Dropped in this order if `shutdown` is not called: subscribers, token, session.
    mailbox: Option<Subscriber<()>>,
    subscriber: Option<Subscriber<()>>,
    token: Option<LivelinessToken>,
    ticker: Option<JoinHandle<()>>,
    session: Session,
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
        let session = zenoh::open(zenoh_config).wait().map_err(DistError::Open)?;
        let core = Arc::new(Core::new(
            id,
            &cluster,
            session.clone(),
            config.window_size(),
            config.max_frame_size(),
        ));
        let declare = |what| move |source| DistError::Declare { what, source };
        // The mailbox first: a peer that sees this node's token may post at once.
        let mailbox_core = Arc::clone(&core);
        let mailbox = session
            .declare_subscriber(core.mailbox_key(id))
            .callback(move |sample| mailbox_core.on_frame(&sample.payload().to_bytes()))
            .wait()
            .map_err(declare("mailbox subscriber"))?;
        let token = session
            .liveliness()
            .declare_token(format!("{}{id}", core.alive_prefix()))
            .wait()
            .map_err(declare("liveliness token"))?;
        let liveliness_core = Arc::clone(&core);
        let subscriber = session
            .liveliness()
            .declare_subscriber(format!("{}*", core.alive_prefix()))
            .history(true)
            .callback(move |sample| liveliness_core.on_liveliness(&sample))
            .wait()
            .map_err(declare("liveliness subscriber"))?;
        let ticker = core.start_ticker().map_err(|source| DistError::Thread {
            what: "ticker",
            source,
        })?;
        tracing::debug!(%id, cluster, "node started");
        Ok(Node {
            core,
            cluster,
            mailbox: Some(mailbox),
            subscriber: Some(subscriber),
            token: Some(token),
            ticker: Some(ticker),
            session,
        })
    }

    /// This node's id (fresh on every start).
    pub fn id(&self) -> NodeId {
        self.core.id()
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
        let mut members = self.core.members.lock();
        for node in members.membership.up() {
            // The receiver is alive: it is in our hands.
            let _ = tx.send(NodeEvent::Up(node));
        }
        members.listeners.push(tx);
        rx
    }

    /// The nodes that are Up now (not this one), in id order.
    pub fn members(&self) -> Vec<NodeId> {
        self.core.members.lock().membership.up().collect()
    }

    /// The nodes quarantined so far, in id order.
    pub fn quarantined(&self) -> Vec<NodeId> {
        self.core.members.lock().membership.quarantined().collect()
    }

    /// Where `node` stands: Up, Quarantined, or `None` if never seen.
    pub fn state(&self, node: NodeId) -> Option<MemberState> {
        self.core.members.lock().membership.state(node)
    }

    /// What the membership table has counted so far.
    pub fn stats(&self) -> NodeStats {
        self.core.members.lock().membership.stats()
    }

    /// Makes `addr`'s process reachable from other nodes; say which message types it accepts
    /// with the builder, then [`build`](ExportBuilder::build) it for its [`Pid`].
    pub fn export<P: Process>(&self, addr: &whirl::Addr<P>) -> ExportBuilder<'_, P> {
        ExportBuilder::new(&self.core, addr)
    }

    /// Withdraws an export of this node: later messages to `pid` bounce as
    /// [`NoProcess`](crate::BounceReason::NoProcess). Returns whether it was exported.
    pub fn unexport(&self, pid: Pid) -> bool {
        pid.node() == self.id() && self.core.remove_export(pid.local())
    }

    /// The typed address of the process `pid` (on any node, this one included), accepting
    /// `M`. Nothing is checked until a message is sent: if the process does not accept `M`,
    /// messages bounce as [`Incompatible`](crate::BounceReason::Incompatible). If `pid`'s
    /// node is already Down, every post returns `Terminated`.
    pub fn remote<M: Remote>(&self, pid: Pid) -> RemoteAddr<M> {
        RemoteAddr::new(Arc::clone(&self.core), pid)
    }

    /// What the distribution layer has counted so far (see [`DistCounts`]).
    pub fn counts(&self) -> DistCounts {
        self.core.read_counts()
    }

    /// Leaves the cluster: stops receiving, closes every link (messages sent and not yet
    /// acknowledged are counted [in doubt](DistCounts::in_doubt)), ends waiting asks with
    /// `NodeDown`, withdraws the token (peers see this node Down at once), stops watching,
    /// closes the session. Every step is attempted; the first error is returned. Event
    /// receivers are disconnected.
    pub fn shutdown(mut self) -> Result<(), DistError> {
        let mut first_error = None;
        let mut note = |what: &'static str, result: zenoh::Result<()>| {
            if let Err(source) = result {
                tracing::warn!(what, error = %source, "shutdown step failed");
                first_error.get_or_insert(DistError::Shutdown { what, source });
            }
        };
        if let Some(mailbox) = self.mailbox.take() {
            note(
                "undeclare the mailbox subscriber",
                mailbox.undeclare().wait(),
            );
        }
        self.core.close();
        if let Some(ticker) = self.ticker.take() {
            let _ = ticker.join();
        }
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
        self.core.members.lock().listeners.clear();
        tracing::debug!(id = %self.core.id(), "node shut down");
        first_error.map_or(Ok(()), Err)
    }
}

impl Drop for Node {
    /// A node dropped without [`shutdown`](Node::shutdown) still closes its links and ends its
    /// asks (idempotent after `shutdown`); Zenoh closes the session when its last handle goes.
    fn drop(&mut self) {
        self.core.close();
    }
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("id", &self.core.id())
            .field("cluster", &self.cluster)
            .finish_non_exhaustive()
    }
}
