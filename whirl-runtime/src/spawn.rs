//! Creating processes: where they run, and the confinement of processes that share state.

use std::sync::Arc;

use crate::addr::Addr;
use crate::cell::{ProcessCell, Runnable, Task};
use crate::counters::Event;
use crate::group::GroupShared;
use crate::principal::Principal;
use crate::process::{ExitReason, Failure, Process};

/// Where the caller asked for the process to run.
pub(crate) enum Placement<'a> {
    /// No group named: the process's declared group ([`Process::GROUP`]), else this one.
    Default(&'a Arc<GroupShared>),
    /// This group, whatever the process declares.
    Explicit(&'a Arc<GroupShared>),
}

/// Picks the group, or says why the process cannot run anywhere it was asked to.
fn place<P: Process>(placement: Placement<'_>) -> (Arc<GroupShared>, Result<(), String>) {
    let process = std::any::type_name::<P>();
    let group = match placement {
        Placement::Explicit(group) => Arc::clone(group),
        Placement::Default(fallback) => match P::GROUP {
            None => Arc::clone(fallback),
            Some(name) => match fallback.runtime.group_named(name) {
                Some(group) => group,
                None => {
                    let problem = format!(
                        "process `{process}` declares group `{name}`, but the runtime has no \
                         group of that name; build it with `rt.group(\"{name}\")` first"
                    );
                    return (Arc::clone(fallback), Err(problem));
                }
            },
        },
    };
    let Some(reason) = P::SHARES_STATE else {
        return (group, Ok(()));
    };
    let problem = match (group.shares_state, P::GROUP) {
        (None, _) => format!(
            "process `{process}` shares state (\"{reason}\") but was spawned into group `{}`, \
             which does not declare shared state (`GroupBuilder::shares_state`)",
            group.name
        ),
        (Some(_), Some(wanted)) if wanted != group.name => format!(
            "process `{process}` shares state (\"{reason}\") and is confined to group \
             `{wanted}`, but was spawned into group `{}`",
            group.name
        ),
        (Some(_), _) => return (group, Ok(())),
    };
    (group, Err(problem))
}

/// Spawns `state` as a process. It runs its `started` hook on a worker straight away, then
/// handles messages. A process that cannot run where it was asked to (or after shutdown) is
/// terminated at once with a failure saying why: its monitors and the logs see it.
pub(crate) fn spawn<P: Process>(
    placement: Placement<'_>,
    state: P,
    principal: Option<Principal>,
) -> Addr<P> {
    let (group, placed) = place::<P>(placement);
    let runtime = &group.runtime;
    let id = runtime.next_process_id();
    let cell = Arc::new(ProcessCell::new(id, Arc::clone(&group), principal, state));
    runtime.registry.insert(id, Arc::clone(&cell) as Task);
    group.counters.add(Event::Spawned, 1);
    // The start hook is a run without a message: count it so `block_until_idle` waits for it.
    group.counters.add(Event::Activated, 1);

    let refusal = match placed {
        Err(problem) => Some(problem),
        Ok(()) if group.is_stopped() => Some("spawned after the runtime shut down".to_owned()),
        Ok(()) => None,
    };
    match refusal {
        None => group.schedule(Arc::clone(&cell) as Task),
        Some(problem) => {
            tracing::error!(process = %id, "{problem}");
            // The caller holds the new cell's token: terminate it right here, before it
            // runs any of its own code.
            Arc::clone(&cell).kill(ExitReason::Failed(Failure::new(problem)));
            (Arc::clone(&cell) as Task).abandon();
        }
    }
    Addr::from_cell(cell)
}
