//! Creating processes.

use std::sync::Arc;

use crate::addr::Addr;
use crate::cell::{ProcessCell, Runnable, Task};
use crate::counters::Event;
use crate::group::GroupShared;
use crate::principal::Principal;
use crate::process::{ExitReason, Failure, Process};

/// Spawns `state` as a process in `group`. The process runs its `started` hook on a worker
/// straight away, then handles messages.
pub(crate) fn spawn_in_group<P: Process>(
    group: &Arc<GroupShared>,
    state: P,
    principal: Option<Principal>,
) -> Addr<P> {
    let runtime = &group.runtime;
    let id = runtime.next_process_id();
    let cell = Arc::new(ProcessCell::new(id, Arc::clone(group), principal, state));
    runtime.registry.insert(id, Arc::clone(&cell) as Task);
    group.counters.add(Event::Spawned, 1);
    // The start hook is a run without a message: count it so `block_until_idle` waits for it.
    group.counters.add(Event::Activated, 1);
    if group.is_stopped() {
        // No worker will ever run it: terminate it right here, on the caller's thread, which
        // holds the token because the cell was created scheduled.
        let reason = ExitReason::Failed(Failure::new("spawned after the runtime shut down"));
        Arc::clone(&cell).kill(reason);
        (Arc::clone(&cell) as Task).run();
    } else {
        group.schedule(Arc::clone(&cell) as Task);
    }
    Addr::from_cell(cell)
}
