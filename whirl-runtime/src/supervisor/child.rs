//! Running children, type-erased: what the supervisor needs from one (its id, and how to ask
//! it to stop), and how a child spec's start function spawns and registers it.

use std::sync::Arc;

use crate::addr::Addr;
use crate::clock::Clock;
use crate::ctx::Ctx;
use crate::group::Group;
use crate::process::{ExitReason, Process, ProcessId};

use super::event::EventSink;
use super::message::{Msg, SupervisorMsg};
use super::process::Supervisor;
use super::spec::{ChildKind, Restart};

/// One live incarnation of a child.
pub(super) trait RunningChild: Send {
    fn id(&self) -> ProcessId;
    /// Asks the child to terminate; its `Down` tells the supervisor when it has.
    fn shutdown(&self);
}

/// A worker: stopped with `Addr::exit(Normal)`, at its next message boundary.
pub(super) struct Worker<P: Process>(pub(super) Addr<P>);

impl<P: Process> RunningChild for Worker<P> {
    fn id(&self) -> ProcessId {
        self.0.id()
    }

    fn shutdown(&self) {
        self.0.exit(ExitReason::Normal);
    }
}

/// A child supervisor: asked to stop its subtree in order, then itself.
pub(super) struct SupervisedSupervisor(pub(super) Addr<Supervisor>);

impl RunningChild for SupervisedSupervisor {
    fn id(&self) -> ProcessId {
        self.0.id()
    }

    fn shutdown(&self) {
        // A predicate may shed the request under overload: fall back to an unordered stop
        // (its `terminated` hook still asks each of its children to stop).
        if self.0.post(SupervisorMsg(Msg::Shutdown)).is_err() {
            self.0.exit(ExitReason::Normal);
        }
    }
}

/// What a child spec's start gets: the supervisor's context, where and under which name to
/// run the child, and what a child supervisor inherits.
pub(crate) struct StartCx<'a> {
    pub(super) ctx: &'a Ctx<Supervisor>,
    pub(super) group: Option<&'a Group>,
    pub(super) name: Option<&'a str>,
    pub(super) clock: &'a Arc<dyn Clock>,
    pub(super) events: Option<&'a EventSink>,
}

impl StartCx<'_> {
    /// Spawns, monitors, and registers the name (if any) of a new incarnation.
    pub(super) fn spawn<P: Process>(&mut self, state: P) -> Addr<P> {
        let addr = match self.group {
            Some(group) => self.ctx.spawn_in(group, state),
            None => self.ctx.spawn(state),
        };
        self.ctx.monitor(&addr);
        if let Some(name) = self.name {
            self.ctx.cell().group.runtime.names.replace(name, &addr);
        }
        addr
    }
}

/// A child as [`Addr::which_children`](crate::Addr::which_children) reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildInfo {
    /// The spec's id.
    pub id: String,
    /// The running incarnation, or `None` if the child is stopped (terminated on request, or
    /// a transient child that finished normally).
    pub pid: Option<ProcessId>,
    /// Worker or supervisor.
    pub kind: ChildKind,
    /// Its restart type.
    pub restart: Restart,
    /// How many times the supervisor restarted it.
    pub restarts: u64,
}

/// Child counts, as [`Addr::count_children`](crate::Addr::count_children) reports them
/// (OTP's `count_children`, plus the restart count).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChildCounts {
    /// Children the supervisor knows, running or not.
    pub specs: usize,
    /// Children running now.
    pub active: usize,
    /// Of the known children, how many are supervisors.
    pub supervisors: usize,
    /// Of the known children, how many are workers.
    pub workers: usize,
    /// Restarts the supervisor has performed (one per failure it recovered from, however many
    /// children the strategy restarted).
    pub restarts: u64,
}

// SAFETY: plain data: strings, ids, enums and counters.
#[diagnostic::do_not_recommend]
unsafe impl crate::isolated::Isolated for ChildInfo {}
// SAFETY: plain counters.
#[diagnostic::do_not_recommend]
unsafe impl crate::isolated::Isolated for ChildCounts {}
