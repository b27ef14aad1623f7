//! The node's shared state, [`Core`], and the path every frame it sends takes.
//!
//! A node's parts (its handle, addresses, exports, the migration verbs) all hold one
//! `Arc<Core>`: the links to its peers, the tables of exports, pending asks, watches, names and
//! moves, and its counters. This module defines that state and the shared send path:
//!
//! * [`Core::send_data`] sends one data frame (a post, an ask, a spawn, a migration) through a
//!   peer's link: it takes a unit of the link's credit, never blocks, and follows a process that
//!   moved ([`redirects`]);
//! * control frames (replies, acknowledgements, watch notices, bounces) go on the peer's
//!   bounded control lane (`send_control`, `bounce`); a frame for this node itself is handled
//!   here at once, on the caller's thread.
//!
//! Everything else is an `impl Core` block per frame family, each in its own file:
//! [`receive`] (the receive path: decoding, admission, delivery into the runtime),
//! [`acks`] (acknowledgements and the ticker), [`asks`] (requests and their ends),
//! [`membership`] (liveliness and Down), [`exports`] (what this node offers), [`spawn`]
//! (remote spawn), [`registry`] (the cluster-wide names), [`monitors`] (watches and links
//! across nodes), [`migration`] (moving a process), [`redirects`] (following one that
//! moved) and [`relocation`] (telling every peer, and freeing its names).
//!
//! Frames arrive on Zenoh's threads ([`Core::on_frame`]). Those threads must never block or
//! panic: everything takes short locks, decodes with the total decoder of [`crate::wire`], posts
//! into the runtime (which never blocks) and queues answers on the peer's bounded control lane.
//!
//! Lock order, where two are held at once: `members`, then `links`, then `inbound`; `watches`,
//! then `exports` and `moves`; `inbound`, then `moves` and `fences`; `unnamed`, then `tokens`.

use std::collections::{BTreeSet, HashMap};

use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Weak};
use std::time::Instant;

use crossbeam_channel::Sender;
use parking_lot::{Mutex, RwLock};

use crate::ask::{AskEnd, AskSlot};
use crate::auth::Lane;
use crate::counts::{bump, Counters};
use crate::dispatch::{Export, FactoryFn, RestoreFn};
use crate::identity::Auth;
use crate::link::{Link, Refusal, Writers};
use crate::membership::Membership;
use crate::moves::Moves;
use crate::registry::{Entry as RegEntry, Registry};
use crate::transport::{Declared, Transport};
use crate::watches::Watches;
use crate::wire::{self, BounceReason, Header};
use crate::{DistCounts, MemberState, NodeEvent, NodeId, Policy};

mod acks;
mod asks;
mod exports;
mod handshake;
mod membership;
mod migration;
mod monitors;
mod receive;
mod redirects;
mod registry;
mod relocation;
mod spawn;

/// One registration of this node: the name, the entry, and the token that publishes it.
type Registration = (String, RegEntry, Box<dyn Declared>);

/// Who runs a node's background work: its own threads, or a simulator that steps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Drive {
    /// Writer threads publish the links; a ticker thread acknowledges and times out asks.
    Threads,
    /// Nothing runs unless the simulator calls it (`crate::sim`).
    Stepped,
}

/// Work deferred off a transport callback ([`Core::defer`]).
type Deferred = Box<dyn FnOnce() + Send>;

/// Why a data frame was not sent.
#[derive(Debug)]
pub(crate) enum SendError {
    /// The credit window (or the lane, or the asks in flight) to the node is full.
    Full,
    /// The node is Down, or this node is closing.
    Down,
    /// serde could not encode the payload.
    Encode(postcard::Error),
    /// The frame would exceed the frame limit.
    TooLarge { size: usize, limit: usize },
}

/// A bounce route: decodes the payload and hands the message to the sender's handler;
/// `false` if it does not decode.
pub(crate) type RouteFn = Arc<dyn Fn(BounceReason, &[u8]) -> bool + Send + Sync>;

struct PendingAsk {
    peer: NodeId,
    deadline: Instant,
    slot: Arc<AskSlot>,
}

/// Data frames taken from one peer, and how many of them were acknowledged.
#[derive(Default)]
struct Inbound {
    taken: u64,
    /// The last acknowledgement queued to the peer.
    acked: u64,
    /// The last acknowledgement handed to Zenoh (by the writer of the link to the peer): the
    /// most the peer can have heard of, so what the receiver holds it to.
    published: Arc<AtomicU64>,
    /// The positions (in the count of frames taken) of the peer's frames held for a process
    /// that is moving and not yet sent back to it. No acknowledgement covers the first of
    /// them: this node does not hold the message for good (the node that will handle it is
    /// elsewhere), so if this node dies first, the sender counts it in doubt.
    held: BTreeSet<u64>,
}

impl Inbound {
    /// The frames that may be acknowledged: every one taken, up to the first still held.
    fn ackable(&self) -> u64 {
        self.held
            .first()
            .map_or(self.taken, |first| self.taken.min(first - 1))
    }
}

/// Membership and the receivers of its events.
pub(crate) struct Members {
    pub(crate) membership: Membership,
    pub(crate) listeners: Vec<Sender<NodeEvent>>,
}

/// Everything a node's parts share.
pub(crate) struct Core {
    id: NodeId,
    /// `whirl/<cluster>/`.
    root: String,
    transport: Arc<dyn Transport>,
    window: usize,
    max_frame: usize,
    /// The writer threads that publish every link's lanes (`link.rs`).
    writers: Writers,
    pub(crate) members: Mutex<Members>,
    links: RwLock<FxHashMap<NodeId, Arc<Link>>>,
    exports: RwLock<FxHashMap<u64, Arc<Export>>>,
    tags: Mutex<HashMap<u64, &'static str>>,
    asks: Mutex<FxHashMap<u64, PendingAsk>>,
    next_req: AtomicU64,
    routes: RwLock<FxHashMap<u64, RouteFn>>,
    next_route: AtomicU64,
    /// The stamp of this node's last registration: each one's is later (a name registered,
    /// withdrawn and registered again within a millisecond gets a token of its own).
    last_stamp: AtomicU64,
    inbound: Mutex<FxHashMap<NodeId, Inbound>>,
    /// The nodes Up now: frames are read only from these (and from this node). A frame from
    /// anyone else is refused before anything is allocated for its sender, so a stranger
    /// cannot make this node open links or keep counts for made-up ids.
    up: RwLock<FxHashSet<NodeId>>,
    watches: Mutex<Watches>,
    /// For each link this node placed, the watch on its local process.
    link_watches: Mutex<HashMap<u64, whirl::Watch>>,
    registry: Mutex<Registry>,
    /// This node's registrations, by local process: their tokens.
    tokens: Mutex<HashMap<u64, Vec<Registration>>>,
    factories: RwLock<HashMap<u64, FactoryFn>>,
    principals: Mutex<HashMap<(u64, u8, u16, u64), whirl::Principal>>,
    counts: Counters,
    closing: AtomicBool,
    /// Migration: what is moving, what moved, this node's redirects (`moves.rs`).
    moves: Mutex<Moves>,
    /// Whether `moves` holds anything: the receive and send paths look no further otherwise.
    any_moves: AtomicBool,
    /// Held for reading by a post or ask from its check for moves until it is in the
    /// process's mailbox (or refused), and for writing by a process that starts moving, right
    /// after it is marked moving: so every message either is queued before the hand-over
    /// starts, and travels with the process, or sees it moving and is held (`receive.rs`).
    delivery_gate: RwLock<()>,
    /// How to restore a migrated process of each kind, by the kind's tag.
    migrations: RwLock<HashMap<u64, RestoreFn>>,
    /// Migration kinds by the process type they restore.
    migration_kinds: RwLock<HashMap<std::any::TypeId, u64>>,
    /// Fences from senders not yet answered: (sender, old local id, frames to take first).
    fences: Mutex<Vec<(NodeId, u64, u64)>>,
    /// Processes that moved away, by old local id, until every peer follows them
    /// (`relocation.rs`).
    relocating: Mutex<HashMap<u64, crate::moves::Relocating>>,
    /// Restored processes whose names wait for their old node's `NamesFree`: by local id, the
    /// old node and the names.
    unnamed: Mutex<HashMap<u64, (NodeId, Vec<String>)>>,

    /// Who runs the node's background work (`node.rs`).
    drive: Drive,
    /// Work deferred off a transport callback, on a stepped node: run by the simulator.
    deferred: Mutex<std::collections::VecDeque<Deferred>>,

    /// What peers may do here.
    policy: Policy,
    /// The message tags peers may send, hashed (`None`: any).
    policy_tags: Option<FxHashSet<u64>>,
    /// A TLS node's identity and handshakes (`None` on a plaintext node).
    auth: Option<Auth>,
    /// The clock deadlines are read on (the transport's: see `Transport::clock`).
    clock: Arc<dyn whirl::time::Clock>,
}

impl Core {
    pub(crate) fn new(
        id: NodeId,
        config: &crate::NodeConfig,
        transport: Arc<dyn Transport>,
        auth: Option<Auth>,
        writers: Writers,
        drive: Drive,
    ) -> Core {
        Core {
            clock: transport.clock(),
            drive,
            deferred: Mutex::new(std::collections::VecDeque::new()),
            id,
            root: format!("whirl/{}/", config.cluster()),
            transport,
            window: config.window_size(),
            max_frame: config.max_frame_size(),
            writers,
            policy: config.authorisation().clone(),
            policy_tags: config.authorisation().message_tags(),
            auth,
            members: Mutex::new(Members {
                membership: Membership::new(id),
                listeners: Vec::new(),
            }),
            links: RwLock::new(FxHashMap::default()),
            exports: RwLock::new(FxHashMap::default()),
            tags: Mutex::new(HashMap::new()),
            asks: Mutex::new(FxHashMap::default()),
            next_req: AtomicU64::new(1),
            routes: RwLock::new(FxHashMap::default()),
            next_route: AtomicU64::new(1),
            last_stamp: AtomicU64::new(0),
            inbound: Mutex::new(FxHashMap::default()),
            up: RwLock::new(FxHashSet::default()),
            watches: Mutex::new(Watches::default()),
            link_watches: Mutex::new(HashMap::new()),
            registry: Mutex::new(Registry::default()),
            tokens: Mutex::new(HashMap::new()),
            factories: RwLock::new(HashMap::new()),
            principals: Mutex::new(HashMap::new()),
            counts: Counters::default(),
            closing: AtomicBool::new(false),
            moves: Mutex::new(Moves::default()),
            any_moves: AtomicBool::new(false),
            delivery_gate: RwLock::new(()),
            migrations: RwLock::new(HashMap::new()),
            migration_kinds: RwLock::new(HashMap::new()),
            fences: Mutex::new(Vec::new()),
            relocating: Mutex::new(HashMap::new()),
            unnamed: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn id(&self) -> NodeId {
        self.id
    }

    /// Runs `work` off this thread (a transport callback must not declare or undeclare): on
    /// a thread of its own, or, on a stepped node, when the simulator runs deferred work.
    pub(crate) fn defer(self: &Arc<Self>, work: impl FnOnce(&Arc<Core>) + Send + 'static) {
        let core = Arc::downgrade(self);
        let work: Deferred = Box::new(move || {
            if let Some(core) = core.upgrade() {
                work(&core);
            }
        });
        match self.drive {
            Drive::Threads => {
                std::thread::spawn(work);
            }
            Drive::Stepped => self.deferred.lock().push_back(work),
        }
    }

    /// Runs the work deferred so far on a stepped node; returns how many pieces ran.
    pub(crate) fn run_deferred(&self) -> usize {
        let mut ran = 0;
        loop {
            let Some(work) = self.deferred.lock().pop_front() else {
                return ran;
            };
            work();
            ran += 1;
        }
    }

    /// The protocol's state, for a simulator's report: frames taken and held per peer, fences
    /// not answered yet, the moves table.
    pub(crate) fn describe_state(&self) -> String {
        let mut inbound: Vec<String> = self
            .inbound
            .lock()
            .iter()
            .map(|(peer, i)| format!("{peer}: taken {}, held {:?}", i.taken, i.held))
            .collect();
        inbound.sort_unstable();
        format!(
            "inbound {inbound:?}; fences {:?}; {:?}",
            self.fences.lock(),
            self.moves.lock()
        )
    }

    /// Publishes what the links hold, on the calling thread (a stepped node's writers).
    pub(crate) fn flush(&self) -> usize {
        self.writers.flush()
    }

    pub(crate) fn read_counts(&self) -> DistCounts {
        let mut counts = self.counts.read();
        counts.malformed_names = self.registry.lock().malformed;
        counts
    }

    /// `whirl/<cluster>/alive/`.
    pub(crate) fn alive_prefix(&self) -> String {
        format!("{}alive/", self.root)
    }

    /// The mailbox key of `node`.
    pub(crate) fn mailbox_key(&self, node: NodeId) -> String {
        format!("{}n/{node}/mbox", self.root)
    }

    /// Now, on the node's clock (`Transport::clock`).
    pub(crate) fn now(&self) -> Instant {
        self.clock.now()
    }

    /// The node's clock, for what waits on it.
    pub(crate) fn clock(&self) -> Arc<dyn whirl::time::Clock> {
        Arc::clone(&self.clock)
    }

    /// Whether `peer` is Down for good.
    pub(crate) fn is_quarantined(&self, peer: NodeId) -> bool {
        self.members.lock().membership.state(peer) == Some(MemberState::Quarantined)
    }

    /// The link to `peer`, opened on first use; `None` if the peer is quarantined or this
    /// node is closing.
    pub(crate) fn link_to(&self, peer: NodeId) -> Option<Arc<Link>> {
        if let Some(link) = self.links.read().get(&peer) {
            return Some(Arc::clone(link));
        }
        if self.closing.load(Relaxed) || self.is_quarantined(peer) {
            return None;
        }
        let mut links = self.links.write();
        if let Some(link) = links.get(&peer) {
            return Some(Arc::clone(link));
        }
        if !self.may_send_to(peer) {
            return None;
        }
        // Just before the writer hands a frame to Zenoh: note an acknowledgement as told (the
        // peer is held to what it can have heard, `receive.rs`), and on a TLS node seal it.
        let keys = self.auth.as_ref().and_then(|auth| auth.keys(peer));
        let published = Arc::clone(&self.inbound.lock().entry(peer).or_default().published);
        let max_frame = self.max_frame;
        let seal: crate::link::Seal = Arc::new(move |control: bool, frame: &mut Vec<u8>| {
            if control {
                if let Ok(wire::Frame {
                    header: Header::Ack { received },
                    ..
                }) = wire::decode(frame, max_frame)
                {
                    published.fetch_max(received, Relaxed);
                }
            }
            if let Some(keys) = &keys {
                let lane = if control { Lane::Control } else { Lane::Data };
                keys.seal(lane, frame);
            }
        });
        // A TLS peer granted a window in its hello: send no more than it takes.
        let granted = self.auth.as_ref().and_then(|auth| auth.peer_window(peer));
        let credit = granted.map_or(self.window, |w| self.window.min(w as usize));
        let link = Arc::new(Link::open(
            &self.writers,
            self.mailbox_key(peer),
            credit,
            self.window,
            Some(seal),
        ));
        links.insert(peer, Arc::clone(&link));
        Some(link)
    }

    /// The way to `node`: `Some(None)` for this node itself (frames are handled here),
    /// `Some(link)` for a peer, `None` when the peer cannot be reached.
    fn link_for(&self, node: NodeId) -> Option<Option<Arc<Link>>> {
        match node == self.id {
            true => Some(None),
            false => self.link_to(node).map(Some),
        }
    }

    /// Queues a control frame for `peer` (or handles it here, for this node); `false` only if
    /// the peer's control lane is full. A Down peer takes nothing, and the frame is moot.
    fn queue_control(self: &Arc<Self>, peer: NodeId, frame: Vec<u8>) -> bool {
        if peer == self.id {
            self.on_frame(&frame);
            return true;
        }
        self.link_to(peer)
            .is_none_or(|link| link.send_control(frame))
    }

    /// Sends a control frame (a reply, a watch notice); one that finds the lane full is
    /// counted and logged (see `link.rs` for why that takes a peer with a larger window).
    fn send_control(self: &Arc<Self>, peer: NodeId, frame: Vec<u8>) {
        if !self.queue_control(peer, frame) {
            bump(&self.counts.control_overflow);
            tracing::warn!(%peer, "control lane full; a control frame was dropped");
        }
    }

    /// Sends a refused message back to its sender. If the control lane to the sender is full
    /// (the sender's credit window is larger than this node's), the message is dead-lettered
    /// here instead, and counted: it is not delivered, and it is not lost without a trace.
    fn bounce(self: &Arc<Self>, peer: NodeId, header: &Header, payload: &[u8]) {
        if !self.queue_control(peer, wire::encode_raw(self.id, header, payload)) {
            bump(&self.counts.bounce_overflow);
            tracing::warn!(%peer, "bounce lane full (is the peer's window larger than this node's?); the message is dead-lettered here");
        }
    }

    /// Sends one data frame (a post, an ask, a spawn) to `node` through `link`, or handles
    /// it here when `node` is this node. Takes a unit of credit; never blocks.
    pub(crate) fn send_data<T: serde::Serialize + ?Sized>(
        self: &Arc<Self>,
        link: Option<&Link>,
        node: NodeId,
        header: &Header,
        payload: &T,
    ) -> Result<(), SendError> {
        // Every send to another node holds its link's gate for reading: a fence's mark, taken
        // under the write side, then counts every send that did not see the fence (see
        // `moves.rs`).
        let _gate = link.map(|link| link.gate.read());
        if self.any_moves.load(Relaxed) {
            if let Some(result) = self.reroute(node, header, payload) {
                return result;
            }
        }
        let result = self.try_send_data(link, node, header, payload);
        match result {
            Ok(()) => bump(&self.counts.sent),
            Err(_) => bump(&self.counts.refused),
        }
        result
    }

    fn try_send_data<T: serde::Serialize + ?Sized>(
        self: &Arc<Self>,
        link: Option<&Link>,
        node: NodeId,
        header: &Header,
        payload: &T,
    ) -> Result<(), SendError> {
        let Some(link) = link else {
            if node != self.id {
                return Err(SendError::Down);
            }
            self.on_frame(&self.encode(header, payload)?);
            return Ok(());
        };
        link.take_credit().map_err(|refusal| match refusal {
            Refusal::Full => SendError::Full,
            Refusal::Down => SendError::Down,
        })?;
        let frame = match self.encode(header, payload) {
            Ok(frame) => frame,
            Err(e) => {
                link.return_credit(&self.counts);
                return Err(e);
            }
        };
        link.send_data(frame).map_err(|_| {
            // Cannot happen while the link's invariants hold (see `Link::send_data`).
            link.return_credit(&self.counts);
            SendError::Full
        })
    }

    fn encode<T: serde::Serialize + ?Sized>(
        &self,
        header: &Header,
        payload: &T,
    ) -> Result<Vec<u8>, SendError> {
        let frame = wire::encode(self.id, header, payload).map_err(SendError::Encode)?;
        match frame.len() > self.max_frame {
            true => Err(SendError::TooLarge {
                size: frame.len(),
                limit: self.max_frame,
            }),
            false => Ok(frame),
        }
    }

    /// Closes every link (their unacknowledged frames are in doubt), ends every ask, stops
    /// the writers, and the ticker at its next tick. Posts from now on return Terminated.
    pub(crate) fn close(&self) {
        self.closing.store(true, Relaxed);
        let links: Vec<Arc<Link>> = self.links.write().drain().map(|(_, l)| l).collect();
        for link in &links {
            self.counts.in_doubt.fetch_add(link.close(), Relaxed);
        }
        self.end_asks(|_| true, || AskEnd::NodeDown);
        // Messages waiting for a fence were never sent on: they go back to their senders.
        let waiting = self.moves.lock().drain();
        for (header, payload) in waiting {
            self.undeliverable(header, &payload, BounceReason::Terminated);
        }
        if self.drive == Drive::Stepped {
            // No writer thread will let go of the closed links: this one does.
            self.writers.flush();
        }
        for link in &links {
            link.join();
        }
        self.writers.stop();
    }
}

/// Keeps a bounce route registered while an address using it exists.
pub(crate) struct RouteGuard {
    core: Weak<Core>,
    id: u64,
}

impl RouteGuard {
    pub(crate) fn id(&self) -> u64 {
        self.id
    }
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        if let Some(core) = self.core.upgrade() {
            core.routes.write().remove(&self.id);
        }
    }
}
