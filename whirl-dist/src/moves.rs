//! The tables of migration, with no I/O: on the node a process leaves, the frames held for it
//! while it moves and where it went; on a node that sent to it, where its messages go now and
//! what waits for the fence.
//!
//! The protocol (see `migrate.rs` for the moving node's side):
//! 1. While a process moves, frames addressed to it are **held** in arrival order. A held
//!    frame counts as taken but is not acknowledged until it has been sent back (only this
//!    node has it; if this node dies, its sender counts it in doubt).
//! 2. Once it runs elsewhere, each held frame, and every later one, is sent back to its sender
//!    as a **redirect** carrying the message and the new pid; and every peer is told where it
//!    went (`Relocated`, `core/relocation.rs`).
//! 3. A sender that gets its first redirect for a pid, or the notice, keeps every message to
//!    that pid, and to the new one, in a **buffer**, and sends a **fence** to the old node
//!    carrying how many data frames it has handed to its link to that node (taken while no
//!    send to that node is under way: sends hold the link's gate for reading, a fence for
//!    writing). The old node answers (`FenceDone`, on the same lane as the redirects) once it
//!    has taken that many frames from the sender and sent back every one of them it held, so
//!    every earlier message of the sender has come back by then. The sender then sends the
//!    buffer in order (what came back, then what it sent since) to the new pid, batch after
//!    batch until none is left, and from then on sends there directly.
//! 4. The new node registers the process's names only once every peer has fenced (or is
//!    Down), so a sender that finds the new pid by name already buffers behind its fence.
//!
//! So the messages of one sender reach the process in the order they were sent, whichever
//! pid it uses: those queued before it moved travel with it, ahead of anything it receives at
//! its new node; the rest follow through the buffer; and nothing sent directly can pass them.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::wire::Header;
use crate::{NodeId, Pid};

/// A data frame held while its receiver moves.
pub(crate) struct HeldFrame {
    pub(crate) from: NodeId,
    /// Its position among the frames taken from `from` (see `Inbound::held`).
    pub(crate) index: u64,
    pub(crate) header: Header,
    pub(crate) payload: Vec<u8>,
}

/// A message on its way to a moved process: its header (addressed to the new pid once it is
/// sent) and its encoding.
pub(crate) type Outgoing = (Header, Vec<u8>);

/// Where the messages of this node to one moved process go.
pub(crate) enum Redirect {
    /// Waiting for the old node's `FenceDone` (or being flushed after it, or after the old
    /// node's Down, by one thread: `passed`): messages that came back wait in `back`, in the
    /// order they come back, which is the order they were sent; messages sent since wait in
    /// `later`.
    Fencing {
        to: Pid,
        back: VecDeque<Outgoing>,
        later: VecDeque<Outgoing>,
        passed: bool,
        /// Fences sent for it and not answered yet. A node answers one sender's fences for
        /// one process in the order they were sent (their marks only grow, and the answers
        /// share a lane), so the buffer is flushed at the answer to the last one: an earlier
        /// answer says nothing about what was sent on after it (see [`Moves::next_batch`]).
        fences: u32,
    },
    /// Sent straight to `to`.
    Done(Pid),
}

/// What to do with a message to a pid that may have moved.
pub(crate) enum Route {
    /// Send it to this pid.
    To(Pid),
    /// It was kept for the fence.
    Buffered,
    /// The fence buffer is full: refuse it (the sender gets it back).
    Full,
}

/// `Relocated` notices followed per peer, at most (see [`Moves::relocated`]).
pub(crate) const MAX_RELOCATIONS: usize = 65_536;

/// Messages a fence buffer holds at most (a sender over it is refused, as over its credit
/// window).
pub(crate) const MAX_BUFFERED: usize = 65_536;

/// Moves of one process followed through at most this many redirects (a chain is as long as
/// the number of times the process moved while this node sent to it).
const MAX_CHAIN: usize = 64;

#[derive(Default)]
pub(crate) struct Moves {
    /// Local processes moving now, with the frames held for them.
    moving: BTreeMap<u64, Vec<HeldFrame>>,
    /// Local processes that moved, and where.
    moved: BTreeMap<u64, Pid>,
    /// This node's redirects, by (old node, old local id).
    redirects: BTreeMap<(NodeId, u64), Redirect>,
    /// Every redirect, by the pid it leads to: so a message to any pid of a process that
    /// moved several times finds the redirects before that pid too (a pid is made once, on
    /// one node, for one process: one redirect leads to it).
    leads_to: BTreeMap<Pid, (NodeId, u64)>,
    /// Redirects to fence again (see [`Moves::next_batch`]).
    refences: Vec<(NodeId, u64)>,
    /// How many `Relocated` notices of each peer were followed.
    relocations: BTreeMap<NodeId, usize>,
}

impl Moves {
    /// Starts holding frames for `local`; `false` if it is already moving.
    pub(crate) fn begin(&mut self, local: u64) -> bool {
        if self.moving.contains_key(&local) {
            return false;
        }
        self.moving.insert(local, Vec::new());
        true
    }

    pub(crate) fn is_moving(&self, local: u64) -> bool {
        self.moving.contains_key(&local)
    }

    /// Holds the frame `make` builds if its receiver `local` is moving; `false` otherwise.
    pub(crate) fn hold(&mut self, local: u64, make: impl FnOnce() -> HeldFrame) -> bool {
        match self.moving.get_mut(&local) {
            Some(held) => {
                held.push(make());
                true
            }
            None => false,
        }
    }

    /// `local` now runs as `to`: the frames held so far, in order, to redirect; `None` once
    /// none is held any more (it is then marked moved, and later frames are redirected as
    /// they arrive). Frames that arrive while a batch is being redirected are held for the
    /// next one, so none overtakes it.
    pub(crate) fn finish(&mut self, local: u64, to: Pid) -> Option<Vec<HeldFrame>> {
        let held = self.moving.get_mut(&local)?;
        if held.is_empty() {
            self.moving.remove(&local);
            self.moved.insert(local, to);
            return None;
        }
        Some(std::mem::take(held))
    }

    /// Local process `local` of this node (`here`) moved to `to`, and the frames held for it
    /// were sent back: this node follows it too, as a peer does once its fence passed. So
    /// a message this node sends to the new pid (found by name) waits behind what it sent
    /// before to a pid that led to the old one.
    ///
    /// If this node is still flushing a redirect that led to the process here (it moved here
    /// a moment ago), what that flush sends on from now comes back redirected, older than
    /// anything sent since: so this one starts fencing, with nothing awaited yet, and collects
    /// it in order. It is fenced once the one before it is done, as any redirect behind one
    /// still fencing ([`Moves::next_batch`]).
    pub(crate) fn follow_own(&mut self, here: NodeId, local: u64, to: Pid) {
        let key = (here, local);
        if !self.redirects.contains_key(&key) {
            let redirect = match self.fencing_upstream(Pid::new(here, local)) {
                Some(_) => Redirect::Fencing {
                    to,
                    back: VecDeque::new(),
                    later: VecDeque::new(),
                    passed: false,
                    fences: 0,
                },
                None => Redirect::Done(to),
            };
            self.redirects.insert(key, redirect);
        }
        self.leads_to.entry(to).or_insert(key);
    }

    /// `local` did not move: stops holding; returns the frames held, in order.
    pub(crate) fn abort(&mut self, local: u64) -> Vec<HeldFrame> {
        self.moving.remove(&local).unwrap_or_default()
    }

    /// Where local process `local` went, if it moved.
    pub(crate) fn moved_to(&self, local: u64) -> Option<Pid> {
        self.moved.get(&local).copied()
    }

    /// Where a message of this node to `(node, local)` goes now. `buffer` is the message,
    /// kept if a fence is pending.
    ///
    /// A process may have moved several times (t0 → t1 → t2), and its senders may hold any of
    /// its pids. Whichever one is used, the message takes the place it would have taken at
    /// the first of the chain's redirects still fencing: if a redirect fences toward the pid,
    /// it waits there (messages sent earlier to an older pid may wait there too); otherwise it
    /// follows the done redirects from the pid on, and waits at the first one that fences, or
    /// goes to where the chain ends.
    pub(crate) fn route(
        &mut self,
        node: NodeId,
        local: u64,
        buffer: impl FnOnce() -> Outgoing,
    ) -> Option<Route> {
        let key = self.first_fencing(Pid::new(node, local))?;
        match self.redirects.get_mut(&key)? {
            Redirect::Done(to) => Some(Route::To(*to)),
            Redirect::Fencing { back, later, .. } if back.len() + later.len() >= MAX_BUFFERED => {
                Some(Route::Full)
            }
            Redirect::Fencing { later, .. } => {
                later.push_back(buffer());
                Some(Route::Buffered)
            }
        }
    }

    /// The redirect a message to `pid` waits at or goes through (see [`Moves::route`]): the
    /// first redirect still fencing in the chain through `pid` (up the chain from it first,
    /// then down), else the last done one down from it (`None`: `pid` has no redirect).
    fn first_fencing(&self, pid: Pid) -> Option<(NodeId, u64)> {
        self.fencing_upstream(pid)
            .or_else(|| match self.downstream(pid) {
                Downstream::Fencing(key) | Downstream::Done(key) => Some(key),
                Downstream::None => None,
            })
    }

    /// The first redirect still fencing up the chain toward `pid` (done ones are passed
    /// through: a process may have moved on since a sender's fence toward it).
    fn fencing_upstream(&self, pid: Pid) -> Option<(NodeId, u64)> {
        let mut first = None;
        let mut at = pid;
        for _ in 0..MAX_CHAIN {
            let Some(&key) = self.leads_to.get(&at) else {
                break;
            };
            if let Some(Redirect::Fencing { .. }) = self.redirects.get(&key) {
                first = Some(key);
            }
            at = Pid::new(key.0, key.1);
        }
        first
    }

    /// Down the chain from `pid`, through the done redirects: the first one fencing, or the
    /// last one done.
    fn downstream(&self, pid: Pid) -> Downstream {
        let mut found = Downstream::None;
        let mut at = (pid.node(), pid.local());
        for _ in 0..MAX_CHAIN {
            match self.redirects.get(&at) {
                Some(Redirect::Done(to)) => {
                    found = Downstream::Done(at);
                    at = (to.node(), to.local());
                }
                Some(Redirect::Fencing { .. }) => return Downstream::Fencing(at),
                None => break,
            }
        }
        found
    }

    /// Where a message that goes on to `to` is sent: past the redirects from `to` that are
    /// done, to the pid where the chain ends or where one still fences (the message then comes
    /// back into that one's buffer, behind what its old node still sends back).
    fn past_done(&self, to: Pid) -> Pid {
        match self.downstream(to) {
            Downstream::Done(key) => match self.redirects.get(&key) {
                Some(Redirect::Done(end)) => *end,
                _ => to,
            },
            Downstream::Fencing(key) => Pid::new(key.0, key.1),
            Downstream::None => to,
        }
    }

    /// A redirect came back for a message to `(node, local)`: buffers it; returns whether
    /// this is the first (a fence must be sent), or, when the fence already passed, where to
    /// send it.
    pub(crate) fn redirected(
        &mut self,
        node: NodeId,
        local: u64,
        to: Pid,
        message: Outgoing,
    ) -> Redirected {
        match self.redirects.get_mut(&(node, local)) {
            None => {
                let mut back = VecDeque::new();
                back.push_back(message);
                let fencing = Redirect::Fencing {
                    to,
                    back,
                    later: VecDeque::new(),
                    passed: false,
                    fences: 1,
                };
                self.redirects.insert((node, local), fencing);
                self.leads_to.entry(to).or_insert((node, local));
                Redirected::First
            }
            Some(Redirect::Fencing { back, .. }) => {
                back.push_back(message);
                Redirected::Buffered
            }
            Some(Redirect::Done(_)) => {
                // Late (sent after its fence): it goes where a new message would.
                let at = self.first_fencing(Pid::new(node, local));
                match at.and_then(|key| self.redirects.get_mut(&key)) {
                    Some(Redirect::Fencing { later, .. }) => {
                        later.push_back(message);
                        Redirected::Buffered
                    }
                    Some(Redirect::Done(end)) => Redirected::Send(*end, message),
                    None => Redirected::Send(to, message),
                }
            }
        }
    }

    /// `(node, local)` moved to `to`, as its node told: its messages start waiting for the
    /// fence (as at a first redirect, with nothing back yet), unless they already follow it.
    /// The fence the caller sends next is counted as awaited.
    ///
    /// A node's notices are its word: at most [`MAX_RELOCATIONS`] of them are followed per
    /// peer, so a peer that makes them up cannot grow this table without bound (a real one
    /// past that still redirects; a sender that finds the new pid by name may then pass).
    pub(crate) fn relocated(&mut self, node: NodeId, local: u64, to: Pid) {
        if let Some(redirect) = self.redirects.get_mut(&(node, local)) {
            if let Redirect::Fencing { fences, .. } = redirect {
                *fences += 1;
            }
            return;
        }
        let followed = self.relocations.entry(node).or_default();
        if *followed >= MAX_RELOCATIONS {
            return;
        }
        *followed += 1;
        let fencing = Redirect::Fencing {
            to,
            back: VecDeque::new(),
            later: VecDeque::new(),
            passed: false,
            fences: 1,
        };
        self.redirects.insert((node, local), fencing);
        self.leads_to.entry(to).or_insert((node, local));
    }

    /// A fence for `(node, local)` was answered (`given_up`: or can no longer be, its node is
    /// Down): `true` if that was the last one awaited and the caller is the one to flush it,
    /// batch after batch ([`Moves::next_batch`]); `false` if a later fence is still awaited,
    /// another thread flushes it already, or nothing waits. Two flushing at once would send
    /// batches side by side, and direct sends could pass the first.
    pub(crate) fn begin_flush(&mut self, node: NodeId, local: u64, given_up: bool) -> bool {
        match self.redirects.get_mut(&(node, local)) {
            Some(Redirect::Fencing { passed, fences, .. }) => {
                *fences = match given_up {
                    true => 0,
                    false => fences.saturating_sub(1),
                };
                if *fences > 0 || *passed {
                    return false;
                }
                *passed = true;
                true
            }
            _ => false,
        }
    }

    /// The flush of `(node, local)` goes on (see [`Moves::begin_flush`]): the messages to
    /// send now, in order, and where; `None` once nothing waits (the redirect is then done,
    /// and later messages go straight there). Messages sent while a batch is on its way wait
    /// for the next, so none overtakes it.
    ///
    /// A process that moved twice (s → t → u) has two redirects here, the second away from the
    /// first's target. The second sends nothing while the first still fences: messages the
    /// first sends on to `t` come back from `t`'s node redirected, and must not be passed by
    /// anything sent to `u`. It waits instead, and once the first is done it is to be fenced
    /// again (returned by [`Moves::take_refences`]), so everything sent on to `t` comes back
    /// before it is flushed.
    pub(crate) fn next_batch(
        &mut self,
        node: NodeId,
        local: u64,
    ) -> Option<(Pid, VecDeque<Outgoing>)> {
        let upstream = self.fencing_upstream(Pid::new(node, local)).is_some();
        let Some(Redirect::Fencing {
            to, passed, fences, ..
        }) = self.redirects.get_mut(&(node, local))
        else {
            return None;
        };
        if upstream || *fences > 0 {
            // What leads here still fences, or it ended fencing after this flush began (and
            // sent messages on through this one's old node): wait to be fenced again.
            *passed = false;
            return None;
        }
        let to = *to;
        let send_to = self.past_done(to);
        let entry = self.redirects.get_mut(&(node, local))?;
        let Redirect::Fencing { back, later, .. } = entry else {
            return None;
        };
        if back.is_empty() && later.is_empty() {
            *entry = Redirect::Done(to);
            // The first redirect still fencing down the chain was waiting for this one: it
            // is fenced again, so what this one sent on comes back first. Even if its own
            // flush has begun: it has not sent anything yet (this one fenced until now), and
            // stops at its next batch (`fences > 0`).
            if let Downstream::Fencing(next) = self.downstream(to) {
                if let Some(Redirect::Fencing { fences, .. }) = self.redirects.get_mut(&next) {
                    // Counted now: an answer to an earlier fence that comes before this one
                    // is sent must not flush it.
                    *fences += 1;
                    self.refences.push(next);
                }
            }
            return None;
        }
        let mut batch = std::mem::take(back);
        batch.append(later);
        Some((send_to, batch))
    }

    /// Redirects to fence again, now that what led to them is done (see
    /// [`Moves::next_batch`]).
    pub(crate) fn take_refences(&mut self) -> Vec<(NodeId, u64)> {
        std::mem::take(&mut self.refences)
    }

    /// `node` is Down. Redirects to processes that moved there and ended there are dropped,
    /// and what waited for them is returned to be given back to its senders (`.0`); those to
    /// processes that moved on from there stay (what is known of the chain still leads to
    /// them). Redirects away from it stay (the processes live on where they went); a fence it
    /// can no longer answer is given up: its old local id is returned (`.1`), for what waited
    /// for it to be sent on, in order, batch after batch as after a `FenceDone`
    /// ([`Moves::next_batch`]; until then, later messages wait behind it). The messages still
    /// on their way back from it are lost with it.
    pub(crate) fn node_down(&mut self, node: NodeId) -> (Vec<Outgoing>, Vec<u64>) {
        let (mut stranded, mut orphaned) = (Vec::new(), Vec::new());
        let moved_on: BTreeSet<(NodeId, u64)> = self
            .redirects
            .keys()
            .filter(|key| key.0 == node)
            .copied()
            .collect();
        let ended_there = |to: &Pid| to.node() == node && !moved_on.contains(&(node, to.local()));
        self.redirects
            .retain(|&(from, local), redirect| match redirect {
                Redirect::Done(to) => !ended_there(to),
                Redirect::Fencing {
                    to, back, later, ..
                } if ended_there(to) => {
                    stranded.extend(back.drain(..));
                    stranded.extend(later.drain(..));
                    false
                }
                Redirect::Fencing { .. } if from == node => {
                    orphaned.push(local);
                    true
                }
                Redirect::Fencing { .. } => true,
            });
        // Local processes that moved there stay `moved`: a sender (or a watcher) that still
        // reaches that node is sent there; one that does not finds it Down itself.
        self.relocations.remove(&node);
        let redirects = &self.redirects;
        self.leads_to.retain(|_, key| redirects.contains_key(key));
        (stranded, orphaned)
    }
}

impl Moves {
    /// This node is closing: every message waiting for a fence, in order, to be given back to
    /// its sender (it was never sent where the process runs).
    pub(crate) fn drain(&mut self) -> Vec<Outgoing> {
        let mut waiting = Vec::new();
        for redirect in self.redirects.values_mut() {
            if let Redirect::Fencing { back, later, .. } = redirect {
                waiting.extend(back.drain(..));
                waiting.extend(later.drain(..));
            }
        }
        waiting
    }
}

/// What lies down a chain of redirects (see [`Moves::first_fencing`]).
enum Downstream {
    /// A redirect that still fences.
    Fencing((NodeId, u64)),
    /// The last of the done redirects: where it leads has none.
    Done((NodeId, u64)),
    /// The pid has no redirect.
    None,
}

/// A process that moved away from this node, and the peers not yet following it
/// (`core/relocation.rs`).
pub(crate) struct Relocating {
    pub(crate) to: Pid,
    pub(crate) waiting: rustc_hash::FxHashSet<NodeId>,
}

/// What became of a redirected message.
pub(crate) enum Redirected {
    /// Buffered; the first for its pid: send the fence.
    First,
    /// Buffered behind others.
    Buffered,
    /// The fence already passed: send it here.
    Send(Pid, Outgoing),
}

impl std::fmt::Debug for Moves {
    /// What a simulator's trace shows of the table: which processes are moving or moved,
    /// each redirect's state and what waits in it, what fences toward which pid.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut moving: Vec<(u64, usize)> = self
            .moving
            .iter()
            .map(|(l, held)| (*l, held.len()))
            .collect();
        moving.sort_unstable();
        let mut moved: Vec<(u64, String)> = self
            .moved
            .iter()
            .map(|(l, to)| (*l, to.to_string()))
            .collect();
        moved.sort_unstable();
        let mut redirects: Vec<String> = self
            .redirects
            .iter()
            .map(|((node, local), r)| match r {
                Redirect::Done(to) => format!("{local}@{node} done -> {to}"),
                Redirect::Fencing {
                    to,
                    back,
                    later,
                    passed,
                    fences,
                } => format!(
                    "{local}@{node} fencing -> {to} (back {}, later {}, passed {passed}, fences {fences})",
                    back.len(),
                    later.len()
                ),
            })
            .collect();
        redirects.sort_unstable();
        let mut leads_to: Vec<String> = self
            .leads_to
            .iter()
            .map(|(to, (node, local))| format!("{local}@{node} -> {to}"))
            .collect();
        leads_to.sort_unstable();
        f.debug_struct("Moves")
            .field("moving", &moving)
            .field("moved", &moved)
            .field("redirects", &redirects)
            .field("leads_to", &leads_to)
            .field("refences", &self.refences)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(n: u8) -> Outgoing {
        let header = Header::Post {
            to: 0,
            tag: 0,
            route: None,
            principal: None,
            trace: None,
        };
        (header, vec![n])
    }

    fn numbers(batch: &VecDeque<Outgoing>) -> Vec<u8> {
        batch.iter().map(|(_, payload)| payload[0]).collect()
    }

    /// A process moved here (t0 → here) and on (→ t2) while this node was still flushing its
    /// redirect toward it: what that flush sent to the process here comes back after the
    /// second move, and still reaches t2 before what this node sent later.
    #[test]
    fn a_process_leaving_while_its_redirect_here_flushes_keeps_this_nodes_order() {
        let (t0, here, t2) = (
            NodeId::from_u128(1),
            NodeId::from_u128(2),
            NodeId::from_u128(3),
        );
        let (second, third) = (Pid::new(here, 20), Pid::new(t2, 30));
        let mut moves = Moves::default();
        assert!(matches!(
            moves.redirected(t0, 10, second, message(1)),
            Redirected::First
        ));
        assert!(matches!(
            moves.route(t0, 10, || message(2)),
            Some(Route::Buffered)
        ));
        assert!(moves.begin_flush(t0, 10, false));
        let (to, batch) = moves.next_batch(t0, 10).expect("a batch");
        assert_eq!((to, numbers(&batch)), (second, vec![1, 2]));
        // #1 reached the process here; it moves on before #2 is sent, and this node posts #3.
        moves.follow_own(here, 20, third);
        assert!(matches!(
            moves.route(t0, 10, || message(3)),
            Some(Route::Buffered)
        ));
        // #2, sent now, comes back from the moved process's old place.
        assert!(matches!(
            moves.redirected(here, 20, third, message(2)),
            Redirected::Buffered
        ));
        let (to, batch) = moves.next_batch(t0, 10).expect("the later batch");
        assert_eq!((to, numbers(&batch)), (second, vec![3]));
        assert!(matches!(
            moves.redirected(here, 20, third, message(3)),
            Redirected::Buffered
        ));
        assert!(
            moves.next_batch(t0, 10).is_none(),
            "the first redirect is done"
        );
        assert_eq!(moves.take_refences(), vec![(here, 20)]);
        assert!(moves.begin_flush(here, 20, false));
        let (to, batch) = moves.next_batch(here, 20).expect("what came back");
        assert_eq!((to, numbers(&batch)), (third, vec![2, 3]));
        assert!(moves.next_batch(here, 20).is_none());
        assert!(matches!(moves.route(here, 20, || message(4)), Some(Route::To(p)) if p == third));
    }
}
