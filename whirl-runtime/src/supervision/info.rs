//! What a supervisor reports about its children: [`ChildInfo`] and [`ChildCounts`], and the
//! type-erased address a `ChildInfo` carries.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use crate::lifecycle::ProcessId;
use crate::process::{Addr, Process};

use super::kinds::{ChildKind, Restart};

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
    /// Whether it is significant (see [`ChildSpec::significant`](crate::supervision::ChildSpec::significant)).
    pub significant: bool,
    pub(super) addr: Option<AnyAddr>,
}

impl ChildInfo {
    /// The running incarnation's typed address, if the child runs and is a `P` (OTP gives a
    /// pid; whirl checks the type instead of trusting it). A child supervisor is a
    /// `Supervisor<A>`, `A` being its template's argument type, or
    /// [`NoTemplate`](crate::supervision::NoTemplate).
    ///
    /// The address is of this incarnation: after a restart it refers to a terminated process
    /// (see the [module documentation](crate::supervision#stable-addressing-across-restarts)).
    pub fn addr<P: Process>(&self) -> Option<Addr<P>> {
        self.addr.as_ref()?.downcast()
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
// state (`Addr<P>` is `Isolated`). (I8)
#[diagnostic::do_not_recommend]
unsafe impl crate::isolation::Isolated for ChildInfo {}
// SAFETY: plain counters. (I8)
#[diagnostic::do_not_recommend]
unsafe impl crate::isolation::Isolated for ChildCounts {}

/// A running child's typed address, type-erased; compared and shown by process id.
#[derive(Clone)]
pub(super) struct AnyAddr {
    id: ProcessId,
    addr: Arc<dyn Any + Send + Sync>,
    /// For a child supervisor: how to list its children without knowing its type (a
    /// `listing::WhichChildren`, erased so that this module need not name the error type,
    /// which names specs, which start children, which carry this type).
    children: Option<Arc<dyn Any + Send + Sync>>,
}

impl AnyAddr {
    pub(super) fn new<P: Process>(addr: &Addr<P>) -> Self {
        AnyAddr {
            id: addr.id(),
            addr: Arc::new(addr.clone()),
            children: None,
        }
    }

    /// The address of a child supervisor, which `children` lists.
    pub(super) fn supervisor<P: Process>(
        addr: &Addr<P>,
        children: Arc<dyn Any + Send + Sync>,
    ) -> Self {
        AnyAddr {
            children: Some(children),
            ..AnyAddr::new(addr)
        }
    }

    /// How to list a child supervisor's children; `None` for a worker.
    pub(super) fn children(&self) -> Option<&(dyn Any + Send + Sync)> {
        self.children.as_deref()
    }

    /// The address, if it is an `Addr<P>`.
    pub(super) fn downcast<P: Process>(&self) -> Option<Addr<P>> {
        self.addr.downcast_ref::<Addr<P>>().cloned()
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
