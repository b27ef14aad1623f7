//! Shared fate: the processes of a group that shares state fail together.
//!
//! A group built with [`GroupBuilder::shares_state`](crate::GroupBuilder::shares_state) hosts
//! processes that knowingly share mutable state (the Whirlwind paper's section VI-C: several
//! processes in front of an in-memory database that locks for itself). Isolation no longer
//! contains a fault there: a process that panics half-way through an update may leave the
//! shared state inconsistent for every other process of the group. The paper's answer is to
//! confine the sharing to one group and "add error propagation paths between all processes":
//! if any of them fails, they all fail. This module is those paths.
//!
//! [`SharedFate`] keeps the group's live members (joined at spawn, left at their end; only
//! groups that share state have one, so other groups pay nothing). When a member ends with a
//! failure, every other member is killed with [`FailureKind::SharedState`] naming the one that
//! failed, so their monitors and supervisors see a failure, and a supervisor restarts them by
//! its strategy. A member ending normally, or being stopped by its supervisor, takes nobody with
//! it; nor does a member failing *because* of the group (no cascade of kills): the first
//! failure already reached everyone. A process spawned after the failure (a supervisor's
//! restart) is a new member and is not killed.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use rustc_hash::FxBuildHasher;

use super::task::Runnable;
use crate::lifecycle::{ExitReason, Failure, FailureKind, ProcessId};

/// The live members of a group that shares state, and why it does.
pub(crate) struct SharedFate {
    /// What the builder declared (`GroupBuilder::shares_state`): shown in failures and logs.
    pub(crate) reason: &'static str,
    members: Mutex<HashMap<u64, Weak<dyn Runnable>, FxBuildHasher>>,
}

impl SharedFate {
    pub(crate) fn new(reason: &'static str) -> Self {
        SharedFate {
            reason,
            members: Mutex::new(HashMap::with_hasher(FxBuildHasher)),
        }
    }

    /// A process of the group started.
    pub(crate) fn join(&self, id: ProcessId, member: Weak<dyn Runnable>) {
        self.members.lock().insert(id.as_u64(), member);
    }

    /// A member ended with `reason`: it leaves, and if it failed (and not because of the
    /// group), every other member is killed with a failure naming it. The kills are requests:
    /// each member ends at its next message boundary, as any killed process does.
    pub(crate) fn ended(&self, id: ProcessId, reason: &ExitReason) {
        let others: Vec<Arc<dyn Runnable>> = {
            let mut members = self.members.lock();
            members.remove(&id.as_u64());
            let ExitReason::Failed(failure) = reason else {
                return;
            };
            if matches!(failure.kind(), FailureKind::SharedState(_)) {
                return;
            }
            members.values().filter_map(Weak::upgrade).collect()
        };
        let ExitReason::Failed(failure) = reason else {
            return;
        };
        if others.is_empty() {
            return;
        }
        tracing::warn!(
            process = %id,
            failure = %failure,
            members = others.len(),
            shares_state = self.reason,
            "a process of a group that shares state failed; the group fails with it"
        );
        let failure = Failure::with_kind(FailureKind::SharedState(id), failure.reason());
        // Outside the lock: a kill may run on this thread and end the member right here.
        for member in others {
            member.kill(ExitReason::Failed(failure.clone()));
        }
    }

    /// How many members are alive (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.members.lock().len()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::group::task::Recorder;
    use crate::principal::Principal;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A member that records the kills it gets.
    struct Member {
        id: ProcessId,
        kills: Mutex<Vec<ExitReason>>,
        runs: AtomicUsize,
    }

    impl Runnable for Member {
        fn run(self: Arc<Self>, _sampled: bool, _recorder: &Recorder) -> usize {
            self.runs.fetch_add(1, Ordering::Relaxed);
            0
        }
        fn abandon(self: Arc<Self>) {}
        fn kill(self: Arc<Self>, reason: ExitReason) {
            self.kills.lock().push(reason);
        }
        fn id(&self) -> ProcessId {
            self.id
        }
        fn principal(&self) -> Option<&Principal> {
            None
        }
        fn group_name(&self) -> &str {
            "shared"
        }
        fn request_move(
            self: Arc<Self>,
            _: &dyn std::any::Any,
        ) -> Result<(), crate::group::MoveError> {
            Err(crate::group::MoveError::SharesState("shared".into()))
        }
    }

    fn members(fate: &SharedFate, n: u64) -> Vec<Arc<Member>> {
        (1..=n)
            .map(|i| {
                let m = Arc::new(Member {
                    id: ProcessId(i),
                    kills: Mutex::new(Vec::new()),
                    runs: AtomicUsize::new(0),
                });
                let weak: Weak<dyn Runnable> =
                    Arc::downgrade(&(Arc::clone(&m) as Arc<dyn Runnable>));
                fate.join(m.id, weak);
                m
            })
            .collect()
    }

    #[test]
    fn a_failure_kills_every_other_member_once_naming_the_first() {
        let fate = SharedFate::new("test");
        let ms = members(&fate, 4);
        let failure = Failure::new("torn write");
        fate.ended(ms[1].id, &ExitReason::Failed(failure));
        assert_eq!(fate.len(), 3);
        assert!(
            ms[1].kills.lock().is_empty(),
            "the failed member is not killed again"
        );
        for m in [&ms[0], &ms[2], &ms[3]] {
            let kills = m.kills.lock();
            assert_eq!(kills.len(), 1);
            let ExitReason::Failed(f) = &kills[0] else {
                panic!("killed with {:?}", kills[0]);
            };
            assert_eq!(*f.kind(), FailureKind::SharedState(ms[1].id));
            assert_eq!(f.reason(), "torn write");
        }
        // The killed members end with the group's failure: no further kills.
        for m in [&ms[0], &ms[2], &ms[3]] {
            let reason = m.kills.lock()[0].clone();
            fate.ended(m.id, &reason);
        }
        assert_eq!(fate.len(), 0);
        for m in &ms {
            assert!(m.kills.lock().len() <= 1);
        }
    }

    #[test]
    fn normal_ends_and_shutdowns_take_nobody_with_them() {
        let fate = SharedFate::new("test");
        let ms = members(&fate, 3);
        fate.ended(ms[0].id, &ExitReason::Normal);
        fate.ended(ms[1].id, &ExitReason::Shutdown);
        assert_eq!(fate.len(), 1);
        assert!(ms.iter().all(|m| m.kills.lock().is_empty()));
    }

    #[test]
    fn members_that_are_gone_are_skipped() {
        let fate = SharedFate::new("test");
        let mut ms = members(&fate, 3);
        let survivor = ms.pop().expect("three members");
        drop(ms.pop()); // this member's cell is gone; its entry is still there
        fate.ended(ms[0].id, &ExitReason::Failed(Failure::new("boom")));
        assert_eq!(survivor.kills.lock().len(), 1);
        assert_eq!(
            fate.len(),
            2,
            "entries leave when their members end, not when killed"
        );
    }
}
