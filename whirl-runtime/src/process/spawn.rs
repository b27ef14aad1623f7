//! Creating processes: where they run, and the confinement of processes that share state.

use std::sync::Arc;

use super::addr::Addr;
use super::error::{SpawnError, SpawnRefusal};
use super::model::{OnExit, OnStarted, Process, ProcessCell};
use crate::control::Event;
use crate::group::{GroupShared, Runnable, Task};
use crate::lifecycle::{ExitReason, Failure};
use crate::principal::Principal;

/// Where the caller asked for the process to run.
pub(crate) enum Placement<'a> {
    /// No group named: the process's declared group ([`Process::GROUP`]), else this one.
    Default(&'a Arc<GroupShared>),
    /// This group, whatever the process declares.
    Explicit(&'a Arc<GroupShared>),
}

/// Picks the group, or says why the process cannot run anywhere it was asked to.
fn place<P: Process>(placement: Placement<'_>) -> (Arc<GroupShared>, Result<(), SpawnRefusal>) {
    let process = std::any::type_name::<P>();
    let group = match placement {
        Placement::Explicit(group) => Arc::clone(group),
        Placement::Default(fallback) => match P::GROUP {
            None => Arc::clone(fallback),
            Some(name) => match fallback.kernel.group_named(name) {
                Some(group) => group,
                None => {
                    let refusal = SpawnRefusal::NoSuchGroup {
                        process,
                        group: name,
                    };
                    return (Arc::clone(fallback), Err(refusal));
                }
            },
        },
    };
    if group.is_stopped() {
        return (group, Err(SpawnRefusal::ShutDown));
    }
    let Some(reason) = P::SHARES_STATE else {
        return (group, Ok(()));
    };
    let refusal = match (&group.shares_state, P::GROUP) {
        (None, _) => SpawnRefusal::SharesStateOutsideItsGroup {
            process,
            reason,
            group: group.name.clone(),
        },
        (Some(_), Some(wanted)) if wanted != group.name => {
            SpawnRefusal::SharesStateInAnotherGroup {
                process,
                reason,
                wanted,
                group: group.name.clone(),
            }
        }
        (Some(_), _) => return (group, Ok(())),
    };
    (group, Err(refusal))
}

/// Spawns `state` as a process, or hands it back with the reason it cannot run where it was
/// asked to (nothing is created or counted then).
pub(crate) fn try_spawn<P: Process>(
    placement: Placement<'_>,
    state: P,
    principal: Option<Principal>,
) -> Result<Addr<P>, SpawnError<P>> {
    let (group, placed) = place::<P>(placement);
    match placed {
        Ok(()) => Ok(start(group, state, principal, None, None, None)),
        Err(refusal) => Err(SpawnError::new(refusal, state)),
    }
}

/// Spawns `state` as a process. It runs its `started` hook on a worker straight away, then
/// handles messages. A process that cannot run where it was asked to (or after shutdown) is
/// terminated at once with a failure saying why: its monitors and the failure hook
/// (`failures.rs`) see it.
pub(crate) fn spawn<P: Process>(
    placement: Placement<'_>,
    state: P,
    principal: Option<Principal>,
) -> Addr<P> {
    spawn_watched(placement, state, principal, None)
}

/// [`spawn`], with a callback run once the process's `started` hook has returned `Ok`: how a
/// supervisor learns that a child it starts synchronously has started. It is set before the
/// process is scheduled, so it cannot miss the hook.
pub(crate) fn spawn_watched<P: Process>(
    placement: Placement<'_>,
    state: P,
    principal: Option<Principal>,
    on_started: Option<OnStarted>,
) -> Addr<P> {
    let (group, placed) = place::<P>(placement);
    start(group, state, principal, placed.err(), on_started, None)
}

/// [`spawn`] in `group`, with an exit hook set before the process is scheduled: when it
/// terminates, the messages left in its inbox go to `on_exit` instead of the dead-letter sink
/// (what a router uses to hand a crashed member's queue to its replacement).
pub(crate) fn spawn_with_exit_hook<P: Process>(
    group: &Arc<GroupShared>,
    state: P,
    on_exit: OnExit,
) -> Addr<P> {
    let (group, placed) = place::<P>(Placement::Explicit(group));
    start(group, state, None, placed.err(), None, Some(on_exit))
}

/// Creates the process in `group` and schedules it, or, with a `refusal`, terminates it before
/// it runs any of its own code.
fn start<P: Process>(
    group: Arc<GroupShared>,
    state: P,
    principal: Option<Principal>,
    refusal: Option<SpawnRefusal>,
    on_started: Option<OnStarted>,
    on_exit: Option<OnExit>,
) -> Addr<P> {
    let kernel = &group.kernel;
    let id = kernel.next_process_id();
    let _span = tracing::debug_span!(
        "spawn",
        process = %id,
        process_type = std::any::type_name::<P>(),
        group = %group.name,
        principal = principal.as_ref().map(Principal::id),
    )
    .entered();
    let cell = Arc::new(ProcessCell::new(id, Arc::clone(&group), principal, state));
    if let Some(callback) = on_started {
        cell.set_on_started(callback);
    }
    if let Some(hook) = on_exit {
        cell.set_on_exit(hook);
    }
    kernel.registry.insert(id, Arc::clone(&cell) as Task);
    group.counters.add(Event::Spawned, 1);
    // The start hook is a run without a message: count it so `block_until_idle` waits for it.
    group.counters.add(Event::Activated, 1);
    match refusal {
        None => {
            if let Some(fate) = &group.shares_state {
                fate.join(id, Arc::downgrade(&(Arc::clone(&cell) as Task)));
            }
            group.schedule(Arc::clone(&cell) as Task)
        }
        Some(refusal) => {
            // Reported by the termination, like any failure (`failures.rs`). The caller holds
            // the new cell's token: terminate it right here, before it runs any of its own
            // code.
            let failure = Failure::new(format!("refused at spawn: {refusal}"));
            Arc::clone(&cell).kill(ExitReason::Failed(failure));
            (Arc::clone(&cell) as Task).abandon();
        }
    }
    Addr::from_cell(cell)
}

/// How to spawn a process: where, and for whom. Made by
/// [`Runtime::spawner`](crate::Runtime::spawner), [`Ctx::spawner`](crate::Ctx::spawner) and
/// [`Group::spawner`](crate::Group::spawner); `spawn` on each is the shorthand with no options.
///
/// ```
/// # use whirl::prelude::*;
/// # #[process] struct Worker;
/// # #[process] impl Worker {}
/// let rt = Runtime::new();
/// let io = rt.group("io").threads(1).build()?;
/// let worker = rt
///     .spawner()
///     .group(&io)                          // else the group the process declares, or the default
///     .principal(Principal::builder(7).build().expect("a valid principal")) // else none (a `Ctx`'s: its own)
///     .spawn(Worker);
/// # drop(worker);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a spawner does nothing until `spawn` or `try_spawn` is called"]
pub struct Spawner<'a> {
    /// Where a process goes if no group is given and it declares none.
    home: &'a Arc<GroupShared>,
    group: Option<&'a Arc<GroupShared>>,
    principal: Option<Principal>,
}

impl<'a> Spawner<'a> {
    pub(crate) fn new(
        home: &'a Arc<GroupShared>,
        group: Option<&'a Arc<GroupShared>>,
        principal: Option<Principal>,
    ) -> Self {
        Spawner {
            home,
            group,
            principal,
        }
    }

    /// Runs the process in `group`, whatever group it declares ([`Process::GROUP`]).
    pub fn group(mut self, group: &'a crate::Group) -> Self {
        self.group = Some(group.shared());
        self
    }

    /// Runs the process on behalf of `principal` (instead of none, or of the spawning
    /// process's own).
    pub fn principal(mut self, principal: Principal) -> Self {
        self.principal = Some(principal);
        self
    }

    fn placement(&self) -> Placement<'a> {
        match self.group {
            Some(group) => Placement::Explicit(group),
            None => Placement::Default(self.home),
        }
    }

    /// Spawns `state` as a process. It runs its `started` hook on a worker straight away, then
    /// handles messages. A process that cannot run where it was asked to (its declared group
    /// does not exist, it shares state outside a group that allows it, the runtime has shut
    /// down) is terminated at once with a failure saying why: its monitors and the failure
    /// hook see it.
    pub fn spawn<P: Process>(self, state: P) -> Addr<P> {
        spawn(self.placement(), state, self.principal)
    }

    /// Like [`spawn`](Self::spawn), but a process that cannot run where it was asked to is
    /// not created: the error says why and hands the state back.
    pub fn try_spawn<P: Process>(self, state: P) -> Result<Addr<P>, SpawnError<P>> {
        try_spawn(self.placement(), state, self.principal)
    }
}

impl std::fmt::Debug for Spawner<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spawner")
            .field("group", &self.group.map(|g| &g.name))
            .field("principal", &self.principal)
            .finish()
    }
}

/// Spawning from a group handle, for code that holds a [`Group`](crate::Group) but not the
/// runtime: a factory that remote nodes call, a router growing its pool. (Defined here, in the
/// process layer, because the group layer below does not know processes.)
impl crate::Group {
    /// Spawns a process in this group (the shorthand of [`spawner`](Self::spawner)).
    pub fn spawn<P: Process>(&self, state: P) -> Addr<P> {
        self.spawner().spawn(state)
    }

    /// A [`Spawner`] placing processes in this group.
    pub fn spawner(&self) -> Spawner<'_> {
        Spawner::new(self.shared(), Some(self.shared()), None)
    }
}
