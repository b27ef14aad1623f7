//! Which group a process runs in, decided while it runs: moving one process
//! ([`Group::move_process`]) and automatic grouping ([`Group::auto_move`]), the paper's future
//! work (§VII: "processes could be assigned to groups automatically, by watching their
//! behaviour").
//!
//! The move itself happens in the process layer, at the process's next message boundary
//! (`process/relocate.rs`: nothing lost, each sender's order kept, old addresses forward).
//! This module decides *who* moves.
//!
//! # Automatic grouping: processes that block
//!
//! A process whose handlers block (a synchronous database driver, a file read, a lock held
//! elsewhere) keeps its worker from every other process of the group; the slow-turn watchdog
//! (`watchdog.rs`) already notices such turns, on the controller thread, without any cost on
//! the message path. An [`AutoMove`] rule on a group turns those observations into placement:
//! a process with `slow_turns` slow turns within `window` is moved to the rule's target
//! group (typically one with more threads, built for blocking work, perhaps with an
//! [`AdaptiveConcurrency`](crate::control::AdaptiveConcurrency) controller), where it blocks
//! only its peers. The move happens once its slow turn ends. The group keeps a count
//! ([`GroupStats::auto_moved`](crate::control::GroupStats::auto_moved)) and logs each move.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::builder::Group;
use super::shared::GroupShared;
use crate::lifecycle::ProcessId;

/// Why a process could not be moved, or a placement rule not set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MoveError {
    /// The process has terminated, or is terminating (or no live process has that id).
    #[error("the process has terminated or is terminating")]
    Ending,
    /// The target group belongs to another runtime.
    #[error("group `{0}` belongs to another runtime")]
    OtherRuntime(String),
    /// The target group has been stopped (its runtime is shutting down).
    #[error("group `{0}` is stopped")]
    Stopped(String),
    /// The process shares state with its group, or the group left or joined shares state:
    /// such groups fail together, so their membership is fixed.
    #[error("group `{0}` shares state between its processes: no process moves into or out of it")]
    SharesState(String),
    /// An automatic-grouping rule needs the group's slow-turn watchdog, which is off
    /// ([`GroupBuilder::slow_turn_threshold`](crate::GroupBuilder::slow_turn_threshold)`(None)`).
    #[error(
        "group `{0}` has no slow-turn threshold, so nothing would tell the rule a process blocks"
    )]
    NoWatchdog(String),
    /// A rule may not move processes to the group it watches.
    #[error("a rule on group `{0}` cannot move processes to the same group")]
    SameGroup(String),
}

/// An automatic-grouping rule: processes that block move to another group. See the
/// [module docs](self).
#[derive(Clone)]
pub struct AutoMove {
    to: Group,
    slow_turns: u32,
    window: Duration,
}

impl AutoMove {
    /// Moves processes that block to `to`: by default, after 2 slow turns within 10 seconds.
    pub fn blocking_to(to: &Group) -> Self {
        AutoMove {
            to: to.clone(),
            slow_turns: 2,
            window: Duration::from_secs(10),
        }
    }

    /// How many slow turns (at least 1) within the window make a process move.
    pub fn after_slow_turns(mut self, slow_turns: u32) -> Self {
        self.slow_turns = slow_turns.max(1);
        self
    }

    /// The window the slow turns must fall in.
    pub fn within(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }
}

impl std::fmt::Debug for AutoMove {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AutoMove")
            .field("to", &self.to.name())
            .field("slow_turns", &self.slow_turns)
            .field("window", &self.window)
            .finish()
    }
}

/// A group's placement rule and what it has seen: the state the watchdog feeds.
#[derive(Default)]
pub(crate) struct Placement {
    state: Mutex<Option<Watching>>,
    moved: std::sync::atomic::AtomicU64,
}

struct Watching {
    rule: AutoMove,
    /// Slow turns seen per process within the window: (count, first seen).
    seen: HashMap<ProcessId, (u32, Instant)>,
}

/// Processes remembered per group before the oldest are forgotten (bounds the memory a group
/// of many occasionally slow processes costs).
const MAX_WATCHED: usize = 4096;

impl Placement {
    /// Processes this group's rule has moved so far.
    pub(crate) fn moved(&self) -> u64 {
        self.moved.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The watchdog reported a slow turn of `process` at `now`: moves it if the rule says so.
    pub(crate) fn slow_turn(&self, group: &GroupShared, process: ProcessId, now: Instant) {
        let target = {
            let mut state = self.state.lock();
            let Some(watching) = state.as_mut() else {
                return;
            };
            let window = watching.rule.window;
            let entry = watching.seen.entry(process).or_insert((0, now));
            if now.duration_since(entry.1) > window {
                *entry = (0, now);
            }
            entry.0 += 1;
            if entry.0 < watching.rule.slow_turns {
                if watching.seen.len() > MAX_WATCHED {
                    watching
                        .seen
                        .retain(|_, (_, first)| now.duration_since(*first) <= window);
                }
                return;
            }
            watching.seen.remove(&process);
            Arc::clone(watching.rule.to.shared())
        };
        let Some(task) = group.kernel.registry.get(process) else {
            return;
        };
        match task.request_move(&target) {
            Ok(()) => {
                self.moved
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tracing::info!(
                    %process,
                    from = %group.name,
                    to = %target.name,
                    "automatic grouping: a process that blocks moves to another group"
                );
            }
            Err(e) => tracing::debug!(%process, error = %e, "automatic grouping: not moved"),
        }
    }
}

impl Group {
    /// Moves the live process `process` to `to` at its next message boundary (see
    /// [`Addr::move_to`](crate::Addr::move_to), which does the same for an address): for
    /// controllers and tools that know processes by id.
    pub fn move_process(&self, process: ProcessId, to: &Group) -> Result<(), MoveError> {
        let task = self
            .shared()
            .kernel
            .registry
            .get(process)
            .ok_or(MoveError::Ending)?;
        task.request_move(to.shared())
    }

    /// Sets this group's automatic-grouping rule (replacing any earlier one): processes that
    /// block here move to the rule's group. See the [module docs](self).
    pub fn auto_move(&self, rule: AutoMove) -> Result<(), MoveError> {
        let shared = self.shared();
        if shared.watchdog.threshold().is_none() {
            return Err(MoveError::NoWatchdog(shared.name.clone()));
        }
        let to = rule.to.shared();
        if Arc::ptr_eq(to, shared) {
            return Err(MoveError::SameGroup(shared.name.clone()));
        }
        if !Arc::ptr_eq(&to.kernel, &shared.kernel) {
            return Err(MoveError::OtherRuntime(to.name.clone()));
        }
        if let Some(group) = [shared, to].into_iter().find(|g| g.shares_state.is_some()) {
            return Err(MoveError::SharesState(group.name.clone()));
        }
        *shared.placement.state.lock() = Some(Watching {
            rule,
            seen: HashMap::new(),
        });
        Ok(())
    }

    /// Removes this group's automatic-grouping rule, if it has one.
    pub fn clear_auto_move(&self) {
        *self.shared().placement.state.lock() = None;
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn slow_turns_count_within_the_window_only() {
        let rt = crate::Runtime::new();
        let from = rt.group("from").threads(1).build().expect("group");
        let to = rt.group("to").threads(1).build().expect("group");
        from.auto_move(
            AutoMove::blocking_to(&to)
                .after_slow_turns(2)
                .within(Duration::from_secs(1)),
        )
        .expect("rule");
        let placement = &from.shared().placement;
        let t0 = Instant::now();
        // No such process: counted, then not found, so nothing moves.
        let ghost = ProcessId(u64::MAX);
        placement.slow_turn(from.shared(), ghost, t0);
        // The second one falls outside the window: the count starts again.
        placement.slow_turn(from.shared(), ghost, t0 + Duration::from_secs(2));
        assert_eq!(
            placement.state.lock().as_ref().map(|w| w.seen[&ghost].0),
            Some(1)
        );
        placement.slow_turn(from.shared(), ghost, t0 + Duration::from_millis(2500));
        // Two within the window: the rule fires (the process is forgotten), but there is no
        // such process to move.
        assert!(placement
            .state
            .lock()
            .as_ref()
            .is_some_and(|w| !w.seen.contains_key(&ghost)));
        assert_eq!(placement.moved(), 0);
        rt.shutdown_timeout(Duration::from_secs(5));
    }

    #[test]
    fn rules_that_cannot_work_are_refused() {
        let rt = crate::Runtime::new();
        let from = rt.group("from").threads(1).build().expect("group");
        let quiet = rt
            .group("quiet")
            .threads(1)
            .slow_turn_threshold(None)
            .build()
            .expect("group");
        let shared = rt
            .group("shared")
            .threads(1)
            .shares_state("test")
            .build()
            .expect("group");
        assert_eq!(
            from.auto_move(AutoMove::blocking_to(&from)),
            Err(MoveError::SameGroup("from".into()))
        );
        assert_eq!(
            quiet.auto_move(AutoMove::blocking_to(&from)),
            Err(MoveError::NoWatchdog("quiet".into()))
        );
        assert_eq!(
            from.auto_move(AutoMove::blocking_to(&shared)),
            Err(MoveError::SharesState("shared".into()))
        );
        let other = crate::Runtime::new();
        let elsewhere = other.group("elsewhere").threads(1).build().expect("group");
        assert_eq!(
            from.auto_move(AutoMove::blocking_to(&elsewhere)),
            Err(MoveError::OtherRuntime("elsewhere".into()))
        );
        other.shutdown_timeout(Duration::from_secs(5));
        rt.shutdown_timeout(Duration::from_secs(5));
    }
}
