//! The M:N work-stealing runtime behind [whirl](https://docs.rs/whirl): isolated sequential
//! processes with FIFO inboxes, run by per-group worker pools.
//!
//! Most users depend on the `whirl` crate, which re-exports this one together with the
//! `#[process]` and `#[derive(Message)]` macros. The pieces, in the order a message meets
//! them:
//!
//! * [`Addr::post`] — liveness check, the group's [`MessagePredicate`], then the process's
//!   lock-free inbox (`inbox.rs`). Never blocks; failures return the message.
//! * The scheduling token (`mailbox.rs`) — at most one thread runs a process at a time.
//! * The group's scheduler (`group.rs`, `worker.rs`, `idle.rs`) — crossbeam-deque work
//!   stealing with a LIFO slot, idle workers parked without lost wake-ups.
//! * The process turn (`cell.rs`) — up to the group's budget of messages, panics contained,
//!   termination with monitors, links and dead letters; completions reported to predicates
//!   that learn from them (`observe.rs`).
//!
//! Around that path: the predicate library (`predicate/`: queue length, cost budget, utility
//! per cost, token bucket, per-priority thresholds, SEDA's response-time controllers,
//! combinators), principals, OTP-style supervisors (`supervisor/`) with a names registry,
//! timers, request/reply, and an injectable [`Clock`] for everything that depends on time.
#![warn(missing_docs)]

mod addr;
mod cell;
mod client;
mod clock;
mod control_thread;
pub mod controller;
mod counters;
mod ctx;
mod dead_letter;
mod error;
pub mod failures;
mod group;
mod idle;
mod inbox;
mod isolated;
#[cfg(all(test, loom))]
mod loom_tests;
mod mailbox;
mod names;
#[cfg(feature = "net")]
pub mod net;
mod observe;
mod park;
mod pool;
mod predicate;
mod principal;
mod probe;
mod process;
mod registry;
mod reply;
mod runtime;
pub mod scheduler;
mod shutdown;
#[cfg(unix)]
pub mod signal;
mod spawn;
pub mod stats;
pub mod supervisor;
mod sync;
mod timer;
mod worker;

pub use addr::{Addr, Recipient};
pub use client::SharedClient;
pub use clock::{Clock, ManualClock, SystemClock};
pub use counters::MessageCounts;
pub use ctx::Ctx;
pub use dead_letter::{DeadLetter, DeadLetterSink};
pub use error::{CallError, PostError, SpawnError, SpawnRefusal};
pub use group::{Group, GroupBuilder, DEFAULT_BUDGET};
#[doc(hidden)]
pub use isolated::{Isolated, Message, SharesState};
pub use names::NameError;
pub use pool::ThreadRange;
pub use predicate::{
    And, ClassResponseTime, CoarseClock, Completion, ControllerParams, CostBudget, Estimate,
    MessagePredicate, Not, Offer, Or, PredicateExt, PriorityThresholds, QueueLength, ResponseTime,
    SessionConsistent, TokenBucket, UtilityPerCost,
};
pub use principal::Principal;
pub use process::{Down, ExitReason, Failure, FailureKind, Handles, Process, ProcessId};
pub use reply::ReplyTo;
pub use runtime::{Runtime, RuntimeBuilder};
pub use shutdown::{AbandonedProcess, ShutdownReport};
pub use stats::{GroupStats, LatencySummary, PrincipalCounts, RuntimeStats};
pub use supervisor::{
    AutoShutdown, ChildCounts, ChildInfo, ChildKind, ChildRef, ChildSpec, ChildTemplate, EventKind,
    NoTemplate, Restart, Shutdown, StartDynamic, Strategy, Supervisor, SupervisorError,
    SupervisorEvent, SupervisorMsg, SupervisorSpec,
};
pub use timer::TimerHandle;
