//! How a router picks the member a message goes to: the [`Strategy`] a router is built with,
//! the [`Members`] view a custom strategy sees, and the hash ring behind consistent hashing.
//!
//! Each strategy is a pure choice over the member list: round robin (a shared counter),
//! random (a per-thread xorshift generator seeded from the OS's randomness through std's
//! `RandomState`), broadcast (every member gets a clone), consistent hashing (a ring with
//! virtual nodes: a key stays on its member while the member count stays, and when a member
//! is added or removed only the keys of the ring's arcs that change hands, about 1/n of them,
//! move), and custom (a function of the message and the members).
//!
//! A strategy is data, like a child spec: its code is a `fn` pointer, and whatever else it
//! reads is `Isolated` and shared immutably (`Strategy::custom_with`). A router travels between
//! processes and its strategy runs inside whichever process posts, so a closure capturing a
//! `Arc<Mutex<_>>` would let every poster write the same memory; a `fn` pointer captures
//! nothing, and `Isolated + Sync` state cannot be written through a shared reference.

use std::cell::Cell;
use std::collections::hash_map::{DefaultHasher, RandomState};
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::isolation::Isolated;

/// Virtual nodes per member on the hash ring, unless
/// [`Strategy::consistent_hash_with`] says otherwise: enough that each member owns close to
/// 1/n of the keys.
pub const DEFAULT_VIRTUAL_NODES: usize = 128;

type KeyFn<M> = Box<dyn Fn(&M) -> u64 + Send + Sync>;
type ChooseFn<M> = Box<dyn Fn(&M, &Members<'_>) -> usize + Send + Sync>;

/// How a [`Router`](super::Router) picks the member for each message.
///
/// ```
/// use whirl::routing::Strategy;
/// # #[derive(Clone)] struct Job { customer: u64 }
/// let by_customer = Strategy::consistent_hash(|job: &Job| job.customer);
/// let everyone = Strategy::<Job>::broadcast();
/// let first_live = Strategy::custom(|_job: &Job, members| {
///     (0..members.len()).find(|&i| !members.is_restarting(i)).unwrap_or(0)
/// });
/// // State the choice reads: `Isolated` data, shared immutably by every poster.
/// let by_tier = Strategy::custom_with(vec![0usize, 0, 1], |tiers, job: &Job, members| {
///     tiers[(job.customer % 3) as usize] % members.len()
/// });
/// # let _ = (by_customer, everyone, first_live, by_tier);
/// ```
///
/// The functions are `fn` pointers, so a closure that captures is refused: pass what it would
/// capture as the state of [`custom_with`](Strategy::custom_with).
///
/// ```compile_fail
/// use std::sync::{Arc, Mutex};
/// use whirl::routing::Strategy;
/// # struct Job { customer: u64 }
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let _ = Strategy::custom(move |job: &Job, _| { // error: expected fn pointer, found closure
///     seen.lock().unwrap().push(job.customer);
///     0
/// });
/// ```
pub struct Strategy<M> {
    pub(super) kind: Kind<M>,
}

pub(super) enum Kind<M> {
    RoundRobin,
    Random,
    Broadcast(fn(&M) -> M),
    ConsistentHash { key: KeyFn<M>, virtual_nodes: usize },
    Custom(ChooseFn<M>),
}

impl<M> Strategy<M> {
    /// Each message to the next member in turn. A message whose member is restarting goes to
    /// the next live one instead (or waits in the member's buffer if none is live).
    pub fn round_robin() -> Self {
        Strategy {
            kind: Kind::RoundRobin,
        }
    }

    /// Each message to a member picked uniformly at random. A message whose member is
    /// restarting goes to the next live one instead, as for round robin.
    pub fn random() -> Self {
        Strategy { kind: Kind::Random }
    }

    /// Messages with equal keys to the same member, in the order they were posted, on a hash
    /// ring with [`DEFAULT_VIRTUAL_NODES`] virtual nodes per member. A message whose member is
    /// restarting waits in that member's buffer, so the order per key holds across the
    /// restart, and across a shrink (the retiring member's queue is routed on before anything
    /// newer). Resizing moves only the keys on the arcs of the ring that change hands (about
    /// 1/n of them). Growing hands those keys to the new member at once: messages of a moving
    /// key still queued on its old member may be handled after newer ones on the new member.
    pub fn consistent_hash<K: Hash + 'static>(key: fn(&M) -> K) -> Self
    where
        M: 'static,
    {
        Self::consistent_hash_with(DEFAULT_VIRTUAL_NODES, key)
    }

    /// [`consistent_hash`](Self::consistent_hash) with `virtual_nodes` points per member on
    /// the ring (at least 1): more points, a more even spread, a larger ring.
    pub fn consistent_hash_with<K: Hash + 'static>(virtual_nodes: usize, key: fn(&M) -> K) -> Self
    where
        M: 'static,
    {
        Strategy {
            kind: Kind::ConsistentHash {
                key: Box::new(move |msg| {
                    let mut hasher = DefaultHasher::new();
                    key(msg).hash(&mut hasher);
                    hasher.finish()
                }),
                virtual_nodes: virtual_nodes.max(1),
            },
        }
    }

    /// The member `choose` returns an index of (taken modulo the member count). It sees the
    /// message and the [`Members`]; a message whose member is restarting waits in that
    /// member's buffer.
    pub fn custom(choose: fn(&M, &Members<'_>) -> usize) -> Self
    where
        M: 'static,
    {
        Strategy {
            kind: Kind::Custom(Box::new(choose)),
        }
    }

    /// [`custom`](Self::custom) with state the choice reads: a table of weights, a list of
    /// tiers. `state` is [`Isolated`] and `Sync`, so every process posting through the router
    /// reads it and none can change it.
    pub fn custom_with<S: Isolated + Sync>(
        state: S,
        choose: fn(&S, &M, &Members<'_>) -> usize,
    ) -> Self
    where
        M: 'static,
    {
        Strategy {
            kind: Kind::Custom(Box::new(move |msg, members| choose(&state, msg, members))),
        }
    }

    /// Whether a message whose member is not live may go to another member instead of
    /// waiting for the member's replacement.
    pub(super) fn may_move(&self) -> bool {
        matches!(self.kind, Kind::RoundRobin | Kind::Random)
    }

    /// The virtual nodes per member, for a consistent-hash strategy.
    pub(super) fn virtual_nodes(&self) -> Option<usize> {
        match &self.kind {
            Kind::ConsistentHash { virtual_nodes, .. } => Some(*virtual_nodes),
            _ => None,
        }
    }

    /// The strategy's name, for `Debug` and statistics.
    pub fn name(&self) -> &'static str {
        match self.kind {
            Kind::RoundRobin => "round-robin",
            Kind::Random => "random",
            Kind::Broadcast(_) => "broadcast",
            Kind::ConsistentHash { .. } => "consistent-hash",
            Kind::Custom(_) => "custom",
        }
    }
}

impl<M: Clone> Strategy<M> {
    /// Every message to every member, each getting its own clone.
    pub fn broadcast() -> Self {
        Strategy {
            kind: Kind::Broadcast(M::clone),
        }
    }
}

impl<M> fmt::Debug for Strategy<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a [`Strategy::custom`] function sees of the members: how many there are, and which are
/// restarting (dead, with their replacement not yet started: a message chosen for one waits
/// in its buffer).
pub struct Members<'a> {
    pub(super) live: &'a [Arc<AtomicBool>],
}

impl Members<'_> {
    /// The number of members; indexes run from 0 to `len() - 1`.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Whether there are no members.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// Whether member `index` is restarting (or out of range). A hint: it may change at once.
    pub fn is_restarting(&self, index: usize) -> bool {
        self.live
            .get(index)
            .is_none_or(|live| !live.load(Ordering::Relaxed))
    }
}

/// The hash ring: `virtual_nodes` points per member index, sorted by position.
#[derive(Default)]
pub(super) struct Ring {
    points: Vec<(u64, usize)>,
}

impl Ring {
    /// The ring of members `0..members`.
    pub(super) fn new(members: usize, virtual_nodes: usize) -> Self {
        let mut points = Vec::with_capacity(members * virtual_nodes);
        for member in 0..members {
            for replica in 0..virtual_nodes {
                let mut hasher = DefaultHasher::new();
                (member as u64, replica as u64).hash(&mut hasher);
                points.push((hasher.finish(), member));
            }
        }
        points.sort_unstable();
        Ring { points }
    }

    /// The member owning `hash`: the first point at or after it, wrapping around.
    pub(super) fn owner(&self, hash: u64) -> usize {
        if self.points.is_empty() {
            return 0;
        }
        let at = self.points.partition_point(|&(point, _)| point < hash);
        self.points[at % self.points.len()].1
    }
}

thread_local! {
    static RANDOM: Cell<u64> = const { Cell::new(0) };
}

/// A uniform index below `n` (n > 0), from a per-thread xorshift64* generator seeded from
/// std's `RandomState` (itself seeded from the operating system's randomness).
pub(super) fn random_below(n: usize) -> usize {
    RANDOM.with(|state| {
        let mut x = state.get();
        if x == 0 {
            x = RandomState::new().hash_one(std::thread::current().id()) | 1;
        }
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
        // Multiply-shift: unbiased enough for n far below 2^32.
        ((u128::from(r) * n as u128) >> 64) as usize
    })
}

/// Picks the member for `msg` among `live.len()` members (not for broadcast).
pub(super) fn choose<M>(
    strategy: &Strategy<M>,
    msg: &M,
    live: &[Arc<AtomicBool>],
    ring: &Ring,
    next: &std::sync::atomic::AtomicUsize,
) -> usize {
    let n = live.len();
    match &strategy.kind {
        Kind::RoundRobin => next.fetch_add(1, Ordering::Relaxed) % n,
        Kind::Random => random_below(n),
        Kind::ConsistentHash { key, .. } => ring.owner(key(msg)),
        Kind::Custom(choose) => choose(msg, &Members { live }) % n,
        Kind::Broadcast(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_moves_about_one_in_n_keys_when_a_member_is_added() {
        let before = Ring::new(8, DEFAULT_VIRTUAL_NODES);
        let after = Ring::new(9, DEFAULT_VIRTUAL_NODES);
        let keys = 20_000u64;
        let hash = |k: u64| {
            let mut h = DefaultHasher::new();
            k.hash(&mut h);
            h.finish()
        };
        let moved = (0..keys)
            .filter(|&k| before.owner(hash(k)) != after.owner(hash(k)))
            .count();
        // Ideal: 1/9 of the keys, all to the new member.
        assert!(
            moved > keys as usize / 20 && moved < keys as usize / 5,
            "{moved}"
        );
        for k in 0..keys {
            let (a, b) = (before.owner(hash(k)), after.owner(hash(k)));
            assert!(a == b || b == 8, "a key moved between old members");
        }
    }

    #[test]
    fn random_indexes_cover_the_range() {
        let mut seen = [0u32; 5];
        for _ in 0..5_000 {
            seen[random_below(5)] += 1;
        }
        assert!(seen.iter().all(|&c| c > 500), "{seen:?}");
    }
}
