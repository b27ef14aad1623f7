//! A running node: a Zenoh session (or another [`Transport`]), its liveliness token, and its
//! membership table.
//!
//! [`Node::start`] opens a Zenoh session in peer mode, watches, with history, the tokens under
//! `whirl/<cluster>/alive/`: the history delivers the nodes already present, then every later
//! appearance and withdrawal; and then declares its own token
//! `whirl/<cluster>/alive/<node-hex>` (after the watcher, so a peer that sees it and posts at
//! once is already known here). See [`crate::membership`] for how those become
//! [`NodeEvent`]s.
//!
//! It also subscribes to its own mailbox key, `whirl/<cluster>/n/<node-hex>/mbox`: one key per
//! node, not per process, so a million processes do not mean a million routing entries. See
//! [`crate::core`] for what happens to the frames that arrive there.
//!
//! The API is blocking. Zenoh runs on its own tokio runtime threads; whirl-dist calls it through
//! Zenoh's blocking `Wait` trait, so the calling thread needs no async runtime. The callbacks run on
//! Zenoh threads; they only take short locks, post into the runtime (which never blocks) and
//! send into bounded or per-event channels, so they never block Zenoh's I/O.

use std::sync::Arc;
use std::thread::JoinHandle;

use crate::transport::{Declared, Transport, TransportError, ZenohTransport};
use crossbeam_channel::Receiver;
use whirl::request::Sender as _;
use whirl::Process;

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::auth::Credentials;
use crate::core::{Core, Drive};
use crate::dispatch::FactoryResult;
use crate::export::ExportBuilder;
use crate::identity::Auth;
use crate::link::{Writers, DEFAULT_WRITERS};
use crate::remote::Remote;
use crate::spawn::FactoryCtx;
use crate::wire;
use crate::{
    DistCounts, DistError, MemberState, MonitorRef, NodeConfig, NodeEvent, NodeId, NodeStats, Pid,
    RemoteAddr, RemoteDown, RemoteExit, SpawnRemoteError, Spawned,
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
///         .tls("certs/orders-1.pem", "certs/orders-1.key", "certs/ca.pem")
///         .listen(["tls/127.0.0.1:7447"])
///         .connect(["tls/127.0.0.1:7448"]),
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
    pub(crate) core: Arc<Core>,
    cluster: String,
    // Dropped in this order if `shutdown` is not called: subscribers, token, session.
    hellos: Option<Box<dyn Declared>>,
    mailbox: Option<Box<dyn Declared>>,
    names: Option<Box<dyn Declared>>,
    subscriber: Option<Box<dyn Declared>>,
    token: Option<Box<dyn Declared>>,
    ticker: Option<JoinHandle<()>>,
    transport: Arc<dyn Transport>,
}

impl Node {
    /// Starts a node: opens a peer-mode Zenoh session with `config`, announces the node and
    /// starts watching the others.
    ///
    /// Returns once the session is open and the token and subscription are declared. Peers
    /// found through the connect endpoints are reported as [`NodeEvent::Up`] as they are seen,
    /// possibly before this returns (then [`events`](Node::events) replays them).
    pub fn start(config: NodeConfig) -> Result<Node, DistError> {
        let (zenoh_config, pems) = config.to_zenoh()?;
        let transport = ZenohTransport::open(zenoh_config).map_err(DistError::Open)?;
        Node::start_with(config, pems, transport, Drive::Threads)
    }

    /// Starts a node on any [`Transport`]: what [`start`](Node::start) does once the Zenoh
    /// session is open.
    pub(crate) fn start_with(
        config: NodeConfig,
        pems: Option<crate::config::TlsPems>,
        transport: Arc<dyn Transport>,
        drive: Drive,
    ) -> Result<Node, DistError> {
        let cluster = config.cluster().to_owned();
        let (id, auth) = match pems {
            None => {
                if let Some(why) = config.plaintext_reason() {
                    tracing::warn!(cluster, why, "this node runs WITHOUT encryption or authentication: anyone who reaches its port can join, post, spawn and pose as any member");
                }
                let id = match transport.plaintext_node_id() {
                    Some(id) => NodeId::from_u128(id),
                    None => NodeId::random()?,
                };
                (id, None)
            }
            Some(pems) => {
                let creds = Credentials::from_pem(&pems.chain, &pems.key, &pems.ca)
                    .map_err(DistError::Credentials)?;
                let nonce = crate::auth::fresh_nonce().map_err(DistError::Credentials)?;
                let id = NodeId::from_u128(creds.node_id(&nonce));
                let auth = Auth::new(
                    creds,
                    nonce,
                    &cluster,
                    config.max_peer_count(),
                    config.window_size(),
                );
                (id, Some(auth))
            }
        };
        let writer_threads = match drive {
            Drive::Threads => DEFAULT_WRITERS,
            Drive::Stepped => 0,
        };
        let writers =
            Writers::start(&transport, writer_threads).map_err(|source| DistError::Thread {
                what: "link writer",
                source,
            })?;
        let core = Arc::new(Core::new(
            id,
            &config,
            Arc::clone(&transport),
            auth,
            writers,
            drive,
        ));
        let declare = |what| move |source| DistError::Declare { what, source };
        // Hellos before the token: a peer that sees the token shakes hands at once.
        let hello_core = Arc::clone(&core);
        let hellos = transport
            .subscribe(
                &core.hello_key(id),
                Box::new(move |bytes| hello_core.on_hello(bytes)),
            )
            .map_err(declare("hello subscriber"))?;
        // The mailbox first: a peer that sees this node's token may post at once.
        let mailbox_core = Arc::clone(&core);
        let mailbox = transport
            .subscribe(
                &core.mailbox_key(id),
                Box::new(move |bytes| mailbox_core.on_network_frame(bytes)),
            )
            .map_err(declare("mailbox subscriber"))?;
        let registry_core = Arc::clone(&core);
        let names = transport
            .watch_tokens(
                &format!("whirl/{cluster}/reg/"),
                Box::new(move |key, presence| registry_core.on_registry(key, presence)),
            )
            .map_err(declare("registry subscriber"))?;
        let liveliness_core = Arc::clone(&core);
        let subscriber = transport
            .watch_tokens(
                &core.alive_prefix(),
                Box::new(move |key, presence| liveliness_core.on_liveliness(key, presence)),
            )
            .map_err(declare("liveliness subscriber"))?;
        // The token last: a peer that sees it may post at once, and this node must know that
        // peer by then (its watcher above was told of every token present), or the peer's
        // first frames would come from a node not Up here.
        let token = transport
            .declare_token(&format!("{}{id}", core.alive_prefix()))
            .map_err(declare("liveliness token"))?;
        let ticker = match drive {
            Drive::Threads => Some(core.start_ticker().map_err(|source| DistError::Thread {
                what: "ticker",
                source,
            })?),
            Drive::Stepped => None,
        };
        tracing::debug!(%id, cluster, "node started");
        Ok(Node {
            core,
            cluster,
            hellos: Some(hellos),
            mailbox: Some(mailbox),
            names: Some(names),
            subscriber: Some(subscriber),
            token: Some(token),
            ticker,
            transport,
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

    /// The name in this node's certificate (`None` on a plaintext node).
    pub fn name(&self) -> Option<&str> {
        self.core.own_name()
    }

    /// The name `peer` proved with its certificate (`None` on a plaintext node, or for a node
    /// not Up).
    pub fn peer_name(&self, peer: NodeId) -> Option<String> {
        self.core.peer_name(peer).map(|name| name.to_string())
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

    /// Monitors `pid` (on any node): `watcher` receives one [`RemoteDown`] when the process
    /// ends, is found not to exist ([`RemoteExit::NoProcess`]), or its node is Down
    /// ([`RemoteExit::NoConnection`], final). Erlang's `monitor(process, Pid)`.
    pub fn monitor(&self, pid: Pid, watcher: whirl::Recipient<RemoteDown>) -> MonitorRef {
        self.monitor_with(pid, move |reason| {
            let notice = RemoteDown { pid, reason };
            if let Err(e) = watcher.post(notice) {
                tracing::debug!(%pid, error = %e, "the watcher of a remote process is gone");
            }
        })
    }

    /// Like [`monitor`](Node::monitor), for code outside processes: `callback` runs once, on a
    /// network or worker thread (it must not block).
    pub fn monitor_with(
        &self,
        pid: Pid,
        callback: impl FnOnce(RemoteExit) + Send + 'static,
    ) -> MonitorRef {
        self.core.monitor(pid, false, Box::new(callback))
    }

    /// Stops a monitor; returns `false` if it had already fired (its notice may be in the
    /// watcher's mailbox).
    pub fn demonitor(&self, monitor: MonitorRef) -> bool {
        self.core.demonitor(monitor)
    }

    /// Links the local process `local` with `pid` (Erlang's `link`): when either fails, the
    /// other is made to fail too. A node Down counts as a failure of the processes on it
    /// ([`RemoteExit::NoConnection`]), and so does a `pid` that does not exist. Normal ends
    /// and supervisor shutdowns do not propagate.
    pub fn link<P: Process>(&self, local: &whirl::Addr<P>, pid: Pid) {
        self.core.link(local, pid);
    }

    /// Registers the exported process `pid` of this node under `name`, cluster-wide. The
    /// name goes with the process's end, with this node's end, and with
    /// [`unregister`](Node::unregister). Several processes may hold one name (see
    /// [`whereis_all`](Node::whereis_all)).
    pub fn register(&self, name: &str, pid: Pid) -> Result<(), DistError> {
        self.core.register(name, pid)
    }

    /// Withdraws `pid`'s registration under `name`; returns whether there was one.
    pub fn unregister(&self, name: &str, pid: Pid) -> bool {
        pid.node() == self.id() && self.core.unregister(name, pid)
    }

    /// The process registered under `name` (the earliest registration, if several), as an
    /// address accepting `M`. A local lookup: every node holds the whole registry.
    pub fn whereis<M: Remote>(&self, name: &str) -> Option<RemoteAddr<M>> {
        self.core.whereis(name).map(|pid| self.remote(pid))
    }

    /// The local address of process `pid` if it runs on this node, is exported, and is a `P`:
    /// how to reach a process that moved here (to move it again, say) without a handle from
    /// when it was spawned.
    pub fn local<P: whirl::Process>(&self, pid: Pid) -> Option<whirl::Addr<P>> {
        if pid.node() != self.core.id() {
            return None;
        }
        let export = self.core.export_of(pid.local())?;
        export.addr.downcast_ref::<whirl::Addr<P>>().cloned()
    }

    /// Every process registered under `name`, earliest first.
    pub fn whereis_all(&self, name: &str) -> Vec<Pid> {
        self.core.whereis_all(name)
    }

    /// Every registered name, with how many processes hold it.
    pub fn registered(&self) -> Vec<(String, usize)> {
        self.core.registered()
    }

    /// Offers a factory named `name` to other nodes (see [`Node::spawn_on`]): `factory` gets
    /// the decoded arguments and a [`FactoryCtx`] with the caller's principal; it spawns a
    /// process (with `group.spawner().principal(p)` when a principal is given, so the process serves it),
    /// exports it through the context, and returns its pid, or a refusal. It runs on a network
    /// thread: spawn and export only, never block.
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use whirl::prelude::*;
    /// # use whirl_dist::{Node, NodeConfig, Remote, Spawned};
    /// # #[derive(Message, Serialize, Deserialize)] struct Add(u64);
    /// # impl Remote for Add { const TAG: &'static str = "demo.Add/1"; }
    /// # #[process] struct Counter { n: u64 }
    /// # #[process] impl Counter { #[handle] fn add(&mut self, Add(k): Add) { self.n += k; } }
    /// # fn main() -> Result<(), whirl_dist::DistError> {
    /// let runtime = Runtime::new();
    /// let node = Node::start(NodeConfig::new("demo").tls("n.pem", "n.key", "ca.pem"))?;
    /// let group = runtime.default_group().clone();
    /// node.add_factory("counter", move |start: u64, ctx| {
    ///     let state = Counter { n: start };
    ///     let addr = match ctx.principal() {
    ///         Some(p) => group.spawner().principal(p.clone()).spawn(state),
    ///         None => group.spawn(state),
    ///     };
    ///     ctx.export(&addr).accept::<Add>().build().into()
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn add_factory<A, F>(&self, name: &'static str, factory: F) -> Result<(), DistError>
    where
        A: DeserializeOwned,
        F: Fn(A, &mut FactoryCtx<'_>) -> Spawned + Send + Sync + 'static,
    {
        let me = self.id();
        let core = Arc::downgrade(&self.core);
        self.core.add_factory(
            name,
            Box::new(move |bytes: &[u8], principal| {
                let Some(core) = core.upgrade() else {
                    return FactoryResult::Failed("the node is shutting down".to_owned());
                };
                let Ok(args) = wire::decode_payload::<A>(bytes) else {
                    return FactoryResult::BadArguments;
                };
                let mut ctx = FactoryCtx {
                    core: &core,
                    principal,
                };
                match factory(args, &mut ctx) {
                    Spawned::Pid(pid) if pid.node() == me => FactoryResult::Spawned(pid.local()),
                    Spawned::Pid(pid) => FactoryResult::Failed(format!(
                        "the factory returned {pid}, which is not a process of this node"
                    )),
                    Spawned::Refused(why) => FactoryResult::Failed(why),
                }
            }),
        )
    }

    /// Spawns a process on `node` from its factory `factory` with `args`, on behalf of
    /// `principal`, and waits up to `timeout` for its pid. Blocking: call it from outside
    /// processes, or from a handler that may block (a blocking group).
    pub fn spawn_on<A: Serialize + ?Sized>(
        &self,
        node: NodeId,
        factory: &str,
        args: &A,
        principal: Option<&whirl::Principal>,
        timeout: Duration,
    ) -> Result<Pid, SpawnRemoteError> {
        let spawning = crate::spawn::start(&self.core, node, factory, args, principal, timeout)?;
        crate::ask::block_on(spawning)
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
        let mut note = |what: &'static str, result: Result<(), TransportError>| {
            if let Err(source) = result {
                tracing::warn!(what, error = %source, "shutdown step failed");
                first_error.get_or_insert(DistError::Shutdown { what, source });
            }
        };
        if let Some(hellos) = self.hellos.take() {
            note("undeclare the hello subscriber", hellos.undeclare());
        }
        if let Some(mailbox) = self.mailbox.take() {
            note("undeclare the mailbox subscriber", mailbox.undeclare());
        }
        self.core.close();
        if let Some(names) = self.names.take() {
            note("undeclare the registry subscriber", names.undeclare());
        }
        if let Some(ticker) = self.ticker.take() {
            let _ = ticker.join();
        }
        if let Some(token) = self.token.take() {
            note("undeclare the liveliness token", token.undeclare());
        }
        if let Some(subscriber) = self.subscriber.take() {
            note(
                "undeclare the liveliness subscriber",
                subscriber.undeclare(),
            );
        }
        note("close the transport", self.transport.close());
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
