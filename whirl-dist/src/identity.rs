//! A TLS node's identity and the state of its handshakes with its peers: its credentials and
//! nonce (which make its id), the half of each handshake it started, the peers whose token it
//! saw, and the keys it shares with each peer that proved itself. The protocol that drives
//! this state is `core/handshake.rs`; the cryptography is [`crate::auth`].

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;

use crate::auth::{Credentials, Handshake, PairKeys};
use crate::registry::Entry as RegEntry;
use crate::NodeId;

/// How many registrations of not yet proven nodes a node keeps waiting.
pub(crate) const PARKED_REGISTRATIONS: usize = 4096;

/// How many Down peers' keys a node keeps.
pub(crate) const RETIRED_KEYS: usize = 1024;

/// A TLS node's identity and the handshakes with its peers.
pub(crate) struct Auth {
    pub(crate) creds: Credentials,
    nonce: [u8; 16],
    pub(crate) cluster: String,
    pub(crate) max_peers: usize,
    pub(crate) state: Mutex<Handshakes>,
    pub(crate) keys: RwLock<FxHashMap<NodeId, Arc<PairKeys>>>,
    pub(crate) names: RwLock<FxHashMap<NodeId, Arc<str>>>,
    /// Each peer's certificate (DER), which verifies its registrations.
    pub(crate) certs: RwLock<FxHashMap<NodeId, Arc<[u8]>>>,
    /// Registrations naming nodes whose hello has not verified yet, oldest first (at most
    /// [`PARKED_REGISTRATIONS`]): checked once the node proves itself.
    pub(crate) parked: Mutex<VecDeque<(String, RegEntry, Vec<u8>)>>,
    /// The credit window each peer granted in its hello.
    pub(crate) windows: RwLock<FxHashMap<NodeId, u32>>,
    /// The credit window this node grants, sent in its hellos.
    window: u32,
}

#[derive(Default)]
pub(crate) struct Handshakes {
    /// Our half of each handshake started and not finished.
    pub(crate) pending: FxHashMap<NodeId, (u64, Handshake)>,
    /// Peers whose token is present: Up once their hello verified.
    pub(crate) alive: FxHashMap<NodeId, u64>,
    /// Down peers whose keys are kept, oldest first.
    pub(crate) retired: VecDeque<NodeId>,
    /// Stamps `pending` and `alive` entries in the order they came.
    pub(crate) clock: u64,
}

impl Handshakes {
    /// Records that `peer`'s token is present, forgetting the oldest such record beyond
    /// `limit`: tokens that never come with a hello (a member declaring made-up ids) age out
    /// instead of locking real peers out.
    pub(crate) fn saw_token(&mut self, peer: NodeId, limit: usize) {
        self.clock += 1;
        self.alive.insert(peer, self.clock);
        evict_oldest(&mut self.alive, limit, |stamp| *stamp);
    }
}

/// Removes the entries with the oldest stamps until at most `limit` remain.
fn evict_oldest<V>(map: &mut FxHashMap<NodeId, V>, limit: usize, stamp: impl Fn(&V) -> u64) {
    while map.len() > limit {
        let oldest = map.iter().min_by_key(|(_, v)| stamp(v)).map(|(k, _)| *k);
        match oldest {
            Some(oldest) => map.remove(&oldest),
            None => return,
        };
    }
}

impl Auth {
    /// The identity of a node with `creds`, whose id is `creds.node_id(nonce)`.
    pub(crate) fn new(
        creds: Credentials,
        nonce: [u8; 16],
        cluster: &str,
        max_peers: usize,
        window: usize,
    ) -> Auth {
        let window = u32::try_from(window).unwrap_or(u32::MAX);
        Auth {
            creds,
            nonce,
            cluster: cluster.to_owned(),
            max_peers,
            state: Mutex::new(Handshakes::default()),
            keys: RwLock::new(FxHashMap::default()),
            names: RwLock::new(FxHashMap::default()),
            windows: RwLock::new(FxHashMap::default()),
            certs: RwLock::new(FxHashMap::default()),
            parked: Mutex::new(VecDeque::new()),
            window,
        }
    }

    /// This node's certificate name.
    pub(crate) fn name(&self) -> &str {
        self.creds.name()
    }

    /// The keys shared with `peer`, once its hello verified.
    pub(crate) fn keys(&self, peer: NodeId) -> Option<Arc<PairKeys>> {
        self.keys.read().get(&peer).cloned()
    }

    /// Keeps a registration of a node not yet proven, dropping the oldest beyond
    /// [`PARKED_REGISTRATIONS`].
    pub(crate) fn park(&self, name: String, entry: RegEntry, signature: Vec<u8>) {
        let mut parked = self.parked.lock();
        parked.push_back((name, entry, signature));
        while parked.len() > PARKED_REGISTRATIONS {
            parked.pop_front();
        }
    }

    /// Takes the parked registrations of `node`.
    pub(crate) fn unpark(&self, node: NodeId) -> Vec<(String, RegEntry, Vec<u8>)> {
        let mut parked = self.parked.lock();
        let (theirs, others): (Vec<_>, Vec<_>) =
            parked.drain(..).partition(|(_, e, _)| e.pid.node() == node);
        parked.extend(others);
        theirs
    }

    /// Whether `signature` is `entry`'s node's signature of its registration under `name`:
    /// `None` while that node has not proven itself (no certificate known).
    pub(crate) fn verify_registration(
        &self,
        name: &str,
        entry: RegEntry,
        signature: &[u8],
    ) -> Option<bool> {
        let node = entry.pid.node();
        let cert = self.certs.read().get(&node).cloned()?;
        Some(crate::auth::verify_registration(
            &cert,
            &self.cluster,
            name,
            node.as_u128(),
            entry.pid.local(),
            signature,
        ))
    }

    /// This node's signature of its registration of `entry` under `name`.
    pub(crate) fn sign_registration(
        &self,
        name: &str,
        entry: RegEntry,
    ) -> Result<Vec<u8>, crate::auth::AuthError> {
        self.creds.sign_registration(
            &self.cluster,
            name,
            entry.pid.node().as_u128(),
            entry.pid.local(),
        )
    }

    /// The credit window `peer` granted.
    pub(crate) fn peer_window(&self, peer: NodeId) -> Option<u32> {
        self.windows.read().get(&peer).copied()
    }

    /// The certificate name `peer` proved.
    pub(crate) fn peer_name(&self, peer: NodeId) -> Option<Arc<str>> {
        self.names.read().get(&peer).cloned()
    }

    /// Starts our half of the handshake with `peer` unless it is started or done, and gives
    /// the hello to `send` (called under the handshakes' lock, so the hello is on its way
    /// before anyone can finish the handshake and send the peer a frame under its keys).
    /// `false` if the node has `max_peers` peers already. At most `max_peers` handshakes wait
    /// at once: beyond, the oldest is dropped.
    pub(crate) fn start(
        &self,
        me: NodeId,
        peer: NodeId,
        state: &mut Handshakes,
        send: impl FnOnce(Vec<u8>),
    ) -> bool {
        if state.pending.contains_key(&peer) || self.keys.read().contains_key(&peer) {
            return true;
        }
        let peers = self.keys.read().len().saturating_sub(state.retired.len());
        if peers >= self.max_peers {
            return false;
        }
        match self.creds.hello(
            &self.cluster,
            me.as_u128(),
            self.nonce,
            peer.as_u128(),
            self.window,
        ) {
            Ok((bytes, half)) => {
                // Handshakes that never finish (tokens of made-up ids) make way for new ones,
                // oldest first: a real peer's takes milliseconds.
                state.clock += 1;
                state.pending.insert(peer, (state.clock, half));
                evict_oldest(&mut state.pending, self.max_peers, |(stamp, _)| *stamp);
                send(bytes);
                true
            }
            Err(error) => {
                tracing::error!(%peer, %error, "cannot make a hello");
                false
            }
        }
    }
}
