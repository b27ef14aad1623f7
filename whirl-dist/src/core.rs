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
//! `window / 4` frames, and otherwise from the ticker within [`ACK_INTERVAL`]. A bounce is
//! queued before the acknowledgement that covers its frame.

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use parking_lot::{Mutex, RwLock};
use zenoh::qos::CongestionControl;
use zenoh::sample::{Sample, SampleKind};
use zenoh::{Session, Wait};

use crate::ask::{AskEnd, AskSlot};
use crate::counts::{bump, Counters};
use crate::dispatch::{Delivery, Export, Replier};
use crate::link::Link;
use crate::membership::{parse_alive_key, Membership, Observation};
use crate::remote::tag_of;
use crate::wire::{self, BounceReason, Frame, Header, Outcome, WireError};
use crate::{DistCounts, DistError, MemberState, NodeEvent, NodeId};

/// How long a received frame waits, at most, for its acknowledgement.
pub(crate) const ACK_INTERVAL: Duration = Duration::from_millis(5);

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
    links: RwLock<HashMap<NodeId, Arc<Link>>>,
    exports: RwLock<HashMap<u64, Arc<Export>>>,
    tags: Mutex<HashMap<u64, &'static str>>,
    asks: Mutex<HashMap<u64, PendingAsk>>,
    next_req: AtomicU64,
    routes: RwLock<HashMap<u64, RouteFn>>,
    next_route: AtomicU64,
    inbound: Mutex<HashMap<NodeId, Inbound>>,
    counts: Counters,
    closing: AtomicBool,
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
            links: RwLock::new(HashMap::new()),
            exports: RwLock::new(HashMap::new()),
            tags: Mutex::new(HashMap::new()),
            asks: Mutex::new(HashMap::new()),
            next_req: AtomicU64::new(1),
            routes: RwLock::new(HashMap::new()),
            next_route: AtomicU64::new(1),
            inbound: Mutex::new(HashMap::new()),
            counts: Counters::default(),
            closing: AtomicBool::new(false),
        }
    }

    pub(crate) fn id(&self) -> NodeId {
        self.id
    }

    pub(crate) fn max_frame(&self) -> usize {
        self.max_frame
    }

    pub(crate) fn counts(&self) -> &Counters {
        &self.counts
    }

    pub(crate) fn read_counts(&self) -> DistCounts {
        self.counts.read()
    }

    pub(crate) fn count_sent(&self) {
        bump(&self.counts.sent);
    }

    pub(crate) fn count_refused(&self) {
        bump(&self.counts.refused);
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

    /// Sends a control frame to `peer` (or handles it here, for this node).
    fn send_control(self: &Arc<Self>, peer: NodeId, frame: Vec<u8>) {
        if peer == self.id {
            self.on_frame(&frame);
        } else if let Some(link) = self.link_to(peer) {
            link.send_control(frame, &self.counts);
        }
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
        if let Some(event) = event {
            members
                .listeners
                .retain(|listener| listener.send(event).is_ok());
        }
        drop(members);
        if matches!(observation, Observation::Gone(_)) {
            self.peer_down(node);
        }
        match event {
            Some(NodeEvent::Up(node)) => tracing::debug!(%node, "node up"),
            Some(NodeEvent::Down { node, reason }) => {
                tracing::info!(%node, ?reason, "node down")
            }
            Some(NodeEvent::ResurrectionRefused(node)) => {
                tracing::warn!(%node, "quarantined node reappeared; refused")
            }
            None => {}
        }
    }

    /// `peer` is Down for good: close its link (what it had unacknowledged is in doubt), end
    /// the asks waiting on it, forget its inbound count.
    fn peer_down(&self, peer: NodeId) {
        if let Some(link) = self.links.write().remove(&peer) {
            let unacknowledged = link.close();
            self.counts.in_doubt.fetch_add(unacknowledged, Relaxed);
        }
        // A link opened later (a post racing with this) finds the peer quarantined.
        self.fail_asks(|ask| ask.peer == peer);
        self.inbound.lock().remove(&peer);
    }

    fn fail_asks(&self, matching: impl Fn(&PendingAsk) -> bool) {
        let failed: Vec<PendingAsk> = {
            let mut asks = self.asks.lock();
            let ids: Vec<u64> = asks
                .iter()
                .filter(|(_, ask)| matching(ask))
                .map(|(id, _)| *id)
                .collect();
            ids.iter().filter_map(|id| asks.remove(id)).collect()
        };
        for ask in failed {
            self.end_ask_slot(&ask, AskEnd::NodeDown);
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

    pub(crate) fn install_export(&self, local: u64, export: Export) {
        self.exports.write().insert(local, Arc::new(export));
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

    // ----- receiving -----

    /// Handles one frame from the network (or from this node, for a pid of its own).
    /// Total: never panics and never blocks, whatever the bytes.
    pub(crate) fn on_frame(self: &Arc<Self>, bytes: &[u8]) {
        let frame = match wire::decode(bytes, self.max_frame) {
            Ok(frame) => frame,
            Err(error) => return self.refuse(error),
        };
        if frame.from != self.id
            && self.members.lock().membership.state(frame.from) == Some(MemberState::Quarantined)
        {
            return self.refuse_quarantined(&frame);
        }
        match frame.header {
            Header::Post { to, tag, route, .. } => {
                bump(&self.counts.received);
                let delivery = self.deliver(to, tag, frame.payload, None);
                if let Delivery::Refused(reason) = delivery {
                    let header = Header::Bounce { tag, route, reason };
                    self.send_control(
                        frame.from,
                        wire::encode_raw(self.id, &header, frame.payload),
                    );
                }
                self.taken(frame.from);
            }
            Header::Ask { to, tag, req, .. } => {
                bump(&self.counts.received);
                let replier = self.replier(frame.from, req);
                let delivery = self.deliver(to, tag, frame.payload, Some(replier));
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
            Header::Reply { req, outcome } => {
                let Some(ask) = self.asks.lock().remove(&req) else {
                    // Timed out (or never ours): nobody waits.
                    return;
                };
                let end = match outcome {
                    Outcome::Answered => AskEnd::Answered(frame.payload.to_vec()),
                    Outcome::Bounced(reason) => {
                        bump(&self.counts.returned);
                        AskEnd::Bounced(reason, frame.payload.to_vec())
                    }
                    Outcome::NoReply => AskEnd::NoReply,
                };
                self.end_ask_slot(&ask, end);
            }
        }
    }

    fn refuse(self: &Arc<Self>, error: WireError) {
        match error {
            WireError::Version { from, version } => {
                bump(&self.counts.foreign_version);
                tracing::warn!(%from, version, ours = wire::VERSION, "frame in a version this node does not speak; sent a version notice");
                self.send_control(from, wire::notice(self.id));
            }
            WireError::Notice { from, version } => {
                bump(&self.counts.foreign_version);
                tracing::error!(%from, version, ours = wire::VERSION, "peer cannot read this node's frames; its link is closed");
                self.peer_down(from);
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
        let header = match frame.header {
            Header::Post { tag, route, .. } => Header::Bounce {
                tag,
                route,
                reason: BounceReason::Quarantined,
            },
            Header::Ask { req, .. } => Header::Reply {
                req,
                outcome: Outcome::Bounced(BounceReason::Quarantined),
            },
            _ => return,
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

    /// Posts (or asks) a received message into the local runtime.
    fn deliver(&self, to: u64, tag: u64, payload: &[u8], replier: Option<Replier>) -> Delivery {
        let Some(export) = self.exports.read().get(&to).cloned() else {
            return Delivery::Refused(BounceReason::NoProcess);
        };
        let Some(entry) = export.entries.get(&tag) else {
            return Delivery::Refused(BounceReason::Incompatible);
        };
        let delivery = match (replier, &entry.ask) {
            (None, _) => (entry.post)(payload),
            (Some(replier), Some(ask)) => ask(payload, replier),
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
        let batch = (self.window as u64 / 4).max(1);
        let ack = {
            let mut inbound = self.inbound.lock();
            let entry = inbound.entry(peer).or_default();
            entry.taken += 1;
            (entry.taken - entry.acked >= batch).then(|| {
                entry.acked = entry.taken;
                entry.taken
            })
        };
        if let Some(received) = ack {
            self.send_ack(peer, received);
        }
    }

    fn send_ack(&self, peer: NodeId, received: u64) {
        if let Some(link) = self.link_to(peer) {
            link.send_ack(wire::encode_raw(self.id, &Header::Ack { received }, &[]));
        }
    }

    /// A bounce came back for a message posted from here.
    fn returned(&self, frame: &Frame<'_>, route: Option<u64>, reason: BounceReason) {
        bump(&self.counts.returned);
        if reason == BounceReason::Quarantined {
            // The peer saw this node Down: it is gone for this incarnation.
            self.peer_down(frame.from);
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
    fn tick(&self, now: Instant) {
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
        let expired: Vec<PendingAsk> = {
            let mut asks = self.asks.lock();
            let ids: Vec<u64> = asks
                .iter()
                .filter(|(_, ask)| ask.deadline <= now)
                .map(|(id, _)| *id)
                .collect();
            ids.iter().filter_map(|id| asks.remove(id)).collect()
        };
        for ask in expired {
            self.end_ask_slot(&ask, AskEnd::Timeout);
        }
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
        self.fail_asks(|_| true);
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
