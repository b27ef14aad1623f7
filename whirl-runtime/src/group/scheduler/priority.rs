//! AppBackplane's ready queues: one FIFO per principal priority, with per-level quotas.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use parking_lot::Mutex;

use super::{Ready, Scheduler};
use crate::lifecycle::ProcessId;

/// One FIFO of ready processes per principal priority level, served highest level first
/// within per-level quotas (AppBackplane's ready queues).
///
/// * A process's level is its principal's [`priority`](crate::Principal::priority); processes
///   without a principal use the [`unassigned`](PrincipalPriority::unassigned) level (default 0).
/// * **Priority inheritance** (AppBackplane: "work for an object is performed at the highest
///   priority of outstanding requests"): a process that holds messages posted
///   [on behalf of](crate::request::Request::on_behalf) a principal of a higher priority runs at that
///   priority ([`Ready::inherited_priority`]), and moves up at once if it was already queued
///   lower. So a request of an important principal never waits behind the backlog of a
///   low-priority process's level. [`inheritance(false)`](PrincipalPriority::inheritance)
///   turns it off.
/// * **Priority check**: every [`pop`](Scheduler::pop) scans from the highest level and serves
///   the first one that has work and quota left, so work arriving at a higher level runs next.
/// * Each turn handed out uses one unit of its level's quota. When no level with work has
///   quota left, a new round starts and every quota is refilled (AppBackplane's "virtual
///   tick"). Within a round every level with work gets at least `min(quota, its work)` turns,
///   so no level starves.
/// * Default quotas go by rank among the levels seen so far, highest first: 200, 100, 50, 25,
///   then 12 for every lower level. AppBackplane gives the top level an unlimited quota; here
///   it is finite so that the levels below still run under continuous top-level load.
///   [`quota`](PrincipalPriority::quota) overrides one level's quota.
/// * Yielded and newly woken processes both join the back of their level's queue.
///
/// `pop` costs one scan of the levels present (a short sorted vector); queues are reused, so
/// steady-state `push` and `pop` do not allocate.
///
/// ```
/// use whirl::scheduler::{PrincipalPriority, Scheduler};
///
/// // Level 5 may take 1000 turns per round; processes without a principal go to level 1.
/// let scheduler = PrincipalPriority::new().quota(5, 1000).unassigned(1);
/// assert_eq!(scheduler.len(), 0);
/// assert!(scheduler.describe().starts_with("priority"));
/// ```
pub struct PrincipalPriority {
    unassigned: u8,
    inheritance: bool,
    inner: Mutex<Levels>,
    /// Queued processes: raised before a push and lowered after a pop, so it never
    /// understates what is queued (it may overstate it for an instant).
    len: AtomicUsize,
}

struct Level {
    level: u8,
    queue: VecDeque<Ready>,
    quota: u32,
    used: u32,
}

#[derive(Default)]
struct Levels {
    /// The levels seen so far, highest first.
    levels: Vec<Level>,
    /// Quotas set with `PrincipalPriority::quota`, by level.
    overrides: Vec<(u8, u32)>,
    /// Rounds started (virtual ticks).
    rounds: u64,
}

/// The default quota of the level of rank `rank` (0 for the highest level seen).
fn default_quota(rank: usize) -> u32 {
    match rank {
        0 => 200,
        r => 100u32.checked_shr((r - 1) as u32).unwrap_or(0).max(12),
    }
}

impl Levels {
    fn set_quotas(&mut self) {
        for (rank, level) in self.levels.iter_mut().enumerate() {
            let explicit = self.overrides.iter().find(|(l, _)| *l == level.level);
            level.quota = explicit.map_or_else(|| default_quota(rank), |&(_, q)| q);
        }
    }

    /// The index of `level`, creating it (and re-ranking the quotas) on first sight.
    fn index(&mut self, level: u8) -> usize {
        match self.levels.binary_search_by(|l| level.cmp(&l.level)) {
            Ok(i) => i,
            Err(i) => {
                let new = Level {
                    level,
                    queue: VecDeque::new(),
                    quota: 0,
                    used: 0,
                };
                self.levels.insert(i, new);
                self.set_quotas();
                i
            }
        }
    }
}

impl PrincipalPriority {
    /// A scheduler with the default quotas and unassigned level 0.
    pub fn new() -> Self {
        PrincipalPriority {
            unassigned: 0,
            inheritance: true,
            inner: Mutex::new(Levels::default()),
            len: AtomicUsize::new(0),
        }
    }

    /// This scheduler with `turns` turns per round for level `level` instead of its default
    /// (at least 1: 0 counts as 1).
    pub fn quota(mut self, level: u8, turns: u32) -> Self {
        let turns = turns.max(1);
        let inner = self.inner.get_mut();
        inner.overrides.retain(|(l, _)| *l != level);
        inner.overrides.push((level, turns));
        inner.set_quotas();
        self
    }

    /// This scheduler with processes that serve no principal at level `level` (default 0).
    pub fn unassigned(mut self, level: u8) -> Self {
        self.unassigned = level;
        self
    }

    /// Whether processes inherit the priority of the principals their queued messages were
    /// posted on behalf of (default `true`). Off, a process's level is its own principal's.
    pub fn inheritance(mut self, enabled: bool) -> Self {
        self.inheritance = enabled;
        self
    }

    /// The level `ready` runs at now. Read under the lock, so that a raise the poster
    /// announces with `priority_raised` (which takes the lock after raising) is either seen
    /// here or finds the process queued.
    fn level_of(&self, ready: &Ready) -> u8 {
        let own = ready.principal().map_or(self.unassigned, |p| p.priority());
        match ready.inherited_priority() {
            Some(inherited) if self.inheritance => own.max(inherited),
            _ => own,
        }
    }
}

impl Default for PrincipalPriority {
    fn default() -> Self {
        Self::new()
    }
}

impl Scheduler for PrincipalPriority {
    fn push(&self, ready: Ready) {
        let mut inner = self.inner.lock();
        let level = self.level_of(&ready);
        let i = inner.index(level);
        self.len.fetch_add(1, SeqCst);
        inner.levels[i].queue.push_back(ready);
    }

    fn pop(&self, _worker: usize) -> Option<Ready> {
        let mut inner = self.inner.lock();
        let has_turn = |l: &Level| !l.queue.is_empty() && l.used < l.quota;
        let i = match inner.levels.iter().position(has_turn) {
            Some(i) => i,
            None => {
                // Every level with work has used its quota: a virtual tick.
                let i = inner.levels.iter().position(|l| !l.queue.is_empty())?;
                inner.levels.iter_mut().for_each(|l| l.used = 0);
                inner.rounds += 1;
                i
            }
        };
        let level = &mut inner.levels[i];
        let ready = level.queue.pop_front();
        level.used += 1;
        self.len.fetch_sub(1, SeqCst);
        ready
    }

    fn len(&self) -> usize {
        self.len.load(SeqCst)
    }

    fn priority_raised(&self, process: ProcessId) {
        if !self.inheritance {
            return;
        }
        let mut inner = self.inner.lock();
        // Lowest levels first: a process that inherits a priority was most likely low.
        for i in (0..inner.levels.len()).rev() {
            let queue = &inner.levels[i].queue;
            let Some(at) = queue.iter().position(|r| r.process() == process) else {
                continue;
            };
            let level = self.level_of(&queue[at]);
            if level > inner.levels[i].level {
                if let Some(ready) = inner.levels[i].queue.remove(at) {
                    let j = inner.index(level);
                    inner.levels[j].queue.push_back(ready);
                }
            }
            return;
        }
    }

    fn describe(&self) -> String {
        let inner = self.inner.lock();
        let mut out = format!("priority: round {}, levels", inner.rounds);
        for (n, l) in inner.levels.iter().enumerate() {
            let sep = if n == 0 { " " } else { ", " };
            let (q, quota, used) = (l.queue.len(), l.quota, l.used);
            let _ = write!(
                out,
                "{sep}{}:{q} queued (quota {quota}, used {used})",
                l.level
            );
        }
        out
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::atomic::Ordering::Relaxed;

    use super::*;
    use crate::group::scheduler::testing::{check_every_ready_once, ready};
    use crate::group::Runnable;
    use crate::principal::Principal;

    fn at(id: u64, level: u8) -> Ready {
        ready(
            id,
            Some(
                Principal::builder(id)
                    .priority(level)
                    .build()
                    .expect("a valid principal"),
            ),
            false,
        )
    }

    fn level_of(r: &Ready) -> u8 {
        r.principal().map(|p| p.priority()).unwrap()
    }

    #[test]
    fn a_process_runs_at_the_highest_priority_of_its_queued_messages() {
        use crate::group::scheduler::testing::{fake, of};
        for inheritance in [true, false] {
            let s = PrincipalPriority::new().inheritance(inheritance);
            let low = |id| {
                fake(
                    id,
                    Some(
                        Principal::builder(id)
                            .priority(1)
                            .build()
                            .expect("a valid principal"),
                    ),
                )
            };
            let (a, b, holder, late) = (low(1), low(2), low(3), low(4));
            // `holder` was woken by a message on behalf of a priority-7 principal.
            holder.inherited.store(8, Relaxed);
            s.push(of(&a));
            s.push(of(&holder));
            s.push(of(&b));
            // `late` was queued low, then inherited priority 9 while queued.
            s.push(of(&late));
            late.inherited.store(10, Relaxed);
            s.priority_raised(late.id());
            // A raise for a process not queued here (running, say) changes nothing.
            s.priority_raised(ProcessId(99));
            let order: Vec<u64> = std::iter::from_fn(|| s.pop(0))
                .map(|r| r.process().0)
                .collect();
            if inheritance {
                assert_eq!(order, [4, 3, 1, 2]);
            } else {
                assert_eq!(order, [1, 3, 2, 4]);
            }
        }
        // Inheritance never lowers a level.
        let s = PrincipalPriority::new();
        let high = fake(
            5,
            Some(
                Principal::builder(5)
                    .priority(6)
                    .build()
                    .expect("a valid principal"),
            ),
        );
        high.inherited.store(3, Relaxed);
        s.push(of(&high));
        s.push(ready(
            6,
            Some(
                Principal::builder(6)
                    .priority(4)
                    .build()
                    .expect("a valid principal"),
            ),
            false,
        ));
        assert_eq!(s.pop(0).unwrap().process().0, 5);
    }

    #[test]
    fn default_quotas_by_rank() {
        let quotas: Vec<u32> = (0..7).map(default_quota).collect();
        assert_eq!(quotas, [200, 100, 50, 25, 12, 12, 12]);
        assert_eq!(default_quota(255), 12);
    }

    #[test]
    fn strict_priority_within_quota() {
        let s = PrincipalPriority::new();
        for (id, level) in [(1, 0), (2, 3), (3, 1), (4, 3), (5, 0), (6, 1)] {
            s.push(at(id, level));
        }
        let order: Vec<u64> = std::iter::from_fn(|| s.pop(0))
            .map(|r| r.process().0)
            .collect();
        assert_eq!(order, [2, 4, 3, 6, 1, 5]);
        // Work arriving at a higher level goes first (priority check on every pop).
        s.push(at(7, 0));
        s.push(at(8, 0));
        assert_eq!(s.pop(0).unwrap().process().0, 7);
        s.push(at(9, 2));
        assert_eq!(s.pop(0).unwrap().process().0, 9);
        assert_eq!(s.pop(0).unwrap().process().0, 8);
        assert!(s.pop(0).is_none());
    }

    #[test]
    fn lower_level_gets_its_quota_every_round() {
        let s = PrincipalPriority::new();
        // A level-1 process that always has more work, pushed back after each turn.
        s.push(at(1, 1));
        for id in 0..1000 {
            s.push(at(100 + id, 0));
        }
        let mut counts = Vec::new();
        for _round in 0..3 {
            let mut per_level = [0u32; 2];
            for _ in 0..300 {
                let r = s.pop(0).unwrap();
                per_level[level_of(&r) as usize] += 1;
                if level_of(&r) == 1 {
                    s.push(r);
                }
            }
            counts.push(per_level);
        }
        // Level 1 (rank 0) gets 200 turns per round, level 0 (rank 1) 100.
        assert_eq!(counts, [[100, 200]; 3]);
        assert!(s
            .describe()
            .starts_with("priority: round 2, levels 1:1 queued"));
    }

    #[test]
    fn quota_override() {
        let s = PrincipalPriority::new().quota(9, 3).quota(2, 0).quota(2, 2);
        s.push(at(1, 9));
        for id in 0..10 {
            s.push(at(10 + id, 2));
        }
        let mut levels = Vec::new();
        for _ in 0..10 {
            let r = s.pop(0).unwrap();
            levels.push(level_of(&r));
            if level_of(&r) == 9 {
                s.push(r);
            }
        }
        assert_eq!(levels, [9, 9, 9, 2, 2, 9, 9, 9, 2, 2]);
    }

    #[test]
    fn unassigned_level() {
        let s = PrincipalPriority::new().unassigned(4);
        s.push(at(1, 3));
        s.push(ready(2, None, false));
        s.push(at(3, 5));
        let order: Vec<u64> = std::iter::from_fn(|| s.pop(0))
            .map(|r| r.process().0)
            .collect();
        assert_eq!(order, [3, 2, 1]);
        // Default: unassigned is level 0, below level 1.
        let s = PrincipalPriority::default();
        s.push(ready(4, None, true));
        s.push(at(5, 1));
        assert_eq!(s.pop(0).unwrap().process().0, 5);
        assert_eq!(s.pop(0).unwrap().process().0, 4);
    }

    #[test]
    fn every_item_exactly_once_and_len() {
        let s = PrincipalPriority::new().quota(0, 1).quota(7, 2);
        check_every_ready_once(
            &s,
            0x9E37_79B9_7F4A_7C15,
            2,
            |id, r| {
                let level = [0, 1, 7, 200, 255][(r >> 8) as usize % 5];
                if r & 0x10000 == 0 {
                    at(id, level)
                } else {
                    ready(id, None, true)
                }
            },
            |_, _, _| {},
        );
    }
}
