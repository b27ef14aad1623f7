//! Starting a child, type-erased: what the supervisor needs from a running incarnation (its
//! id, its address, how to ask it to stop), and how a child spec's start function spawns,
//! monitors and names it ([`StartCx`]).

use std::fmt;
use std::sync::{Arc, Weak};

use crate::group::{Group, GroupShared, NameError};
use crate::lifecycle::{ExitReason, ProcessId};
use crate::principal::Principal;
use crate::process::Addr;
use crate::process::Process;
use crate::process::{spawn_watched, Placement};
use crate::process::{OnStarted, Watcher};
use crate::time::Clock;

use super::event::EventSink;
use super::info::AnyAddr;

/// One live incarnation of a child.
pub(super) trait RunningChild: Send {
    fn id(&self) -> ProcessId;
    /// Its typed address, erased (an `Addr<P>` for the child's process type).
    fn addr(&self) -> AnyAddr;
    /// Asks the child to terminate; its `Down` tells the supervisor when it has.
    fn shutdown(&self);
    /// Stops the supervisor (`watcher`) watching it: for an incarnation it lets go of.
    fn demonitor(&self, watcher: &Weak<dyn Watcher>);
}

/// A worker: stopped with `Addr::exit(Shutdown)`, at its next message boundary.
pub(super) struct Worker<P: Process>(pub(super) Addr<P>);

impl<P: Process> RunningChild for Worker<P> {
    fn id(&self) -> ProcessId {
        self.0.id()
    }

    fn addr(&self) -> AnyAddr {
        AnyAddr::new(&self.0)
    }

    fn shutdown(&self) {
        self.0.exit(ExitReason::Shutdown);
    }

    fn demonitor(&self, watcher: &Weak<dyn Watcher>) {
        self.0.cell().remove_watcher(watcher);
    }
}

/// Why a child could not be started (before any of its own code ran).
#[derive(Debug)]
pub(super) enum StartError {
    /// Its name is held by another live process; the name was left alone.
    NameTaken(NameError),
    /// The spec of a temporary child that already ran: its recipe was dropped.
    Spent,
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::NameTaken(e) => write!(f, "{e}"),
            StartError::Spent => f.write_str(
                "this is the spec of a temporary child that has run; its start arguments were \
                 dropped, as OTP drops them",
            ),
        }
    }
}

/// What a child spec's start gets: where and under which name to run the child, who monitors
/// it, and what a child supervisor inherits.
pub(crate) struct StartCx<'a> {
    /// The supervisor's group (the default placement) and principal (inherited).
    pub(super) home: &'a Arc<GroupShared>,
    pub(super) principal: Option<Principal>,
    /// The supervisor, as the watcher of its children.
    pub(super) watcher: Weak<dyn Watcher>,
    pub(super) group: Option<&'a Group>,
    pub(super) name: Option<&'a str>,
    /// The child's previous incarnation: the one process it may take the name from.
    pub(super) previous: Option<ProcessId>,
    /// Run once the child's `started` hook succeeded (a synchronous start), if set.
    pub(super) on_started: Option<OnStarted>,
    pub(super) clock: &'a Arc<dyn Clock>,
    pub(super) events: Option<&'a EventSink>,
}

impl StartCx<'_> {
    /// Spawns, monitors, and registers the name (if any) of a new incarnation built by
    /// `state`. If another live process holds the name, nothing is built or spawned.
    pub(super) fn spawn<P: Process>(
        &mut self,
        state: impl FnOnce() -> P,
    ) -> Result<Addr<P>, StartError> {
        let names = &self.home.kernel.names;
        if let Some(name) = self.name {
            if let Some(holder) = names.holder(name) {
                if Some(holder) != self.previous {
                    return Err(StartError::NameTaken(NameError::Taken {
                        name: name.to_owned(),
                        holder,
                    }));
                }
            }
        }
        let placement = match self.group {
            Some(group) => Placement::Explicit(group.shared()),
            None => Placement::Default(self.home),
        };
        let addr = spawn_watched(
            placement,
            state(),
            self.principal.clone(),
            self.on_started.take(),
        );
        addr.cell().add_watcher(self.watcher.clone());
        if let Some(name) = self.name {
            // Checked above; a process that registered the name since wins, and the new
            // incarnation is stopped before it is known to anyone.
            if let Err(taken) =
                names.register_succeeding(name, Box::new(addr.clone()), self.previous)
            {
                addr.cell().remove_watcher(&self.watcher);
                addr.exit(ExitReason::Shutdown);
                return Err(StartError::NameTaken(taken));
            }
        }
        Ok(addr)
    }
}
