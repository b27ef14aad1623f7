//! The M:N work-stealing runtime behind [whirl](https://docs.rs/whirl): isolated sequential
//! processes with FIFO inboxes, run by per-group worker pools.
//!
//! Most users depend on the `whirl` crate, which re-exports this one together with the
//! `#[process]` and `#[derive(Message)]` macros; the examples here are written against it.
//!
//! The crate is built in layers; each folder is one concept, and a module only uses the layers
//! below it (ARCHITECTURE.md at the repository root has the map, the post → schedule → handle
//! path, and the numbered invariants that comments cite):
//!
//! | layer | module | what it is |
//! |---|---|---|
//! | 9 | `runtime` | [`Runtime`], its builder, shutdown and signals |
//! | 8 | [`supervision`], [`net`], [`routing`] | supervisors; sockets as processes; routers and process groups |
//! | 7 | `process` | [`Process`], [`Ctx`], [`Addr`]: the process, its inbox and its turn |
//! | 6 | `group` | groups, their worker pools and schedulers ([`scheduler`]) |
//! | 5 | `io` | the socket poller (feature `net`) |
//! | 4 | [`admission`] | message predicates |
//! | 3 | [`control`] | counters, statistics, concurrency controllers |
//! | 2 | `principal` | [`Principal`]: the unit of work seen from outside |
//! | 1 | `lifecycle` | process ids, exit reasons, failures, dead letters ([`failures`]) |
//! | 0 | `isolation`, [`time`], `sync` | what may cross a process boundary; clocks and timers |
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod sync;

pub mod time;

mod isolation;

mod lifecycle;

mod principal;

pub mod control;

pub mod admission;

#[cfg(feature = "net")]
mod io;

mod group;

mod process;

pub mod supervision;

pub mod routing;

#[cfg(feature = "net")]
pub mod net;

mod runtime;

#[cfg(all(test, loom))]
mod loom_tests;

pub use group::{
    AutoMove, Group, GroupBuilder, GroupError, MoveError, NameError, ThreadRange, DEFAULT_BUDGET,
};
#[doc(hidden)]
pub use isolation::allow_shared as __allow_shared;
#[doc(hidden)]
pub use isolation::{Isolated, Message, SharesState};
pub use isolation::{Reply, SharedClient};
#[doc(hidden)]
pub use lifecycle::posted as __posted;
pub use lifecycle::{
    DeadLetter, DeadLetterRecord, DeadLetterSink, Down, ExitReason, Failure, FailureKind,
    ProcessId, QueuedMessage,
};
pub use principal::{Principal, PrincipalBuilder};
#[doc(hidden)]
pub use process::{
    answer as __answer, into_handler_result as __into_handler_result,
    HandlerFuture as __HandlerFuture, HandlerOutput as __HandlerOutput,
};
pub use process::{
    Addr, Answers, CallError, Ctx, HandOverError, HandedOver, Handles, PostError, Process,
    Recipient, ReplyTo, SpawnError, SpawnRefusal, Watch,
};
#[cfg(feature = "metrics")]
pub use runtime::MetricsExporter;
pub use runtime::{AbandonedProcess, Runtime, RuntimeBuilder, RuntimeObserver, ShutdownReport};

pub mod scheduler {
    //! Schedulers: the policy that picks which ready process of a group runs next.
    //!
    //! A group without one uses the built-in work-stealing FIFO. A [`Scheduler`] sees each
    //! [`Ready`] process, with its principal, and hands them back to workers in its own order:
    //! [`PrincipalPriority`] (strict priority with quotas), [`Stride`] (proportional share) and
    //! [`Cohort`] (stage by stage, for locality; [`Fifo`] is its baseline) are the library.
    //!
    //! Independently of its scheduler, a group may have a [`CpuBudget`]
    //! ([`GroupBuilder::cpu_budget`](crate::GroupBuilder::cpu_budget)), AppBackplane's CPU
    //! limitation: per integration period, its workers spend at most a share of the machine's
    //! cores handling messages, then wait for the next period (a *tick*); its messages wait,
    //! none is lost. When the rest of the runtime leaves the CPU idle (every other group has
    //! nothing queued and nothing running, or is waiting on its own budget), a waiting worker
    //! re-arms the budget at once (a *virtual tick*), so a budget never idles the machine.

    pub use crate::group::scheduler::{
        Cohort, Fifo, PrincipalPriority, Ready, Scheduler, Stage, Stride, TurnReport,
    };
    pub use crate::group::{CpuBudget, CpuBudgetError};
}

pub mod failures {
    //! Reporting process failures and abandoned processes to the application
    //! ([`set_failure_hook`]).

    pub use crate::lifecycle::failures::{
        set_failure_hook, take_failure_hook, FailureHook, FailureReport,
    };
}

#[cfg(unix)]
pub mod signal {
    //! Shutting down on SIGINT or SIGTERM ([`wait_for_signal`],
    //! [`Runtime::shutdown_on_signal`](crate::Runtime::shutdown_on_signal)).

    pub use crate::runtime::signal::{wait_for_signal, ShutdownSignal};
}
