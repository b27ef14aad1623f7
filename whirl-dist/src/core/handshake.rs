//! Identity on the node: the hello each pair of TLS nodes exchanges before either counts the
//! other Up, and the MAC check every later frame passes.
//!
//! A TLS node's id is a hash of its certificate and a fresh nonce ([`crate::auth`]). When a
//! peer's liveliness token appears, the node sends it a **hello** on the peer's hello key
//! (`whirl/<cluster>/n/<peer-hex>/hello`): the node's certificate chain, its nonce, an
//! ephemeral key for this peer, all signed with the certificate's key. The peer does the same.
//! Each side verifies the other's hello (issued by the cluster CA, signed by the certificate's
//! key, the id is the hash of that certificate and nonce, addressed to this node), derives the
//! pair's keys, and only then counts the peer Up: a token alone proves nothing, since any
//! member can declare one under any key.
//!
//! From then on every frame between the two carries a MAC under the pair's key and a counter
//! per lane ([`crate::auth::PairKeys`]). A frame whose MAC does not verify, replayed, or
//! claiming this node as its sender, is dropped and counted
//! ([`DistCounts::unauthenticated`](crate::DistCounts::unauthenticated)). A member therefore
//! cannot speak as another one: it cannot post in its name, bounce as `Quarantined` in its
//! name, or answer its asks.
//!
//! Costs are bounded: at most `max_peers` peers with keys, `max_peers` handshakes waiting and
//! four times as many tokens waiting for a hello (beyond, the oldest waiting one is dropped, so
//! a member declaring made-up ids cannot lock real peers out), and the keys of Down peers are
//! kept (to verify and answer their late frames) for the last [`RETIRED_KEYS`] only.
//!
//! **Order.** A node publishes its hello (at Zenoh's highest data priority) before it can hold
//! the pair's keys, and it sends frames only under those keys; the peer's Zenoh delivers a
//! link's samples in order within a priority and higher priorities first, so the peer has the
//! hello before the first frame it must verify.

use std::sync::Arc;

use crate::transport::Class;

use super::Core;
use crate::auth::Lane;
use crate::counts::bump;
use crate::identity::{Auth, RETIRED_KEYS};
use crate::membership::Observation;
use crate::{MemberState, NodeId};

impl Core {
    /// The hello key of `node`.
    pub(crate) fn hello_key(&self, node: NodeId) -> String {
        format!("{}n/{node}/hello", self.root)
    }

    /// A liveliness observation on a TLS node: a token makes the peer Up only once its hello
    /// verified; until then it starts the handshake. Returns the observation to apply to the
    /// membership table now, if any.
    pub(super) fn authenticate(&self, observation: Observation) -> Option<Observation> {
        let Some(auth) = &self.auth else {
            return Some(observation);
        };
        let mut state = auth.state.lock();
        match observation {
            Observation::Alive(peer) if peer == self.id => None,
            Observation::Alive(peer) => {
                if auth.keys.read().contains_key(&peer) {
                    return Some(observation);
                }
                if self.members.lock().membership.state(peer) == Some(MemberState::Quarantined) {
                    return Some(observation);
                }
                state.saw_token(peer, 4 * auth.max_peers);
                if !auth.start(self.id, peer, &mut state, |hello| {
                    self.send_hello(peer, hello)
                }) {
                    tracing::warn!(%peer, max = auth.max_peers, "no room for another peer; not shaking hands");
                }
                None
            }
            Observation::Gone(peer) => {
                state.alive.remove(&peer);
                state.pending.remove(&peer);
                if auth.keys.read().contains_key(&peer) && !state.retired.contains(&peer) {
                    state.retired.push_back(peer);
                    while state.retired.len() > RETIRED_KEYS {
                        if let Some(old) = state.retired.pop_front() {
                            auth.keys.write().remove(&old);
                            auth.names.write().remove(&old);
                            auth.windows.write().remove(&old);
                            auth.certs.write().remove(&old);
                        }
                    }
                }
                Some(observation)
            }
        }
    }

    /// A hello arrived on this node's hello key. Runs on a Zenoh thread.
    pub(crate) fn on_hello(self: &Arc<Self>, bytes: &[u8]) {
        let Some(auth) = &self.auth else { return };
        let hello = match auth
            .creds
            .verify_hello(&auth.cluster, self.id.as_u128(), bytes)
        {
            Ok(hello) => hello,
            Err(error) => {
                bump(&self.counts.unauthenticated);
                tracing::warn!(%error, "refused a hello");
                return;
            }
        };
        let peer = NodeId::from_u128(hello.from);
        if self.members.lock().membership.state(peer) == Some(MemberState::Quarantined) {
            return;
        }
        let alive = {
            let mut state = auth.state.lock();
            if auth.keys.read().contains_key(&peer) {
                return; // A repeat.
            }
            let send = |hello| self.send_hello(peer, hello);
            if !state.pending.contains_key(&peer) && !auth.start(self.id, peer, &mut state, send) {
                tracing::warn!(%peer, max = auth.max_peers, "no room for another peer; refused its hello");
                return;
            }
            let Some((_, half)) = state.pending.remove(&peer) else {
                return;
            };
            let keys = match half.finish(&hello) {
                Ok(keys) => keys,
                Err(error) => {
                    bump(&self.counts.unauthenticated);
                    tracing::warn!(%peer, %error, "a handshake failed");
                    return;
                }
            };
            // Keys last: a link opened once they are in finds the peer's name and window.
            auth.names
                .write()
                .insert(peer, Arc::from(hello.name.as_str()));
            auth.windows.write().insert(peer, hello.window);
            auth.certs
                .write()
                .insert(peer, Arc::from(hello.leaf.as_slice()));
            auth.keys.write().insert(peer, Arc::new(keys));
            state.alive.remove(&peer).is_some()
        };
        tracing::debug!(%peer, name = hello.name, "peer authenticated");
        for (name, entry, signature) in auth.unpark(peer) {
            self.signed_registration(name, entry, &signature);
        }
        if alive {
            self.observe(Observation::Alive(peer));
        }
    }

    /// Publishes our hello to `peer`. It returns once Zenoh has queued it, ahead of any frame
    /// this node sends the peer afterwards: the hello goes at a higher priority than data and
    /// control frames, and a frame under the pair's keys is sent only once this node has the
    /// peer's hello too, which it finishes after this returns. So the peer always has our
    /// hello before our first frame.
    fn send_hello(&self, peer: NodeId, hello: Vec<u8>) {
        let sent = self
            .transport
            .put(&self.hello_key(peer), hello, Class::Hello);
        if let Err(error) = sent {
            tracing::warn!(%peer, %error, "could not send a hello");
        }
    }

    /// A frame from the network. On a TLS node its MAC is checked with the keys of the node it
    /// names as its sender (and stripped) before anything else reads it; a plaintext node
    /// reads it as it is. Runs on a Zenoh thread.
    pub(crate) fn on_network_frame(self: &Arc<Self>, bytes: &[u8]) {
        let Some(auth) = &self.auth else {
            return self.on_frame(bytes);
        };
        let Some(from) = crate::wire::sender(bytes) else {
            bump(&self.counts.malformed);
            return;
        };
        let keys = (from != self.id).then(|| auth.keys(from)).flatten();
        let Some(keys) = keys else {
            bump(&self.counts.from_unknown);
            tracing::debug!(%from, "refused a frame from a node without a verified hello");
            return;
        };
        match keys.open(bytes) {
            Ok(body) => self.on_frame(body),
            Err(error) => {
                bump(&self.counts.unauthenticated);
                tracing::warn!(%from, %error, "refused a frame that does not authenticate");
            }
        }
    }

    /// Seals a frame for `peer` on `lane`: on a TLS node, appends its MAC. `false` if there
    /// are no keys for the peer (no frame may go to it).
    pub(super) fn seal(&self, peer: NodeId, lane: Lane, frame: &mut Vec<u8>) -> bool {
        let Some(auth) = &self.auth else { return true };
        match auth.keys(peer) {
            Some(keys) => {
                keys.seal(lane, frame);
                true
            }
            None => false,
        }
    }

    /// Whether frames may be sent to `peer`: it is Up here (on a TLS node: its hello
    /// verified). A frame to a node never seen Up would go nowhere and never be counted in
    /// doubt, since that node can never be seen Down either: such a post is refused at once.
    pub(super) fn may_send_to(&self, peer: NodeId) -> bool {
        match &self.auth {
            Some(auth) => auth.keys.read().contains_key(&peer),
            None => peer == self.id || self.up.read().contains(&peer),
        }
    }

    /// The certificate name `peer` proved (`None` on a plaintext node).
    pub(crate) fn peer_name(&self, peer: NodeId) -> Option<Arc<str>> {
        self.auth.as_ref().and_then(|auth| auth.peer_name(peer))
    }

    /// This node's certificate name (`None` on a plaintext node).
    pub(crate) fn own_name(&self) -> Option<&str> {
        self.auth.as_ref().map(Auth::name)
    }
}
