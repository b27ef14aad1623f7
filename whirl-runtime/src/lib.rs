//! The M:N work-stealing runtime behind [whirl](https://docs.rs/whirl): isolated sequential
//! processes with FIFO inboxes, run by per-group worker pools.
//!
//! Most users depend on the `whirl` crate, which re-exports this one together with the
//! `#[process]` and `#[derive(Message)]` macros; the examples here are written against it.
//!
//! The crate is built in layers; each folder is one concept, and a module only uses the layers
//! below it. ARCHITECTURE.md at the repository root has the map, the post → schedule → handle
//! path, and the numbered invariants that comments cite. Its table of layers is the
//! authoritative one; this is a copy, row for row, and the architecture tests fail if the two
//! differ or if an import is not one the table allows:
//!
//! | layer | module | what it is | uses |
//! |---|---|---|---|
//! | 11 | `runtime` | `Runtime` and its builder, shutdown and its report, signals | everything below |
//! | 10 | `supervision` | OTP supervisors: specs, strategies, restart intensity, ordered shutdown | `process` and below |
//! | 10 | `net` | sockets as processes: `Acceptor`, `SocketConnection`, framing, TLS (feature `tls`) | `process`, `io` and below |
//! | 10 | `routing` | routers (a pool of processes behind one address: strategies, restarts that keep the queue, resizing) and process groups (`pg`) | `process` and below |
//! | 9 | `process` | the process model (`Process`, `Handles`, `Ctx`), inbox and mailbox, the turn, `Addr`, spawning | `group` and below |
//! | 8 | `group` | groups: the shared workers and dedicated pools, schedulers, the kernel (ids, registry, names, timers, dead letters), the controller thread | `io`, `admission`, `control` and below |
//! | 7 | `io` | the socket poller (mio), feature `net` | `isolation` |
//! | 6 | `admission` | message predicates: `Offer`, `Completion`, the library, combinators | `control`, `principal`, `lifecycle`, `time` |
//! | 5 | `control` | counters, statistics, concurrency controllers | `principal`, `lifecycle`, `isolation` |
//! | 4 | `principal` | `Principal`, its builder, `Estimate`, `MessageType` | `isolation` |
//! | 3 | `lifecycle` | `ProcessId`, `ExitReason`, `Failure`, `Down`, dead letters, the failure hook, what reaches stderr without a subscriber | `isolation` |
//! | 2 | `time` | clocks (`Clock`, `ManualClock`, `CoarseClock`) and timers | `isolation` |
//! | 1 | `isolation` | `Isolated`, `Message`, `SharesState`, `SharedClient` | nothing |
//! | 0 | `sync` | the std or loom primitives the lock-free code is written against | nothing |
//!
//! Of these, [`time`], [`control`], [`admission`], [`supervision`], [`routing`] and [`net`] are
//! public; the others are reached through what the root re-exports ([`Runtime`], [`Process`],
//! [`Ctx`], [`Addr`], [`Principal`], [`scheduler`], [`failures`]...).
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
// At the root, where `cargo whirl check`'s driver looks for the marker by name.
#[doc(hidden)]
pub use isolation::allow_shared as __allow_shared;
#[doc(hidden)]
pub use isolation::{Isolated, Message, SharesState};
pub use isolation::{Reply, SharedClient};
pub use lifecycle::{
    DeadLetter, DeadLetterRecord, DeadLetterSink, Down, ExitReason, Failure, FailureKind,
    ProcessId, QueuedMessage, Unanswered,
};
pub use principal::{Principal, PrincipalBuilder, PrincipalError};
pub use process::{
    Addr, Answers, CallError, Ctx, HandOverError, HandedOver, Handles, PostError, Process,
    Recipient, ReplyTo, SpawnError, SpawnRefusal, Spawner, Watch,
};
#[cfg(feature = "prometheus")]
pub use runtime::prometheus;
#[cfg(feature = "metrics")]
pub use runtime::MetricsExporter;
pub use runtime::{AbandonedProcess, Runtime, RuntimeBuilder, RuntimeObserver, ShutdownReport};

/// Support for the code `#[process]` generates (re-exported by `whirl::__private`). Not a
/// public API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    pub use crate::lifecycle::posted;
    pub use crate::process::{answer, into_handler_result, HandlerFuture, HandlerOutput};
}

pub mod request {
    //! One way to send: [`Sender`]'s verbs (`post`, `call`, `ask`, `request`,
    //! `request_with`) and the [`Request`] builder with its options (`on_behalf`, `timeout`,
    //! `no_timeout`), for [`Addr`](crate::Addr), [`Recipient`](crate::Recipient),
    //! [`Router`](crate::routing::Router) and whirl-dist's `RemoteAddr`. Each implements
    //! [`Deliver`] (and [`Answering`] where it knows the answer's type); the prelude brings
    //! [`Sender`] into scope.
    //!
    //! A caller that gives up (timed out, or dropped its future) does not recall its request:
    //! the process still handles it, and the answer is discarded
    //! ([`ReplyTo::is_awaited`](crate::ReplyTo::is_awaited) says whether anyone still waits).

    pub use crate::process::{
        Answering, Ask, Deliver, Plain, Request, Sender, WithReply, DEFAULT_TIMEOUT,
    };
}

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
    //! [`Runtime::shutdown_on_signal`](crate::Runtime::shutdown_on_signal)), and reloading on
    //! SIGHUP ([`ServiceSignals`]).

    pub use crate::runtime::signal::{
        wait_for_signal, ServiceSignal, ServiceSignals, ShutdownSignal,
    };
}
