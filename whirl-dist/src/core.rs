//! The node's shared state and its receive path: links, exports, pending asks, bounce routes
//! and the frames that arrive on the node's mailbox key.
//!
//! Frames arrive on Zenoh's threads ([`Core::on_frame`]). Those threads must never block or
//! panic: everything here takes short locks, decodes with the total decoder of
//! [`crate::wire`], posts into the runtime (which never blocks) and queues answers on the
//! peer's bounded control lane.
//!
//! **Acknowledgements.** For each peer the node counts the data frames it has taken (posted
//! into the runtime or bounced) and acknowledges the running total: at once after every
//! `window / 8` frames, and otherwise from the ticker within [`ACK_INTERVAL`]. A bounce is
//! queued before the acknowledgement that covers its frame.

use std::collections::HashMap;

use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use parking_lot::{Mutex, RwLock};
use zenoh::liveliness::LivelinessToken;
use zenoh::qos::CongestionControl;
use zenoh::sample::{Sample, SampleKind};
use zenoh::{Session, Wait};

use crate::ask::{AskEnd, AskSlot};
use crate::counts::{bump, Counters};
use crate::dispatch::{Delivery, Export, FactoryFn, FactoryResult, Replier, RestoreFn};
use crate::link::{Link, Refusal};
use crate::membership::{parse_alive_key, Membership, Observation};
use crate::moves::{HeldFrame, Moves, Outgoing, Redirected, Route};
use crate::registry::{self, Entry as RegEntry, Registry};
use crate::remote::tag_of;
use crate::watches::{MonitorRef, Notify, Theirs, Watches};
use crate::wire::{
    self, BounceReason, Frame, Header, MigratePayload, Outcome, RemoteExit, WireError,
    WirePrincipal,
};
use crate::{DistCounts, DistError, DownReason, MemberState, NodeEvent, NodeId, Pid};

/// How many distinct travelling principals a node keeps built at once.
const PRINCIPAL_CACHE: usize = 4096;

/// How long a received frame waits, at most, for its acknowledgement.
pub(crate) const ACK_INTERVAL: Duration = Duration::from_millis(5);

/// One registration of this node: the name, the entry, and the token that publishes it.
type Registration = (String, RegEntry, LivelinessToken);

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
    acked: u64,
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
    session: Session,
    window: usize,
    max_frame: usize,
    pub(crate) members: Mutex<Members>,
    links: RwLock<FxHashMap<NodeId, Arc<Link>>>,
    exports: RwLock<FxHashMap<u64, Arc<Export>>>,
    tags: Mutex<HashMap<u64, &'static str>>,
    asks: Mutex<FxHashMap<u64, PendingAsk>>,
    next_req: AtomicU64,
    routes: RwLock<FxHashMap<u64, RouteFn>>,
    next_route: AtomicU64,
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
    /// How to restore a migrated process of each kind, by the kind's tag.
    migrations: RwLock<HashMap<u64, RestoreFn>>,
    /// Migration kinds by the process type they restore.
    migration_kinds: RwLock<HashMap<std::any::TypeId, u64>>,
    /// Fences from senders not yet answered: (sender, old local id, frames to take first).
    fences: Mutex<Vec<(NodeId, u64, u64)>>,
}

impl Core {
    pub(crate) fn new(
        id: NodeId,
        cluster: &str,
        session: Session,
        window: usize,
        max_frame: usize,
    ) -> Core {
        Core {
            id,
            root: format!("whirl/{cluster}/"),
            session,
            window,
            max_frame,
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
            migrations: RwLock::new(HashMap::new()),
            migration_kinds: RwLock::new(HashMap::new()),
            fences: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn id(&self) -> NodeId {
        self.id
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

    // ----- links -----

    /// The link to `peer`, opened on first use; `None` if the peer is quarantined or this
    /// node is closing.
    pub(crate) fn link_to(&self, peer: NodeId) -> Option<Arc<Link>> {
        if let Some(link) = self.links.read().get(&peer) {
            return Some(Arc::clone(link));
        }
        if self.closing.load(Relaxed)
            || self.members.lock().membership.state(peer) == Some(MemberState::Quarantined)
        {
            return None;
        }
        let mut links = self.links.write();
        if let Some(link) = links.get(&peer) {
            return Some(Arc::clone(link));
        }
        match Link::open(&self.session, peer, self.mailbox_key(peer), self.window) {
            Ok(link) => {
                let link = Arc::new(link);
                links.insert(peer, Arc::clone(&link));
                Some(link)
            }
            Err(error) => {
                tracing::error!(%peer, %error, "cannot start the writer thread of a link");
                None
            }
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

    /// Sends a request (an ask or a spawn) whose end comes back as `Reply { req }`: reserves
    /// an ask slot on the link, records the pending request until `deadline`, sends.
    pub(crate) fn start_request<T: serde::Serialize + ?Sized>(
        self: &Arc<Self>,
        link: Option<&Link>,
        node: NodeId,
        header: impl FnOnce(u64) -> Header,
        payload: &T,
        deadline: Instant,
    ) -> Result<Arc<AskSlot>, SendError> {
        if let Some(link) = link {
            if !link.begin_ask() {
                bump(&self.counts.refused);
                return Err(SendError::Full);
            }
        }
        let slot = AskSlot::new();
        let req = self.begin_ask(node, deadline, Arc::clone(&slot));
        if let Err(e) = self.send_data(link, node, &header(req), payload) {
            self.forget_ask(req);
            if let Some(link) = link {
                link.end_ask();
            }
            return Err(e);
        }
        Ok(slot)
    }

    // ----- membership -----

    /// Handles one liveliness sample. Runs on a Zenoh thread.
    pub(crate) fn on_liveliness(self: &Arc<Self>, sample: &Sample) {
        let key = sample.key_expr().as_str();
        let prefix = self.alive_prefix();
        let mut members = self.members.lock();
        let Some(node) = parse_alive_key(&prefix, key) else {
            members.membership.malformed_key();
            drop(members);
            tracing::warn!(key, "ignored a liveliness key that names no node");
            return;
        };
        let observation = match sample.kind() {
            SampleKind::Put => Observation::Alive(node),
            SampleKind::Delete => Observation::Gone(node),
        };
        let event = members.membership.observe(observation);
        let gone = matches!(observation, Observation::Gone(_));
        if gone {
            // Before anyone hears of the Down: a post made after it must see the link closed.
            self.close_link(node);
        }
        self.publish(members, event);
        if gone {
            self.peer_down(node);
        }
    }

    /// `node` is Down for `reason` although its token may still be there (it cannot read this
    /// node's frames, or it has quarantined this node): quarantine it as if it had gone.
    fn unusable(self: &Arc<Self>, node: NodeId, reason: DownReason) {
        let mut members = self.members.lock();
        let event = members.membership.unusable(node, reason);
        self.close_link(node);
        self.publish(members, event);
        self.peer_down(node);
    }

    /// Applies a membership event to the set of Up nodes and tells the listeners; releases
    /// the lock.
    fn publish(&self, mut members: parking_lot::MutexGuard<'_, Members>, event: Option<NodeEvent>) {
        match event {
            Some(NodeEvent::Up(node)) => {
                self.up.write().insert(node);
            }
            Some(NodeEvent::Down { node, .. }) => {
                self.up.write().remove(&node);
            }
            _ => {}
        }
        if let Some(event) = event {
            members
                .listeners
                .retain(|listener| listener.send(event).is_ok());
        }
        drop(members);
        match event {
            Some(NodeEvent::Up(node)) => tracing::debug!(%node, "node up"),
            Some(NodeEvent::Down { node, reason }) => {
                tracing::info!(%node, ?reason, "node down")
            }
            Some(NodeEvent::ResurrectionRefused(node)) => {
                tracing::warn!(%node, "quarantined node reappeared; refused")
            }
            Some(NodeEvent::Moved { .. }) | None => {}
        }
    }

    /// Closes the link to `peer` for good: what it had unacknowledged is in doubt. Runs no
    /// user code, so it may run under the membership lock (lock order: members, then links).
    fn close_link(&self, peer: NodeId) {
        if let Some(link) = self.links.write().remove(&peer) {
            let unacknowledged = link.close();
            self.counts.in_doubt.fetch_add(unacknowledged, Relaxed);
        }
    }

    /// `peer` is Down for good: close its link (if not yet), end the asks waiting on it,
    /// forget its inbound count and its names, tell the watchers of its processes, fail what
    /// was linked from it.
    fn peer_down(self: &Arc<Self>, peer: NodeId) {
        self.close_link(peer);
        if self.any_moves.load(Relaxed) {
            let (stranded, orphaned) = self.moves.lock().node_down(peer);
            for (header, payload) in stranded {
                self.undeliverable(header, &payload, BounceReason::Terminated);
            }
            for (to, batch) in orphaned {
                for (header, payload) in batch {
                    self.resend(to, header, payload);
                }
            }
        }
        // A link opened later (a post racing with this) finds the peer quarantined.
        self.end_asks(|ask| ask.peer == peer, || AskEnd::NodeDown);
        self.inbound.lock().remove(&peer);
        self.registry.lock().forget_node(peer);
        let lost = self.watches.lock().lost(peer);
        for (mref, pid, notify) in lost.notify {
            self.link_watches.lock().remove(&mref);
            tracing::debug!(%pid, "watched process unreachable: its node is down");
            notify(RemoteExit::NoConnection);
        }
        for local in lost.kill {
            self.kill(local, format!("linked node {peer} is down"));
        }
    }

    /// Ends every pending ask `matching` selects with `end()`, outside the table's lock.
    fn end_asks(&self, matching: impl Fn(&PendingAsk) -> bool, end: impl Fn() -> AskEnd) {
        let ended: Vec<PendingAsk> = {
            let mut asks = self.asks.lock();
            let ids: Vec<u64> = asks
                .iter()
                .filter(|(_, ask)| matching(ask))
                .map(|(id, _)| *id)
                .collect();
            ids.iter().filter_map(|id| asks.remove(id)).collect()
        };
        for ask in ended {
            self.end_ask_slot(&ask, end());
        }
    }

    fn end_ask_slot(&self, ask: &PendingAsk, end: AskEnd) {
        if let Some(link) = self.links.read().get(&ask.peer) {
            link.end_ask();
        }
        ask.slot.complete(end);
    }

    // ----- exports, tags, routes -----

    /// Records that `name` is this node's tag for its hash; refuses a different name with the
    /// same hash.
    pub(crate) fn claim_tag(&self, name: &'static str) -> Result<(), DistError> {
        let mut tags = self.tags.lock();
        match tags.entry(tag_of(name)) {
            std::collections::hash_map::Entry::Occupied(e) if *e.get() != name => {
                Err(DistError::TagCollision {
                    first: e.get(),
                    second: name,
                })
            }
            std::collections::hash_map::Entry::Occupied(_) => Ok(()),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(name);
                Ok(())
            }
        }
    }

    /// Installs (or replaces) the export of `local`; returns it.
    pub(crate) fn install_export(&self, local: u64, export: Export) -> Arc<Export> {
        let export = Arc::new(export);
        self.exports.write().insert(local, Arc::clone(&export));
        export
    }

    /// Local process `local` ended: withdraw its export and its names, tell its watchers.
    /// Runs on the thread that ended it (a worker, usually): short locks and queued frames.
    pub(crate) fn process_ended(self: &Arc<Self>, local: u64, reason: &whirl::ExitReason) {
        self.exports.write().remove(&local);
        if self.any_moves.load(Relaxed) && self.moves.lock().is_moving(local) {
            // Handed over: its watchers and names go with it (`migrate.rs`).
            return;
        }
        let watchers = self.watches.lock().ended(local);
        let exit = RemoteExit::of(reason);
        for w in watchers {
            let header = Header::Down {
                mref: w.mref,
                reason: exit.clone(),
            };
            self.send_control(w.node, wire::encode_raw(self.id, &header, &[]));
        }
        let names = self.tokens.lock().remove(&local).unwrap_or_default();
        self.forget_names(names);
    }

    /// Removes registrations of this node from the table, then withdraws their tokens. The
    /// tokens are dropped after the table's lock is released: Zenoh tells this node's own
    /// registry subscriber of the withdrawal synchronously, on this thread.
    fn forget_names(&self, names: Vec<Registration>) {
        {
            let mut registry = self.registry.lock();
            for (name, entry, _) in &names {
                registry.remove(name, *entry);
            }
        }
        drop(names);
    }

    // ----- watches -----

    /// Watches `pid`; `notify` runs once when it ends (or cannot be reached).
    pub(crate) fn monitor(self: &Arc<Self>, pid: Pid, link: bool, notify: Notify) -> MonitorRef {
        let mref = self.watches.lock().watch(pid, notify);
        let monitor = MonitorRef { pid, mref };
        // Inserted before the check: a Down racing with this either finds the watch or is
        // seen here as quarantine.
        if pid.node() != self.id
            && self.members.lock().membership.state(pid.node()) == Some(MemberState::Quarantined)
        {
            self.end_mine(mref, RemoteExit::NoConnection);
            return monitor;
        }
        let header = Header::Monitor {
            target: pid.local(),
            mref,
            link,
        };
        self.send_control(pid.node(), wire::encode_raw(self.id, &header, &[]));
        monitor
    }

    /// Stops a watch; `false` if it had already ended.
    pub(crate) fn demonitor(self: &Arc<Self>, monitor: MonitorRef) -> bool {
        if self.watches.lock().take_mine(monitor.mref).is_none() {
            return false;
        }
        self.link_watches.lock().remove(&monitor.mref);
        let header = Header::Demonitor { mref: monitor.mref };
        self.send_control(monitor.pid.node(), wire::encode_raw(self.id, &header, &[]));
        true
    }

    /// Links local process `local` with `pid`: each fails when the other fails.
    pub(crate) fn link<P: whirl::Process>(self: &Arc<Self>, local: &whirl::Addr<P>, pid: Pid) {
        let victim = local.clone();
        let monitor = self.monitor(
            pid,
            true,
            Box::new(move |exit: RemoteExit| {
                if exit.is_failure() {
                    victim.exit(whirl::ExitReason::Failed(whirl::Failure::new(format!(
                        "linked process {pid} ended: {exit}"
                    ))));
                }
            }),
        );
        let core = Arc::downgrade(self);
        let watch = local.watch(move |down| {
            let Some(core) = core.upgrade() else { return };
            core.link_watches.lock().remove(&monitor.mref);
            if down.reason.is_failure() && core.watches.lock().take_mine(monitor.mref).is_some() {
                let header = Header::Exit {
                    mref: monitor.mref,
                    reason: RemoteExit::of(&down.reason),
                };
                core.send_control(pid.node(), wire::encode_raw(core.id, &header, &[]));
            }
        });
        self.link_watches.lock().insert(monitor.mref, watch);
    }

    /// Ends this node's watch `mref` with `exit`, if it is still there.
    fn end_mine(&self, mref: u64, exit: RemoteExit) {
        let mine = self.watches.lock().take_mine(mref);
        self.link_watches.lock().remove(&mref);
        if let Some((_, notify)) = mine {
            notify(exit);
        }
    }

    fn on_monitor(self: &Arc<Self>, from: NodeId, target: u64, mref: u64, link: bool) {
        let added = {
            // The export is checked under the watch lock: `process_ended` withdraws the
            // export before it takes this lock, so a watch added here is always told.
            let mut watches = self.watches.lock();
            self.exports.read().contains_key(&target)
                && watches.add_theirs(
                    target,
                    Theirs {
                        node: from,
                        mref,
                        link,
                    },
                )
        };
        if !added {
            let header = Header::Down {
                mref,
                reason: RemoteExit::NoProcess,
            };
            self.send_control(from, wire::encode_raw(self.id, &header, &[]));
        }
    }

    fn on_exit(&self, from: NodeId, mref: u64, reason: RemoteExit) {
        let target = {
            let mut watches = self.watches.lock();
            let target = watches.link_target(from, mref);
            if target.is_some() {
                watches.remove_theirs(from, mref);
            }
            target
        };
        if let Some(local) = target {
            self.kill(local, format!("linked process on {from} ended: {reason}"));
        }
    }

    fn kill(&self, local: u64, why: String) {
        let export = self.exports.read().get(&local).cloned();
        if let Some(export) = export {
            (export.kill)(whirl::ExitReason::Failed(whirl::Failure::new(why)));
        }
    }

    // ----- registry -----

    /// Registers exported local process `pid` under `name`.
    pub(crate) fn register(&self, name: &str, pid: Pid) -> Result<(), DistError> {
        if !registry::valid_name(name) {
            return Err(DistError::InvalidName {
                name: name.to_owned(),
            });
        }
        if pid.node() != self.id || !self.exports.read().contains_key(&pid.local()) {
            return Err(DistError::NotExported(pid));
        }
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let entry = RegEntry { ms, pid };
        let key = format!("{}reg/{}", self.root, registry::key_suffix(name, entry));
        let token = self
            .session
            .liveliness()
            .declare_token(key)
            .wait()
            .map_err(|source| DistError::Declare {
                what: "registry token",
                source,
            })?;
        self.registry.lock().insert(name.to_owned(), entry);
        let mut tokens = self.tokens.lock();
        tokens
            .entry(pid.local())
            .or_default()
            .push((name.to_owned(), entry, token));
        drop(tokens);
        // The process may have ended while the token was being declared.
        if !self.exports.read().contains_key(&pid.local()) {
            let names = self.tokens.lock().remove(&pid.local()).unwrap_or_default();
            self.forget_names(names);
            return Err(DistError::NotExported(pid));
        }
        Ok(())
    }

    /// Withdraws `pid`'s registration under `name`.
    pub(crate) fn unregister(&self, name: &str, pid: Pid) -> bool {
        let removed: Vec<Registration> = {
            let mut tokens = self.tokens.lock();
            let Some(list) = tokens.get_mut(&pid.local()) else {
                return false;
            };
            let (gone, kept): (Vec<_>, Vec<_>) = list.drain(..).partition(|(n, _, _)| n == name);
            *list = kept;
            gone
        };
        let any = !removed.is_empty();
        self.forget_names(removed);
        any
    }

    pub(crate) fn whereis(&self, name: &str) -> Option<Pid> {
        self.registry.lock().first(name)
    }

    pub(crate) fn whereis_all(&self, name: &str) -> Vec<Pid> {
        self.registry.lock().all(name)
    }

    pub(crate) fn registered(&self) -> Vec<(String, usize)> {
        self.registry.lock().names()
    }

    /// A registry token appeared or was withdrawn. Runs on a Zenoh thread.
    pub(crate) fn on_registry(&self, sample: &Sample) {
        let prefix = format!("{}reg/", self.root);
        let parsed = sample
            .key_expr()
            .as_str()
            .strip_prefix(&prefix)
            .and_then(registry::parse_suffix);
        let mut registry = self.registry.lock();
        let Some((name, entry)) = parsed else {
            registry.malformed += 1;
            return;
        };
        match sample.kind() {
            SampleKind::Put => {
                let quarantined = entry.pid.node() != self.id
                    && self.members.lock().membership.state(entry.pid.node())
                        == Some(MemberState::Quarantined);
                if !quarantined {
                    registry.insert(name, entry);
                }
            }
            SampleKind::Delete => registry.remove(&name, entry),
        }
    }

    // ----- remote spawn -----

    pub(crate) fn add_factory(
        &self,
        name: &'static str,
        factory: FactoryFn,
    ) -> Result<(), DistError> {
        self.claim_tag(name)?;
        self.factories.write().insert(tag_of(name), factory);
        Ok(())
    }

    fn on_spawn(
        self: &Arc<Self>,
        from: NodeId,
        req: u64,
        factory: u64,
        principal: Option<WirePrincipal>,
        args: &[u8],
    ) {
        let result = {
            let factories = self.factories.read();
            factories
                .get(&factory)
                .map(|f| f(args, principal.map(|p| self.principal(p))))
        };
        let (outcome, payload) = match result {
            None => (Outcome::Bounced(BounceReason::NoProcess), Vec::new()),
            Some(FactoryResult::BadArguments) => {
                (Outcome::Bounced(BounceReason::Incompatible), Vec::new())
            }
            Some(FactoryResult::Failed(why)) => (Outcome::Failed, why.into_bytes()),
            Some(FactoryResult::Spawned(local)) => (
                Outcome::Answered,
                postcard::to_stdvec(&local).unwrap_or_default(),
            ),
        };
        match outcome {
            Outcome::Answered => bump(&self.counts.delivered),
            _ => bump(&self.counts.bounced),
        }
        let header = Header::Reply { req, outcome };
        self.send_control(from, wire::encode_raw(self.id, &header, &payload));
    }

    pub(crate) fn remove_export(&self, local: u64) -> bool {
        self.exports.write().remove(&local).is_some()
    }

    pub(crate) fn add_route(self: &Arc<Self>, route: RouteFn) -> Arc<RouteGuard> {
        let id = self.next_route.fetch_add(1, Relaxed);
        self.routes.write().insert(id, route);
        Arc::new(RouteGuard {
            core: Arc::downgrade(self),
            id,
        })
    }

    // ----- asks -----

    pub(crate) fn begin_ask(&self, peer: NodeId, deadline: Instant, slot: Arc<AskSlot>) -> u64 {
        let req = self.next_req.fetch_add(1, Relaxed);
        self.asks.lock().insert(
            req,
            PendingAsk {
                peer,
                deadline,
                slot,
            },
        );
        req
    }

    pub(crate) fn forget_ask(&self, req: u64) {
        self.asks.lock().remove(&req);
    }

    // ----- migration (the protocol is in `moves.rs`; the verbs in `migrate.rs`) -----

    /// Registers how to restore processes of migration kind `kind`, of type `type_id`.
    pub(crate) fn add_migration(
        &self,
        kind: &'static str,
        type_id: std::any::TypeId,
        restore: RestoreFn,
    ) -> Result<u64, DistError> {
        self.claim_tag(kind)?;
        let tag = tag_of(kind);
        self.migrations.write().insert(tag, restore);
        self.migration_kinds.write().insert(type_id, tag);
        Ok(tag)
    }

    /// The migration kind registered for processes of type `type_id`.
    pub(crate) fn migration_kind(&self, type_id: std::any::TypeId) -> Option<u64> {
        self.migration_kinds.read().get(&type_id).copied()
    }

    /// Restores a process of kind `kind` here from `payload`.
    pub(crate) fn restore(&self, kind: u64, payload: &MigratePayload) -> Result<u64, String> {
        let migrations = self.migrations.read();
        let restore = migrations
            .get(&kind)
            .ok_or_else(|| "this node accepts no migrations of that kind".to_owned())?;
        let local = restore(payload)?;
        bump(&self.counts.migrated_in);
        Ok(local)
    }

    /// The export of local process `local`.
    pub(crate) fn export_of(&self, local: u64) -> Option<Arc<Export>> {
        self.exports.read().get(&local).cloned()
    }

    /// Starts holding the frames for local process `local`; `false` if it is already moving.
    pub(crate) fn begin_moving(&self, local: u64) -> bool {
        let begun = self.moves.lock().begin(local);
        if begun {
            self.any_moves.store(true, Relaxed);
        }
        begun
    }

    /// Takes what moves with local process `local`: its remote watchers and its names.
    pub(crate) fn take_moving_parts(&self, local: u64) -> (Vec<Theirs>, Vec<String>) {
        let watchers = self.watches.lock().ended(local);
        let names = self
            .tokens
            .lock()
            .get(&local)
            .map(|regs| regs.iter().map(|(name, _, _)| name.clone()).collect())
            .unwrap_or_default();
        (watchers, names)
    }

    /// Adopts the remote watchers of a process that moved here as `local`.
    pub(crate) fn adopt_watchers(&self, local: u64, watchers: &[(u128, u64, bool)]) {
        let mut watches = self.watches.lock();
        for &(node, mref, link) in watchers {
            let node = NodeId::from_u128(node);
            watches.add_theirs(local, Theirs { node, mref, link });
        }
    }

    /// Local process `local` runs as `to` now: its held frames and later ones are
    /// redirected, its watchers told, its names here withdrawn (the new node registers them).
    pub(crate) fn finish_moving(self: &Arc<Self>, local: u64, to: Pid, watchers: Vec<Theirs>) {
        self.exports.write().remove(&local);
        loop {
            let held = self.moves.lock().finish(local, to);
            let Some(held) = held else { break };
            for frame in held {
                self.redirect(frame.from, &frame.header, &frame.payload, to);
            }
        }
        // Fences that waited for these frames to come back may pass now.
        let waiting: Vec<NodeId> = self.fences.lock().iter().map(|f| f.0).collect();
        for peer in waiting {
            let taken = self.inbound.lock().get(&peer).map_or(0, |i| i.taken);
            self.fences_passed(peer, taken);
        }
        for w in watchers {
            let header = Header::Moved {
                mref: w.mref,
                node: to.node().as_u128(),
                local: to.local(),
            };
            self.send_control(w.node, wire::encode_raw(self.id, &header, &[]));
        }
        let names = self.tokens.lock().remove(&local).unwrap_or_default();
        self.forget_names(names);
        if to.node() != self.id {
            bump(&self.counts.migrated_out);
        }
        self.announce_move(Pid::new(self.id, local), to);
    }

    /// Local process `local` did not move and does not run any more (it ended before it could
    /// be handed over, or could not be restored): the frames held for it go back to their
    /// senders as for an ended process.
    pub(crate) fn abort_moving(self: &Arc<Self>, local: u64) {
        let held = self.moves.lock().abort(local);
        for frame in held {
            let Some(back) = frame.header.given_back(BounceReason::Terminated) else {
                continue;
            };
            bump(&self.counts.bounced);
            self.bounce(frame.from, &back, &frame.payload);
        }
    }

    /// Tells this node's event listeners that `from` moved to `to`.
    fn announce_move(&self, from: Pid, to: Pid) {
        tracing::info!(%from, %to, "process moved");
        let members = self.members.lock();
        self.publish(members, Some(NodeEvent::Moved { from, to }));
    }

    /// A data frame for a local process that is moving (held) or moved (redirected): `true`
    /// if it was taken care of here.
    fn intercept(self: &Arc<Self>, frame: &Frame<'_>, to: u64) -> bool {
        let moved = {
            let mut moves = self.moves.lock();
            let held = moves.hold(to, || HeldFrame {
                from: frame.from,
                header: frame.header.clone(),
                payload: frame.payload.to_vec(),
            });
            if held {
                return true;
            }
            moves.moved_to(to)
        };
        match moved {
            Some(pid) => {
                self.redirect(frame.from, &frame.header, frame.payload, pid);
                true
            }
            None => false,
        }
    }

    /// Gives a data frame for a process that moved back to its sender, with where it went.
    fn redirect(self: &Arc<Self>, from: NodeId, header: &Header, payload: &[u8], to: Pid) {
        let (node, local) = (to.node().as_u128(), to.local());
        let back = match *header {
            Header::Post {
                to: old,
                tag,
                route,
                principal,
            } => Header::Redirect {
                old,
                tag,
                route,
                principal,
                node,
                local,
            },
            Header::Ask {
                to: old,
                tag,
                req,
                principal,
            } => Header::Reply {
                req,
                outcome: Outcome::Redirected {
                    old,
                    node,
                    local,
                    tag,
                    principal,
                },
            },
            _ => return,
        };
        bump(&self.counts.redirected);
        self.bounce(from, &back, payload);
    }

    /// A message of this node to `(node, old)` came back redirected to `to`.
    fn redirected(self: &Arc<Self>, node: NodeId, old: u64, to: Pid, message: Outgoing) {
        self.any_moves.store(true, Relaxed);
        let what = {
            // No send to `node` is under way while the mark is read (see `Link::gate`); with
            // no link yet, nothing was sent.
            let link = self.links.read().get(&node).cloned();
            let _gate = link.as_ref().map(|link| link.gate.write());
            let what = self.moves.lock().redirected(node, old, to, message);
            match what {
                Redirected::First => Err(link.as_ref().map_or(0, |link| link.enqueued())),
                other => Ok(other),
            }
        };
        let what = match what {
            Err(sent) => {
                let header = Header::Fence { old, sent };
                self.send_control(node, wire::encode_raw(self.id, &header, &[]));
                return;
            }
            Ok(what) => what,
        };
        match what {
            Redirected::First => {}
            Redirected::Buffered => {}
            Redirected::Send(to, (header, payload)) => self.resend(to, header, payload),
        }
    }

    /// A fence from `from`: answered once the first `sent` data frames from it were taken.
    fn on_fence(self: &Arc<Self>, from: NodeId, old: u64, sent: u64) {
        let done = from == self.id || {
            let inbound = self.inbound.lock();
            let taken = inbound.get(&from).map_or(0, |i| i.taken);
            // Frames of the sender held for a process still moving count as taken but have
            // not come back yet: the fence waits for them too (`finish_moving` looks again).
            let done = taken >= sent && !self.moves.lock().holds_from(from);
            if !done {
                // Recorded under the inbound lock, which `taken` holds when it counts: the
                // frame that completes the mark sees this fence.
                self.fences.lock().push((from, old, sent));
            }
            done
        };
        if done {
            let header = Header::FenceDone { old };
            self.send_control(from, wire::encode_raw(self.id, &header, &[]));
        }
    }

    /// Answers the fences of `peer` whose mark `taken` frames reach, unless frames of `peer`
    /// are still held.
    fn fences_passed(self: &Arc<Self>, peer: NodeId, taken: u64) {
        if self.fences.lock().is_empty() || self.moves.lock().holds_from(peer) {
            return;
        }
        let passed: Vec<u64> = {
            let mut fences = self.fences.lock();
            let mut passed = Vec::new();
            fences.retain(|&(from, old, sent)| {
                let done = from == peer && taken >= sent;
                if done {
                    passed.push(old);
                }
                !done
            });
            passed
        };
        for old in passed {
            let header = Header::FenceDone { old };
            self.send_control(peer, wire::encode_raw(self.id, &header, &[]));
        }
    }

    /// A new post or ask to `(node, header.to)`: where it goes if that process moved.
    fn reroute<T: serde::Serialize + ?Sized>(
        self: &Arc<Self>,
        node: NodeId,
        header: &Header,
        payload: &T,
    ) -> Option<Result<(), SendError>> {
        let (Header::Post { to: old, .. } | Header::Ask { to: old, .. }) = *header else {
            return None;
        };
        let mut encoded = None;
        let route = self.moves.lock().route(node, old, || {
            let bytes = postcard::to_stdvec(payload);
            let bytes = match bytes {
                Ok(bytes) => bytes,
                Err(e) => {
                    encoded = Some(e);
                    Vec::new()
                }
            };
            (header.clone(), bytes)
        })?;
        if let Some(error) = encoded {
            return Some(Err(SendError::Encode(error)));
        }
        if let Header::Ask { req, .. } = *header {
            // Registered on the old node's link: it is pending on the new node now.
            if let Some(link) = self.links.read().get(&node) {
                link.end_ask();
            }
            let new_peer = match route {
                Route::To(pid) => pid.node(),
                _ => node,
            };
            if let Some(ask) = self.asks.lock().get_mut(&req) {
                ask.peer = new_peer;
            }
        }
        Some(match route {
            Route::Buffered => Ok(()),
            Route::Full => {
                bump(&self.counts.refused);
                Err(SendError::Full)
            }
            Route::To(pid) => {
                let retargeted = retarget(header, pid.local());
                let Some(link) = self.link_for(pid.node()) else {
                    return Some(Err(SendError::Down));
                };
                if let (Header::Ask { .. }, Some(link)) = (&retargeted, &link) {
                    if !link.begin_ask() {
                        bump(&self.counts.refused);
                        return Some(Err(SendError::Full));
                    }
                }
                let result = self.try_send_data(link.as_deref(), pid.node(), &retargeted, payload);
                match result {
                    Ok(()) => bump(&self.counts.sent),
                    Err(_) => bump(&self.counts.refused),
                }
                result
            }
        })
    }

    /// The way to `node`: `Some(None)` for this node itself (frames are handled here),
    /// `Some(link)` for a peer, `None` when the peer cannot be reached.
    fn link_for(&self, node: NodeId) -> Option<Option<Arc<Link>>> {
        match node == self.id {
            true => Some(None),
            false => self.link_to(node).map(Some),
        }
    }

    /// Sends again, to `to`, a message that came back redirected (or waited for a fence).
    fn resend(self: &Arc<Self>, to: Pid, header: Header, payload: Vec<u8>) {
        let header = retarget(&header, to.local());
        let Some(link) = self.link_for(to.node()) else {
            return self.undeliverable(header, &payload, BounceReason::Terminated);
        };
        if let (Header::Ask { .. }, Some(link)) = (&header, &link) {
            if !link.begin_ask() {
                return self.undeliverable(header, &payload, BounceReason::Rejected);
            }
        }
        let sent = match &link {
            None => {
                self.on_frame(&wire::encode_raw(self.id, &header, &payload));
                Ok(())
            }
            Some(link) => link
                .take_credit()
                .map_err(|_| BounceReason::Rejected)
                .and_then(|()| {
                    link.send_data(wire::encode_raw(self.id, &header, &payload))
                        .map_err(|_| {
                            link.return_credit(&self.counts);
                            BounceReason::Rejected
                        })
                }),
        };
        match sent {
            Ok(()) => {
                bump(&self.counts.sent);
                bump(&self.counts.resent);
            }
            Err(reason) => {
                if let (Header::Ask { .. }, Some(link)) = (&header, &link) {
                    link.end_ask();
                }
                self.undeliverable(header, &payload, reason)
            }
        }
    }

    /// A message of this node that cannot be sent where its process went: a post goes to its
    /// bounce handler, an ask ends given back.
    fn undeliverable(&self, header: Header, payload: &[u8], reason: BounceReason) {
        bump(&self.counts.returned);
        match header {
            Header::Post { route, .. } => {
                let route = route.and_then(|id| self.routes.read().get(&id).cloned());
                if !route.is_some_and(|route| route(reason, payload)) {
                    bump(&self.counts.returned_unrouted);
                    tracing::warn!(%reason, "a redirected message could not be sent and its sender set no bounce handler");
                }
            }
            Header::Ask { req, .. } => {
                if let Some(ask) = self.asks.lock().remove(&req) {
                    ask.slot.complete(AskEnd::Bounced(reason, payload.to_vec()));
                }
            }
            _ => {}
        }
    }

    /// A process moving here: restore it, answer its new local id.
    fn on_migrate(self: &Arc<Self>, from: NodeId, req: u64, kind: u64, payload: &[u8]) {
        let restored = match wire::decode_payload::<MigratePayload>(payload) {
            Err(_) => Err("the migration payload did not decode".to_owned()),
            Ok(payload) => self.restore(kind, &payload),
        };
        let (outcome, body) = match restored {
            Ok(local) => (
                Outcome::Answered,
                postcard::to_stdvec(&local).unwrap_or_default(),
            ),
            Err(why) => (Outcome::Failed, why.into_bytes()),
        };
        match outcome {
            Outcome::Answered => bump(&self.counts.delivered),
            _ => bump(&self.counts.bounced),
        }
        let header = Header::Reply { req, outcome };
        self.send_control(from, wire::encode_raw(self.id, &header, &body));
    }

    // ----- receiving -----

    /// Handles one frame from the network (or from this node, for a pid of its own).
    /// Total: never panics and never blocks, whatever the bytes.
    pub(crate) fn on_frame(self: &Arc<Self>, bytes: &[u8]) {
        let frame = match wire::decode(bytes, self.max_frame) {
            Ok(frame) => frame,
            Err(error) => return self.refuse(error),
        };
        if frame.from != self.id && !self.up.read().contains(&frame.from) {
            let state = self.members.lock().membership.state(frame.from);
            if state == Some(MemberState::Quarantined) {
                return self.refuse_quarantined(&frame);
            }
            bump(&self.counts.from_unknown);
            tracing::debug!(from = %frame.from, "refused a frame from a node that is not Up");
            return;
        }
        match frame.header {
            Header::Post { to, .. } | Header::Ask { to, .. }
                if self.any_moves.load(Relaxed) && self.intercept(&frame, to) =>
            {
                bump(&self.counts.received);
                self.taken(frame.from);
            }
            Header::Post {
                to,
                tag,
                route,
                principal,
            } => {
                bump(&self.counts.received);
                let principal = principal.map(|p| self.principal(p));
                let delivery = self.deliver(to, tag, frame.payload, principal.as_ref(), None);
                // Refused by a process that closed for a hand-over after this frame passed the
                // check for moves: held with the others.
                if delivery == Delivery::Refused(BounceReason::Terminated)
                    && self.any_moves.load(Relaxed)
                    && self.intercept(&frame, to)
                {
                    self.taken(frame.from);
                    return;
                }
                if let Delivery::Refused(reason) = delivery {
                    let header = Header::Bounce { tag, route, reason };
                    self.bounce(frame.from, &header, frame.payload);
                }
                self.taken(frame.from);
            }
            Header::Ask {
                to,
                tag,
                req,
                principal,
            } => {
                let principal = principal.map(|p| self.principal(p));
                bump(&self.counts.received);
                let replier = self.replier(frame.from, req);
                let delivery =
                    self.deliver(to, tag, frame.payload, principal.as_ref(), Some(replier));
                if let Delivery::Refused(reason) = delivery {
                    let header = Header::Reply {
                        req,
                        outcome: Outcome::Bounced(reason),
                    };
                    self.send_control(
                        frame.from,
                        wire::encode_raw(self.id, &header, frame.payload),
                    );
                }
                self.taken(frame.from);
            }
            Header::Ack { received } => {
                if let Some(link) = self.links.read().get(&frame.from) {
                    link.on_ack(received);
                }
            }
            Header::Bounce { route, reason, .. } => self.returned(&frame, route, reason),
            Header::Monitor { target, mref, link } => {
                self.on_monitor(frame.from, target, mref, link)
            }
            Header::Demonitor { mref } => {
                self.watches.lock().remove_theirs(frame.from, mref);
            }
            Header::Down { mref, ref reason } => self.end_mine(mref, reason.clone()),
            Header::Exit { mref, ref reason } => self.on_exit(frame.from, mref, reason.clone()),
            Header::Spawn {
                req,
                factory,
                principal,
            } => {
                bump(&self.counts.received);
                self.on_spawn(frame.from, req, factory, principal, frame.payload);
                self.taken(frame.from);
            }
            Header::Migrate { req, kind } => {
                bump(&self.counts.received);
                self.on_migrate(frame.from, req, kind, frame.payload);
                self.taken(frame.from);
            }
            Header::Redirect {
                old,
                tag,
                route,
                principal,
                node,
                local,
            } => {
                let to = Pid::from_wire(node, local);
                let header = Header::Post {
                    to: local,
                    tag,
                    route,
                    principal,
                };
                self.redirected(frame.from, old, to, (header, frame.payload.to_vec()));
            }
            Header::Fence { old, sent } => self.on_fence(frame.from, old, sent),
            Header::FenceDone { old } => loop {
                let batch = self.moves.lock().next_batch(frame.from, old);
                let Some((to, batch)) = batch else { break };
                for (header, payload) in batch {
                    self.resend(to, header, payload);
                }
            },
            Header::Moved { mref, node, local } => {
                let to = Pid::from_wire(node, local);
                let from = self.watches.lock().retarget(mref, to);
                if let Some(from) = from {
                    self.announce_move(from, to);
                }
            }
            Header::Reply {
                req,
                outcome:
                    Outcome::Redirected {
                        old,
                        node,
                        local,
                        tag,
                        principal,
                    },
            } => {
                let to = Pid::from_wire(node, local);
                // The ask leaves the old node: its slot there is released, and it is pending
                // on the new node from now on.
                let moved = {
                    let mut asks = self.asks.lock();
                    asks.get_mut(&req)
                        .map(|ask| std::mem::replace(&mut ask.peer, to.node()))
                };
                if let Some(old_peer) = moved {
                    if let Some(link) = self.links.read().get(&old_peer) {
                        link.end_ask();
                    }
                    let header = Header::Ask {
                        to: local,
                        tag,
                        req,
                        principal,
                    };
                    self.redirected(frame.from, old, to, (header, frame.payload.to_vec()));
                }
            }
            Header::Reply { req, outcome } => {
                let Some(ask) = self.asks.lock().remove(&req) else {
                    // Timed out (or never ours): nobody waits.
                    return;
                };
                let end = match outcome {
                    Outcome::Answered => AskEnd::Answered(frame.payload.to_vec()),
                    Outcome::Bounced(reason) => {
                        bump(&self.counts.returned);
                        if reason == BounceReason::Quarantined {
                            self.unusable(frame.from, DownReason::QuarantinedBy);
                        }
                        AskEnd::Bounced(reason, frame.payload.to_vec())
                    }
                    Outcome::NoReply => AskEnd::NoReply,
                    Outcome::Failed => {
                        AskEnd::Failed(String::from_utf8_lossy(frame.payload).into_owned())
                    }
                    // Matched above.
                    Outcome::Redirected { .. } => AskEnd::NoReply,
                };
                self.end_ask_slot(&ask, end);
            }
        }
    }

    fn refuse(self: &Arc<Self>, error: WireError) {
        match error {
            WireError::Version { from, version } => {
                bump(&self.counts.foreign_version);
                if !self.up.read().contains(&from) {
                    return;
                }
                tracing::warn!(%from, version, ours = wire::VERSION, "frame in a version this node does not speak; sent a version notice");
                self.send_control(from, wire::notice(self.id));
            }
            WireError::Notice { from, version } => {
                bump(&self.counts.foreign_version);
                if !self.up.read().contains(&from) {
                    return;
                }
                tracing::error!(%from, version, ours = wire::VERSION, "peer cannot read this node's frames; it is Down for this node");
                self.unusable(from, DownReason::Incompatible);
            }
            other => {
                bump(&self.counts.malformed);
                tracing::debug!(error = %other, "refused a malformed frame");
            }
        }
    }

    /// A frame from a node this one quarantined: data is bounced as `Quarantined` (best
    /// effort, straight from this thread with congestion control `Drop`, since the node has
    /// no link), so the sender learns it must restart; the rest is dropped.
    fn refuse_quarantined(&self, frame: &Frame<'_>) {
        bump(&self.counts.from_quarantined);
        let Some(header) = frame.header.given_back(BounceReason::Quarantined) else {
            return;
        };
        let bytes = wire::encode_raw(self.id, &header, frame.payload);
        let sent = self
            .session
            .put(self.mailbox_key(frame.from), bytes)
            .congestion_control(CongestionControl::Drop)
            .wait();
        if let Err(error) = sent {
            tracing::debug!(from = %frame.from, %error, "could not bounce a quarantined node's frame");
        }
    }

    /// The principal a frame carries, shared by every message that carries the same one (a
    /// small cache, emptied when it reaches [`PRINCIPAL_CACHE`] entries), so its counters
    /// accumulate and a message does not cost an allocation.
    fn principal(&self, wire: WirePrincipal) -> whirl::Principal {
        let key = (wire.id, wire.priority, wire.class, wire.utility.to_bits());
        let mut cache = self.principals.lock();
        if let Some(p) = cache.get(&key) {
            return p.clone();
        }
        if cache.len() >= PRINCIPAL_CACHE {
            cache.clear();
        }
        let principal = wire.build();
        cache.insert(key, principal.clone());
        principal
    }

    /// Posts (or asks) a received message into the local runtime.
    fn deliver(
        &self,
        to: u64,
        tag: u64,
        payload: &[u8],
        principal: Option<&whirl::Principal>,
        replier: Option<Replier>,
    ) -> Delivery {
        let Some(export) = self.exports.read().get(&to).cloned() else {
            return Delivery::Refused(BounceReason::NoProcess);
        };
        let Some(entry) = export.entries.get(&tag) else {
            return Delivery::Refused(BounceReason::Incompatible);
        };
        let delivery = match (replier, &entry.ask) {
            (None, _) => (entry.post)(payload, principal),
            (Some(replier), Some(ask)) => ask(payload, principal, replier),
            (Some(_), None) => Delivery::Refused(BounceReason::Incompatible),
        };
        match delivery {
            Delivery::Delivered => bump(&self.counts.delivered),
            Delivery::Refused(reason) => {
                bump(&self.counts.bounced);
                if reason == BounceReason::Terminated {
                    self.remove_export(to);
                }
            }
        }
        delivery
    }

    /// Where the end of the ask `req` from `peer` goes.
    fn replier(self: &Arc<Self>, peer: NodeId, req: u64) -> Replier {
        let core = Arc::clone(self);
        Replier::new(move |answer| {
            let (outcome, payload) = match answer {
                Some(bytes) => (Outcome::Answered, bytes),
                None => (Outcome::NoReply, Vec::new()),
            };
            let mut frame = wire::encode_raw(core.id, &Header::Reply { req, outcome }, &payload);
            if frame.len() > core.max_frame {
                tracing::error!(
                    size = frame.len(),
                    limit = core.max_frame,
                    "an answer exceeds the frame limit; the asker is told NoReply"
                );
                let header = Header::Reply {
                    req,
                    outcome: Outcome::NoReply,
                };
                frame = wire::encode_raw(core.id, &header, &[]);
            }
            core.send_control(peer, frame);
        })
    }

    /// A data frame from `peer` was taken: acknowledge now if a batch is complete.
    fn taken(self: &Arc<Self>, peer: NodeId) {
        if peer == self.id {
            return;
        }
        let batch = (self.window as u64 / 8).max(1);
        let (ack, taken) = {
            let mut inbound = self.inbound.lock();
            let entry = inbound.entry(peer).or_default();
            entry.taken += 1;
            let ack = (entry.taken - entry.acked >= batch).then(|| {
                entry.acked = entry.taken;
                entry.taken
            });
            (ack, entry.taken)
        };
        if self.any_moves.load(Relaxed) {
            self.fences_passed(peer, taken);
        }
        if let Some(received) = ack {
            self.send_ack(peer, received);
        }
    }

    /// Acknowledges `received` frames to `peer`; a full lane drops it (a later one covers
    /// it: acknowledgements are cumulative).
    fn send_ack(self: &Arc<Self>, peer: NodeId, received: u64) {
        let _ = self.queue_control(
            peer,
            wire::encode_raw(self.id, &Header::Ack { received }, &[]),
        );
    }

    /// A bounce came back for a message posted from here.
    fn returned(self: &Arc<Self>, frame: &Frame<'_>, route: Option<u64>, reason: BounceReason) {
        bump(&self.counts.returned);
        if reason == BounceReason::Quarantined {
            // The peer saw this node Down: it is gone for this incarnation.
            self.unusable(frame.from, DownReason::QuarantinedBy);
        }
        // Cloned out of the table: the handler may drop the last address using the route,
        // which removes it from the table.
        let route = route.and_then(|id| self.routes.read().get(&id).cloned());
        let routed = route.is_some_and(|route| route(reason, frame.payload));
        if !routed {
            bump(&self.counts.returned_unrouted);
            tracing::warn!(from = %frame.from, %reason, "a message came back and its sender set no bounce handler; counted as a dead letter");
        }
    }

    // ----- time -----

    /// The ticker's work: flush due acknowledgements, time asks out.
    fn tick(self: &Arc<Self>, now: Instant) {
        let due: Vec<(NodeId, u64)> = {
            let mut inbound = self.inbound.lock();
            inbound
                .iter_mut()
                .filter(|(_, i)| i.taken > i.acked)
                .map(|(peer, i)| {
                    i.acked = i.taken;
                    (*peer, i.taken)
                })
                .collect()
        };
        for (peer, received) in due {
            self.send_ack(peer, received);
        }
        self.end_asks(|ask| ask.deadline <= now, || AskEnd::Timeout);
    }

    /// Starts the ticker thread; it stops when the core is closed or dropped.
    pub(crate) fn start_ticker(self: &Arc<Self>) -> std::io::Result<JoinHandle<()>> {
        let core: Weak<Core> = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("whirl-dist-ticker".to_owned())
            .spawn(move || loop {
                std::thread::sleep(ACK_INTERVAL);
                let Some(core) = core.upgrade() else { return };
                if core.closing.load(Relaxed) {
                    return;
                }
                core.tick(Instant::now());
            })
    }

    /// Closes every link (their unacknowledged frames are in doubt), ends every ask, stops
    /// the ticker at its next tick. Posts from now on return Terminated.
    pub(crate) fn close(&self) {
        self.closing.store(true, Relaxed);
        let links: Vec<Arc<Link>> = self.links.write().drain().map(|(_, l)| l).collect();
        for link in &links {
            self.counts.in_doubt.fetch_add(link.close(), Relaxed);
        }
        self.end_asks(|_| true, || AskEnd::NodeDown);
        for link in &links {
            link.join();
        }
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

/// `header`, a post or an ask, addressed to local id `to` instead.
fn retarget(header: &Header, to: u64) -> Header {
    match *header {
        Header::Post {
            tag,
            route,
            principal,
            ..
        } => Header::Post {
            to,
            tag,
            route,
            principal,
        },
        Header::Ask {
            tag,
            req,
            principal,
            ..
        } => Header::Ask {
            to,
            tag,
            req,
            principal,
        },
        ref other => other.clone(),
    }
}
