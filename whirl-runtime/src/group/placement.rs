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
//! group, which owns its threads (built for blocking work, perhaps with an
//! [`AdaptiveConcurrency`](crate::control::AdaptiveConcurrency) controller), where it blocks
//! only its peers. A target on the shared workers is refused: a process blocking there would
//! hold a worker that every shared group runs on. The move happens once its slow turn ends. The group keeps a count
//! ([`GroupStats::auto_moved`](crate::control::GroupStats::auto_moved)) and logs each move.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::builder::Group;
use super::move_error::MoveError;
use super::shared::GroupShared;
use crate::lifecycle::ProcessId;

/// An automatic-grouping rule, set with [`Group::auto_move`]: a process of the watched group
/// whose turns the slow-turn watchdog finds blocking `after_slow_turns` times within `within`
/// moves to the rule's group, which must own its threads (built for blocking work, with
/// [`GroupBuilder::threads`](crate::GroupBuilder::threads)), once its slow turn ends, so that
/// it blocks only its peers there. The group counts the moves
/// ([`GroupStats::auto_moved`](crate::control::GroupStats::auto_moved)) and logs each.
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

/// The watchdog reported a slow turn of `process` in `group` at `now`: moves it if the
/// group's rule says so (called on the controller thread, from `controllers.rs`).
pub(super) fn slow_turn(group: &GroupShared, process: ProcessId, now: Instant) {
    let Some(target) = group.placement.slow_turn(process, now) else {
        return;
    };
    let Some(task) = group.kernel.registry.get(process) else {
        return;
    };
    match task.request_move(&target) {
        Ok(()) => {
            group.placement.count_move();
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
    /// block here move to the rule's group (see [`AutoMove`]).
    pub fn auto_move(&self, rule: AutoMove) -> Result<(), MoveError> {
        let shared = self.shared();
        if shared.watchdog.threshold().is_none() {
            return Err(MoveError::NoWatchdog(shared.name.clone()));
        }
        let to = rule.to.shared();
        if Arc::ptr_eq(to, shared) {
            return Err(MoveError::SameGroup(shared.name.clone()));
        }
        if to.domain.is_some() {
            // A blocking process there would block a worker of every shared group.
            return Err(MoveError::SharedWorkers(to.name.clone()));
        }
        if !Arc::ptr_eq(&to.kernel, &shared.kernel) {
            return Err(MoveError::OtherRuntime(to.name.clone()));
        }
        if let Some(group) = [shared, to].into_iter().find(|g| g.shares_state.is_some()) {
            return Err(MoveError::SharesState(group.name.clone()));
        }
        shared
            .placement
            .watch(Arc::clone(to), rule.slow_turns, rule.window);
        Ok(())
    }

    /// Removes this group's automatic-grouping rule, if it has one.
    pub fn clear_auto_move(&self) {
        self.shared().placement.clear();
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
        slow_turn(from.shared(), ghost, t0);
        // The second one falls outside the window: the count starts again.
        slow_turn(from.shared(), ghost, t0 + Duration::from_secs(2));
        assert_eq!(placement.seen(ghost), Some(1));
        slow_turn(from.shared(), ghost, t0 + Duration::from_millis(2500));
        // Two within the window: the rule fires (the process is forgotten), but there is no
        // such process to move.
        assert_eq!(placement.seen(ghost), None);
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
        let on_workers = rt.group("on-workers").build().expect("group");
        assert!(!on_workers.is_dedicated());
        assert_eq!(
            from.auto_move(AutoMove::blocking_to(&on_workers)),
            Err(MoveError::SharedWorkers("on-workers".into()))
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
