//! Running children, type-erased: what the supervisor needs from one (its id, its address,
//! how to ask it to stop), and how a child spec's start function spawns and registers it.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, Weak};

use crate::addr::Addr;
use crate::cell::{OnStarted, Watcher};
use crate::clock::Clock;
use crate::group::{Group, GroupShared};
use crate::names::NameError;
use crate::principal::Principal;
use crate::process::{ExitReason, Process, ProcessId};
use crate::spawn::{spawn_watched, Placement};

use super::event::EventSink;
use super::message::{Msg, SupervisorMsg};
use super::process::Supervisor;
use super::spec::{ChildKind, Restart};

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

/// A child supervisor: asked to stop its subtree in order, then itself.
pub(super) struct SupervisedSupervisor<A: 'static>(pub(super) Addr<Supervisor<A>>);

impl<A: 'static> RunningChild for SupervisedSupervisor<A> {
    fn id(&self) -> ProcessId {
        self.0.id()
    }

    fn addr(&self) -> AnyAddr {
        AnyAddr::new(&self.0)
    }

    fn shutdown(&self) {
        // A predicate may shed the request under overload: fall back to an unordered stop
        // (its `terminated` hook still asks each of its children to stop).
        if self.0.post(SupervisorMsg(Msg::Shutdown)).is_err() {
            self.0.exit(ExitReason::Shutdown);
        }
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
        let names = &self.home.runtime.names;
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
            if let Err(taken) = names.register_succeeding(name, &addr, self.previous) {
                addr.cell().remove_watcher(&self.watcher);
                addr.exit(ExitReason::Shutdown);
                return Err(StartError::NameTaken(taken));
            }
        }
        Ok(addr)
    }
}

/// A running child's typed address, type-erased; compared and shown by process id.
#[derive(Clone)]
pub(super) struct AnyAddr {
    id: ProcessId,
    addr: Arc<dyn Any + Send + Sync>,
}

impl AnyAddr {
    fn new<P: Process>(addr: &Addr<P>) -> Self {
        AnyAddr {
            id: addr.id(),
            addr: Arc::new(addr.clone()),
        }
    }
}

impl PartialEq for AnyAddr {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for AnyAddr {}

impl fmt::Debug for AnyAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Addr({})", self.id)
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
    /// Whether it is significant (see [`ChildSpec::significant`](crate::ChildSpec::significant)).
    pub significant: bool,
    pub(super) addr: Option<AnyAddr>,
}

impl ChildInfo {
    /// The running incarnation's typed address, if the child runs and is a `P` (OTP gives a
    /// pid; whirl checks the type instead of trusting it). A child supervisor is a
    /// `Supervisor<A>`, `A` being its template's argument type, or
    /// [`NoTemplate`](crate::NoTemplate).
    ///
    /// The address is of this incarnation: after a restart it refers to a terminated process
    /// (see the [module documentation](crate::supervisor#stable-addressing-across-restarts)).
    pub fn addr<P: Process>(&self) -> Option<Addr<P>> {
        self.addr.as_ref()?.addr.downcast_ref::<Addr<P>>().cloned()
    }
}

/// Child counts, as [`Addr::count_children`](crate::Addr::count_children) reports them
/// (OTP's `count_children`, plus the restart count).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChildCounts {
    /// Child specs the supervisor knows, running or not; a simple-one-for-one supervisor
    /// has one, its template, however many children it runs (as in OTP).
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

// SAFETY: plain data (strings, ids, enums, counters) and a child's address, as an `Addr<P>`
// behind an immutable `Arc<dyn Any>`: a runtime handle that grants no access to the child's
// state (`Addr<P>` is `Isolated`).
#[diagnostic::do_not_recommend]
unsafe impl crate::isolated::Isolated for ChildInfo {}
// SAFETY: plain counters.
#[diagnostic::do_not_recommend]
unsafe impl crate::isolated::Isolated for ChildCounts {}
