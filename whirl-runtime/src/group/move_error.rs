//! Why a process could not move to another group ([`MoveError`]): returned by
//! `Addr::move_to`, `Group::move_process` and `Group::auto_move` (`placement.rs` decides who
//! moves, `process/relocate.rs` moves). A module of its own so that the task layer can name it
//! without reaching the group builder.

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
    /// An automatic-grouping rule's target runs on the runtime's shared workers, where a
    /// process that blocks would hold a worker every group runs on.
    #[error(
        "group `{0}` runs on the shared workers: move processes that block to a group that owns its threads (`.threads(n)`)"
    )]
    SharedWorkers(String),
}
