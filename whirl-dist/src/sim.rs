//! A simulated network: a [`Transport`] whose every delivery is a step a simulator chooses,
//! so that a whole cluster runs in one process, one event at a time, and a seed replays it.
//!
//! [`SimNet`] holds the network; each node gets an endpoint ([`SimNet::endpoint`]) and runs on
//! it as on Zenoh. Nothing is delivered until the simulator calls [`SimNet::deliver`]: a put,
//! a token declared or withdrawn, only queue events. Each ordered pair of endpoints (and each
//! endpoint to itself) is a **link** with one queue per priority; [`SimNet::choices`] lists
//! what may be delivered next, and the simulator picks one (with its seeded random numbers).
//! What the choices allow is what Zenoh allows, and no more:
//!
//! * on one link, events of one priority arrive in the order they were sent;
//! * an event may overtake one of a lower priority queued before it, never one of a higher
//!   priority queued before it (hellos and tokens, then control, then data);
//! * links are independent: anything on one may arrive before anything on another.
//!
//! Time: the nodes read their deadlines (asks, probes, migrations) on the network's clock,
//! which moves only when the simulator [advances](SimNet::advance) it, so a timeout fires at
//! the same step of every replay.
//!
//! Faults: [`partition`](SimNet::partition) cuts the links between two endpoints (what was
//! queued on them is lost, and each side sees the other's tokens go, as when Zenoh's lease
//! expires), [`heal`](SimNet::heal) restores them (tokens are announced again),
//! [`kill`](SimNet::kill) cuts an endpoint from everyone for good. Callbacks run on the thread
//! that calls `deliver`, outside the network's lock.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::transport::{
    Class, Declared, OnPayload, OnToken, Presence, Publisher, Transport, TransportError,
};

/// One endpoint of a [`SimNet`]: a node's place on the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EndpointId(pub usize);

impl fmt::Display for EndpointId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "e{}", self.0)
    }
}

/// Priorities of a link's queues, highest first.
const PRIORITIES: usize = 3;

fn priority(class: Class) -> usize {
    match class {
        Class::Hello => 0,
        Class::Control => 1,
        Class::Data | Class::Droppable => 2,
    }
}

/// What travels on a link.
enum Event {
    /// A payload for one subscriber.
    Payload {
        sub: u64,
        key: String,
        bytes: Vec<u8>,
    },
    /// A token of the sending endpoint appeared or went.
    Token {
        token: u64,
        key: String,
        presence: Presence,
    },
    /// The link was cut: the receiver loses the sender's tokens. Queued last on a cut link.
    Lost,
}

struct Queued {
    seq: u64,
    event: Event,
}

#[derive(Default)]
struct LinkQueues {
    queues: [VecDeque<Queued>; PRIORITIES],
}

struct Endpoint {
    alive: bool,
    /// Tokens of any endpoint (this one too) delivered here and not gone: id → (owner, key).
    known: BTreeMap<u64, (usize, String)>,
}

struct Subscription {
    ep: usize,
    key: String,
    on_payload: Arc<OnPayload>,
}

struct Watcher {
    ep: usize,
    prefix: String,
    on_token: Arc<OnToken>,
}

#[derive(Default)]
struct Net {
    seq: u64,
    next_id: u64,
    endpoints: Vec<Endpoint>,
    subs: BTreeMap<u64, Subscription>,
    watchers: BTreeMap<u64, Watcher>,
    /// Declared tokens: id → (owner, key).
    tokens: BTreeMap<u64, (usize, String)>,
    links: BTreeMap<(usize, usize), LinkQueues>,
    /// Cut pairs, smaller endpoint first.
    cut: BTreeSet<(usize, usize)>,
    /// Node ids handed out, from the seed.
    ids: Option<fastrand::Rng>,
    delivered: u64,
}

/// A delivery the simulator may make next: the head of one queue of one link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Choice {
    /// The sending endpoint.
    pub from: EndpointId,
    /// The receiving endpoint.
    pub to: EndpointId,
    priority: usize,
}

impl Choice {
    /// The queue of its link it delivers from: 0 for hellos and tokens, 1 for control frames,
    /// 2 for data (a higher priority may overtake a lower one).
    pub fn priority(&self) -> usize {
        self.priority
    }
}

/// What [`SimNet::deliver`] delivered, for a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivered {
    /// A payload on a key, with its length.
    Payload {
        /// The key it was put on.
        key: String,
        /// Its length in bytes.
        len: usize,
        /// What it is, if it is a frame of this crate's protocol: its sender and header.
        frame: Option<String>,
        /// The frame's payload (the message a post or a redirect carries), if it is one.
        body: Vec<u8>,
    },
    /// A token appeared or went.
    Token {
        /// The token's key.
        key: String,
        /// Whether it is present now.
        present: bool,
    },
    /// The receiver lost the sender's tokens (the link was cut).
    Lost,
    /// Nothing: the subscriber or watcher was gone by then.
    Nothing,
}

impl Net {
    fn connected(&self, a: usize, b: usize) -> bool {
        a == b
            || (self.endpoints[a].alive
                && self.endpoints[b].alive
                && !self.cut.contains(&(a.min(b), a.max(b))))
    }

    fn push(&mut self, from: usize, to: usize, class_priority: usize, event: Event) {
        self.seq += 1;
        let seq = self.seq;
        self.links.entry((from, to)).or_default().queues[class_priority]
            .push_back(Queued { seq, event });
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Sends a token change of `owner` to every endpoint it reaches (itself included).
    fn announce(&mut self, owner: usize, token: u64, key: &str, presence: Presence) {
        for to in 0..self.endpoints.len() {
            if self.endpoints[owner].alive && self.connected(owner, to) {
                let event = Event::Token {
                    token,
                    key: key.to_owned(),
                    presence,
                };
                self.push(owner, to, 0, event);
            }
        }
    }

    fn choices(&self) -> Vec<Choice> {
        let mut out = Vec::new();
        for (&(from, to), link) in &self.links {
            let heads: Vec<Option<u64>> = link
                .queues
                .iter()
                .map(|q| q.front().map(|queued| queued.seq))
                .collect();
            for (priority, head) in heads.iter().enumerate() {
                let Some(seq) = head else { continue };
                // Not if a higher priority has something queued before it.
                let blocked = heads[..priority]
                    .iter()
                    .flatten()
                    .any(|higher| higher < seq);
                if !blocked {
                    out.push(Choice {
                        from: EndpointId(from),
                        to: EndpointId(to),
                        priority,
                    });
                }
            }
        }
        out
    }

    /// Cuts the links between `a` and `b` (both directions): drops what they hold and queues
    /// `Lost` on each, so each side loses the other's tokens.
    fn cut_links(&mut self, a: usize, b: usize) {
        for (from, to) in [(a, b), (b, a)] {
            let link = self.links.entry((from, to)).or_default();
            for queue in &mut link.queues {
                queue.clear();
            }
            if self.endpoints[to].alive {
                self.push(from, to, 0, Event::Lost);
            }
        }
    }
}

/// The simulated network (see the [module documentation](self)).
#[derive(Clone)]
pub struct SimNet {
    net: Arc<Mutex<Net>>,
    /// The nodes' clock: it moves only when the simulator advances it.
    clock: whirl::time::ManualClock,
}

impl fmt::Debug for SimNet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let net = self.net.lock();
        f.debug_struct("SimNet")
            .field("endpoints", &net.endpoints.len())
            .field("delivered", &net.delivered)
            .finish_non_exhaustive()
    }
}

impl SimNet {
    /// An empty network. Node ids handed to plaintext nodes come from `seed`.
    pub fn new(seed: u64) -> SimNet {
        SimNet {
            net: Arc::new(Mutex::new(Net {
                ids: Some(fastrand::Rng::with_seed(seed ^ 0x1d5)),
                ..Net::default()
            })),
            clock: whirl::time::ManualClock::new(),
        }
    }

    /// Moves the nodes' clock forward (deadlines of asks, probes and migrations are read on
    /// it): time passes only when the simulator says.
    pub fn advance(&self, by: std::time::Duration) {
        self.clock.advance(by);
    }

    /// Now, on the nodes' clock (for [`tick_node`]).
    pub fn now(&self) -> std::time::Instant {
        use whirl::time::Clock;
        self.clock.now()
    }

    /// A new endpoint, connected to every live one.
    pub fn endpoint(&self) -> Arc<SimTransport> {
        let mut net = self.net.lock();
        let ep = net.endpoints.len();
        net.endpoints.push(Endpoint {
            alive: true,
            known: BTreeMap::new(),
        });
        // The tokens already declared reach the newcomer.
        let tokens: Vec<(u64, usize, String)> = net
            .tokens
            .iter()
            .map(|(id, (owner, key))| (*id, *owner, key.clone()))
            .collect();
        for (token, owner, key) in tokens {
            if net.connected(owner, ep) {
                let event = Event::Token {
                    token,
                    key,
                    presence: Presence::Present,
                };
                net.push(owner, ep, 0, event);
            }
        }
        Arc::new(SimTransport {
            net: Arc::clone(&self.net),
            ep,
            clock: self.clock.clone(),
        })
    }

    /// What may be delivered next, in a fixed order (so a seeded pick replays).
    pub fn choices(&self) -> Vec<Choice> {
        self.net.lock().choices()
    }

    /// Events queued and not delivered.
    pub fn pending(&self) -> usize {
        let net = self.net.lock();
        net.links
            .values()
            .flat_map(|link| link.queues.iter())
            .map(VecDeque::len)
            .sum()
    }

    /// Events delivered so far.
    pub fn delivered(&self) -> u64 {
        self.net.lock().delivered
    }

    /// Delivers the head of `choice`'s queue, running its callbacks on this thread.
    pub fn deliver(&self, choice: Choice) -> Delivered {
        let mut net = self.net.lock();
        let Some(link) = net.links.get_mut(&(choice.from.0, choice.to.0)) else {
            return Delivered::Nothing;
        };
        let Some(queued) = link.queues[choice.priority].pop_front() else {
            return Delivered::Nothing;
        };
        net.delivered += 1;
        let to = choice.to.0;
        match queued.event {
            Event::Payload { sub, key, bytes } => {
                let Some(on_payload) = net.subs.get(&sub).map(|s| Arc::clone(&s.on_payload)) else {
                    return Delivered::Nothing;
                };
                drop(net);
                let decoded = crate::wire::decode(&bytes, usize::MAX).ok();
                let frame = decoded
                    .as_ref()
                    .map(|frame| format!("from {} {:?}", frame.from, frame.header));
                let body = decoded.map_or_else(Vec::new, |frame| frame.payload.to_vec());
                on_payload(&bytes);
                Delivered::Payload {
                    key,
                    len: bytes.len(),
                    frame,
                    body,
                }
            }
            Event::Token {
                token,
                key,
                presence,
            } => {
                let known = &mut net.endpoints[to].known;
                match presence {
                    Presence::Present => {
                        known.insert(token, (choice.from.0, key.clone()));
                    }
                    Presence::Gone => {
                        known.remove(&token);
                    }
                }
                let calls = watchers_of(&net, to, &key);
                drop(net);
                for on_token in calls {
                    on_token(&key, presence);
                }
                Delivered::Token {
                    key,
                    present: presence == Presence::Present,
                }
            }
            Event::Lost => {
                let from = choice.from.0;
                let known = &mut net.endpoints[to].known;
                let lost: Vec<(u64, String)> = known
                    .iter()
                    .filter(|(_, (owner, _))| *owner == from)
                    .map(|(id, (_, key))| (*id, key.clone()))
                    .collect();
                for (id, _) in &lost {
                    known.remove(id);
                }
                let calls: Vec<(String, Vec<Arc<OnToken>>)> = lost
                    .into_iter()
                    .map(|(_, key)| {
                        let watchers = watchers_of(&net, to, &key);
                        (key, watchers)
                    })
                    .collect();
                drop(net);
                for (key, watchers) in calls {
                    for on_token in watchers {
                        on_token(&key, Presence::Gone);
                    }
                }
                Delivered::Lost
            }
        }
    }

    /// Cuts `a` and `b` apart (see the [module documentation](self)).
    pub fn partition(&self, a: EndpointId, b: EndpointId) {
        let mut net = self.net.lock();
        let pair = (a.0.min(b.0), a.0.max(b.0));
        if a == b || !net.cut.insert(pair) {
            return;
        }
        net.cut_links(a.0, b.0);
    }

    /// Joins `a` and `b` again: each side's tokens are announced to the other.
    pub fn heal(&self, a: EndpointId, b: EndpointId) {
        let mut net = self.net.lock();
        let pair = (a.0.min(b.0), a.0.max(b.0));
        if !net.cut.remove(&pair) || !net.connected(a.0, b.0) {
            return;
        }
        let tokens: Vec<(u64, usize, String)> = net
            .tokens
            .iter()
            .filter(|(_, (owner, _))| *owner == a.0 || *owner == b.0)
            .map(|(id, (owner, key))| (*id, *owner, key.clone()))
            .collect();
        for (token, owner, key) in tokens {
            let to = if owner == a.0 { b.0 } else { a.0 };
            let event = Event::Token {
                token,
                key,
                presence: Presence::Present,
            };
            net.push(owner, to, 0, event);
        }
    }

    /// The tokens declared now by live endpoints whose key starts with `prefix`, with their
    /// declarer: what a simulator checks "one holder per name" against.
    pub fn tokens(&self, prefix: &str) -> Vec<(EndpointId, String)> {
        let net = self.net.lock();
        net.tokens
            .values()
            .filter(|(owner, key)| net.endpoints[*owner].alive && key.starts_with(prefix))
            .map(|(owner, key)| (EndpointId(*owner), key.clone()))
            .collect()
    }

    /// Whether `a` and `b` can reach each other now.
    pub fn connected(&self, a: EndpointId, b: EndpointId) -> bool {
        self.net.lock().connected(a.0, b.0)
    }

    /// Kills endpoint `a`: cut from everyone for good, its declarations gone, nothing it puts
    /// later goes anywhere.
    pub fn kill(&self, a: EndpointId) {
        let mut net = self.net.lock();
        if !net.endpoints.get(a.0).is_some_and(|e| e.alive) {
            return;
        }
        let peers: Vec<usize> = (0..net.endpoints.len())
            .filter(|&b| b != a.0 && net.connected(a.0, b))
            .collect();
        // Dead first, so nothing is queued for it; its peers are each told `Lost`.
        net.endpoints[a.0].alive = false;
        for b in peers {
            net.cut_links(a.0, b);
        }
        if let Some(own) = net.links.get_mut(&(a.0, a.0)) {
            for queue in &mut own.queues {
                queue.clear();
            }
        }
        net.subs.retain(|_, s| s.ep != a.0);
        net.watchers.retain(|_, w| w.ep != a.0);
        net.tokens.retain(|_, (owner, _)| *owner != a.0);
    }
}

/// The watchers of endpoint `ep` whose prefix `key` has.
fn watchers_of(net: &Net, ep: usize, key: &str) -> Vec<Arc<OnToken>> {
    net.watchers
        .values()
        .filter(|w| w.ep == ep && key.starts_with(&w.prefix))
        .map(|w| Arc::clone(&w.on_token))
        .collect()
}

/// A node's endpoint of a [`SimNet`], as its [`Transport`].
pub struct SimTransport {
    net: Arc<Mutex<Net>>,
    ep: usize,
    clock: whirl::time::ManualClock,
}

impl SimTransport {
    /// This endpoint's id.
    pub fn id(&self) -> EndpointId {
        EndpointId(self.ep)
    }
}

/// What a [`SimTransport`] declared: a subscription, a watcher or a token.
enum SimDeclared {
    Sub(u64),
    Watcher(u64),
    Token(u64),
}

struct SimDeclaration {
    net: Arc<Mutex<Net>>,
    what: Option<SimDeclared>,
}

impl SimDeclaration {
    fn undeclare_now(&mut self) {
        let Some(what) = self.what.take() else { return };
        let mut net = self.net.lock();
        match what {
            SimDeclared::Sub(id) => {
                net.subs.remove(&id);
            }
            SimDeclared::Watcher(id) => {
                net.watchers.remove(&id);
            }
            SimDeclared::Token(id) => {
                if let Some((owner, key)) = net.tokens.remove(&id) {
                    net.announce(owner, id, &key, Presence::Gone);
                }
            }
        }
    }
}

impl Drop for SimDeclaration {
    fn drop(&mut self) {
        self.undeclare_now();
    }
}

impl Declared for SimDeclaration {
    fn undeclare(mut self: Box<Self>) -> Result<(), TransportError> {
        self.undeclare_now();
        Ok(())
    }
}

struct SimPublisher {
    net: Arc<Mutex<Net>>,
    ep: usize,
    key: String,
    class: Class,
}

impl Publisher for SimPublisher {
    fn put(&self, payload: Vec<u8>) -> Result<(), TransportError> {
        put(&self.net, self.ep, &self.key, payload, self.class);
        Ok(())
    }
}

/// Queues `payload` for every subscriber of `key` that `from` reaches.
fn put(net: &Mutex<Net>, from: usize, key: &str, payload: Vec<u8>, class: Class) {
    let mut net = net.lock();
    if !net.endpoints[from].alive {
        return;
    }
    let targets: Vec<(u64, usize)> = net
        .subs
        .iter()
        .filter(|(_, s)| s.key == key)
        .map(|(id, s)| (*id, s.ep))
        .collect();
    for (sub, to) in targets {
        if net.connected(from, to) {
            let event = Event::Payload {
                sub,
                key: key.to_owned(),
                bytes: payload.clone(),
            };
            net.push(from, to, priority(class), event);
        }
    }
}

impl Transport for SimTransport {
    /// The simulation's clock ([`SimNet::advance`]).
    fn clock(&self) -> Arc<dyn whirl::time::Clock> {
        Arc::new(self.clock.clone())
    }

    fn publisher(&self, key: &str, class: Class) -> Result<Box<dyn Publisher>, TransportError> {
        Ok(Box::new(SimPublisher {
            net: Arc::clone(&self.net),
            ep: self.ep,
            key: key.to_owned(),
            class,
        }))
    }

    fn put(&self, key: &str, payload: Vec<u8>, class: Class) -> Result<(), TransportError> {
        put(&self.net, self.ep, key, payload, class);
        Ok(())
    }

    fn subscribe(
        &self,
        key: &str,
        on_payload: OnPayload,
    ) -> Result<Box<dyn Declared>, TransportError> {
        let mut net = self.net.lock();
        let id = net.id();
        net.subs.insert(
            id,
            Subscription {
                ep: self.ep,
                key: key.to_owned(),
                on_payload: Arc::new(on_payload),
            },
        );
        Ok(Box::new(SimDeclaration {
            net: Arc::clone(&self.net),
            what: Some(SimDeclared::Sub(id)),
        }))
    }

    fn declare_token(&self, key: &str) -> Result<Box<dyn Declared>, TransportError> {
        let mut net = self.net.lock();
        let id = net.id();
        net.tokens.insert(id, (self.ep, key.to_owned()));
        net.announce(self.ep, id, key, Presence::Present);
        Ok(Box::new(SimDeclaration {
            net: Arc::clone(&self.net),
            what: Some(SimDeclared::Token(id)),
        }))
    }

    fn watch_tokens(
        &self,
        prefix: &str,
        on_token: OnToken,
    ) -> Result<Box<dyn Declared>, TransportError> {
        // The history is delivered before this returns (and before any change), as Zenoh
        // tells a liveliness subscriber of the tokens its session knows when it is declared.
        let on_token = Arc::new(on_token);
        let mut net = self.net.lock();
        let id = net.id();
        net.watchers.insert(
            id,
            Watcher {
                ep: self.ep,
                prefix: prefix.to_owned(),
                on_token: Arc::clone(&on_token),
            },
        );
        let present: Vec<String> = net.endpoints[self.ep]
            .known
            .values()
            .filter(|(_, key)| key.starts_with(prefix))
            .map(|(_, key)| key.clone())
            .collect();
        drop(net);
        for key in present {
            on_token(&key, Presence::Present);
        }
        Ok(Box::new(SimDeclaration {
            net: Arc::clone(&self.net),
            what: Some(SimDeclared::Watcher(id)),
        }))
    }

    /// The simulation's clock: one millisecond per event delivered so far.
    fn wall_clock_ms(&self) -> u64 {
        self.net.lock().delivered
    }

    fn plaintext_node_id(&self) -> Option<u128> {
        let mut net = self.net.lock();
        net.ids
            .as_mut()
            .map(|rng| (u128::from(rng.u64(..)) << 64) | u128::from(rng.u64(..)))
    }

    fn close(&self) -> Result<(), TransportError> {
        SimNet {
            net: Arc::clone(&self.net),
            clock: self.clock.clone(),
        }
        .kill(EndpointId(self.ep));
        Ok(())
    }
}

/// Starts a node on a simulated endpoint. It has no threads of its own: what its writer and
/// ticker threads would do happens when the simulator calls [`run_node`] and [`tick_node`],
/// and transport callbacks run when it calls [`SimNet::deliver`].
pub fn start_node(
    config: crate::NodeConfig,
    endpoint: &Arc<SimTransport>,
) -> Result<crate::Node, crate::DistError> {
    let (_, pems) = config.to_zenoh()?;
    let transport: Arc<dyn Transport> = Arc::clone(endpoint) as Arc<dyn Transport>;
    crate::Node::start_with(config, pems, transport, crate::core::Drive::Stepped)
}

/// What [`run_node`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeWork {
    /// Pieces of deferred work run (registering a moved process's names).
    pub deferred: usize,
    /// Links whose frames were published.
    pub flushed: usize,
}

impl NodeWork {
    /// Whether nothing was done.
    pub fn is_idle(&self) -> bool {
        self.deferred == 0 && self.flushed == 0
    }
}

/// Runs a stepped node's background work once: its deferred work, then its writers (every
/// frame its links hold is put on the network).
pub fn run_node(node: &crate::Node) -> NodeWork {
    NodeWork {
        deferred: node.core.run_deferred(),
        flushed: node.core.flush(),
    }
}

/// A stepped node's periodic tick at `now`: acknowledgements due, asks past their deadline.
pub fn tick_node(node: &crate::Node, now: std::time::Instant) {
    node.core.tick(now);
}

/// A future a simulator drives: it advances only when [polled](Polled::poll), between the
/// simulator's steps, and says its outcome once it has one.
pub struct Polled<T> {
    future: std::pin::Pin<Box<dyn std::future::Future<Output = T>>>,
}

impl<T> fmt::Debug for Polled<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Polled")
    }
}

impl<T> Polled<T> {
    /// Advances it as far as it can go now; its outcome once it has one.
    pub fn poll(&mut self) -> Option<T> {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match self.future.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(outcome) => Some(outcome),
            std::task::Poll::Pending => None,
        }
    }
}

/// A migration a simulator drives: [`Node::migrate`](crate::Node::migrate) as a state
/// machine that advances only when polled.
pub type Migration = Polled<MigrationResult>;

/// How a simulated migration ended: the new pid, or why not.
pub type MigrationResult = Result<crate::Pid, crate::MigrateError>;

/// Starts moving `addr` from `node` to node `to`, as [`Node::migrate`](crate::Node::migrate)
/// does; nothing happens until the migration is [polled](Polled::poll).
pub fn migrate<P>(
    node: &crate::Node,
    addr: &whirl::Addr<P>,
    to: crate::NodeId,
    timeout: std::time::Duration,
) -> Migration
where
    P: whirl::Process + serde::Serialize + serde::de::DeserializeOwned,
{
    Polled {
        future: Box::pin(crate::migrate::migration(
            Arc::clone(&node.core),
            addr.clone(),
            to,
            timeout,
        )),
    }
}

/// A remote spawn a simulator drives: [`Node::spawn_on`](crate::Node::spawn_on) as a state
/// machine that advances only when polled.
pub type Spawn = Polled<SpawnResult>;

/// How a simulated spawn ended: the new pid, or why not.
pub type SpawnResult = Result<crate::Pid, crate::SpawnRemoteError>;

/// Sends a spawn request from `node` to node `to`'s factory `factory`, as
/// [`Node::spawn_on`](crate::Node::spawn_on) does (the request is sent now, or refused now);
/// its answer is awaited when the spawn is [polled](Polled::poll).
pub fn spawn_on<A: serde::Serialize + ?Sized>(
    node: &crate::Node,
    to: crate::NodeId,
    factory: &str,
    args: &A,
    timeout: std::time::Duration,
) -> Result<Spawn, crate::SpawnRemoteError> {
    let future = crate::spawn::start(&node.core, to, factory, args, None, timeout)?;
    Ok(Polled {
        future: Box::pin(future),
    })
}

/// A stepped node's protocol state as text, for a simulator's report of a violation: per
/// peer, the frames taken and those held for a moving process; the fences not answered yet;
/// the moves table (processes moving and moved, redirects and what waits in them).
pub fn describe_node(node: &crate::Node) -> String {
    node.core.describe_state()
}
