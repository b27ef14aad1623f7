//! Groups: sets of processes sharing a scheduling domain (on the runtime's shared workers, or
//! on threads of their own), a run budget, a message predicate and
//! optionally a scheduler — the paper's unit of resource control — and the runtime-wide
//! tables they share.
//!
//! This layer schedules [`Task`]s and knows nothing of processes: the `process` layer above
//! implements `Runnable` for its cells. From the bottom up:
//!
//! * `park.rs`, `idle.rs`: parking a worker without lost wake-ups.
//! * `probe.rs`: what each worker is running, readable from any thread (for shutdown reports
//!   and the slow-turn watchdog).
//! * `pool.rs`: a pool's thread range, target and slots ([`ThreadRange`]).
//! * `stage.rs`: a process's stage (its process type), for cohort scheduling.
//! * `task.rs`: what runs ([`Runnable`]) and what a turn records into ([`Recorder`]).
//! * `scheduler/`: the [`Scheduler`](crate::scheduler::Scheduler) trait and the library.
//! * `watchdog.rs`: the slow-turn watchdog, which notices a turn that holds its worker longer
//!   than the group's threshold (reads the probes; nothing on the message path).
//! * `registry.rs`, `names.rs`, `control_thread.rs`: the table of live processes, the name
//!   registry, the controller thread (which runs the controllers and the watchdog).
//! * `shared.rs`: a group's state and the runtime's kernel, which hold each other.
//! * `census.rs`: the live processes listed for observers (`Runtime::processes`,
//!   `Runtime::process_info`).
//! * `cpu_budget.rs`: a group's CPU budget per integration period, and the governor that
//!   makes its workers wait when it is spent.
//! * `worker.rs`: a dedicated group's worker loop, and where a scheduled task goes.
//! * `workers.rs`: the runtime's shared workers, on which every group that does not own
//!   threads is a scheduling domain (weighted fair queuing across groups, the LIFO slot
//!   across groups).
//! * `controllers.rs`: how a group runs its concurrency controllers and its watchdog on the
//!   controller thread's ticks.
//! * `observe.rs`: completion reports for predicates that learn.
//! * `builder.rs`: [`Group`] and [`GroupBuilder`].
//! * `fate.rs`: the members of a group that shares state, which fail together.
//! * `placement_rule.rs`: a group's automatic-grouping rule and the slow turns it counted.
//! * `placement.rs`: moving a process to another group by id, and automatic grouping (a rule
//!   that moves processes the watchdog finds blocking).
//!
//! Layer 8: uses `admission`, `control`, `principal`, `lifecycle`, `time`, `sync` and `io`.

#[cfg(feature = "tokio")]
mod bridge;
mod builder;
mod census;
mod control_thread;
mod controllers;
mod cpu_budget;
pub(crate) mod fate;
mod idle;
mod move_error;
mod names;
pub(crate) mod observe;
mod park;
mod placement;
mod placement_rule;
mod pool;
mod probe;
mod registry;
pub(crate) mod scheduler;
mod shared;
mod stage;
mod task;
mod watchdog;
mod worker;
mod workers;

pub use builder::{Group, GroupBuilder, GroupError};
pub use cpu_budget::{CpuBudget, CpuBudgetError};
pub use move_error::MoveError;
pub(crate) use names::Holder;
pub use names::NameError;
pub use placement::AutoMove;
pub(crate) use pool::default_threads;
pub use pool::ThreadRange;
pub(crate) use probe::{Running, TurnProbe};
pub use shared::DEFAULT_BUDGET;
pub(crate) use shared::{GroupShared, Kernel};
pub(crate) use task::{Recorder, Runnable, Task};
pub(crate) use worker::{current_turn, may_linger, on_worker_thread};

#[cfg(all(test, loom))]
pub(crate) use idle::{Idle, SleepDecision};
#[cfg(all(test, loom))]
pub(crate) use park::Parker;
