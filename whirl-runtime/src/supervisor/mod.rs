//! Supervisors with Erlang/OTP semantics (the paper's section III-G): a system process that
//! starts children from [`ChildSpec`]s, monitors them and restarts them.
//!
//! # What an Erlang engineer will recognise
//!
//! * **Strategies** ([`Strategy`]): one-for-one, one-for-all, rest-for-one, and
//!   simple-one-for-one (dynamic children of one [`ChildTemplate`], started with
//!   [`Addr::start_dynamic`](crate::Addr::start_dynamic)).
//! * **Restart types** ([`Restart`]): permanent, transient (restarted only after a failure),
//!   temporary (never restarted, not even by a sibling's one-for-all restart, and removed when
//!   it terminates).
//! * **Restart intensity**: at most `max_restarts` within `period` (default 1 in 5 s, as in
//!   OTP), measured on an injectable [`Clock`](crate::Clock). One restart more and the
//!   supervisor stops all its children (reverse order) and fails, so its own supervisor takes
//!   over: escalation. One failure is one restart against the intensity, however many
//!   children the strategy restarts for it. (Shutdown timeouts run on the runtime's timers,
//!   in real time; only the intensity period uses the spec's clock.)
//! * **Order**: children start in spec order and stop in reverse order; one-for-all and
//!   rest-for-one stop the affected children in reverse order, then restart them in order.
//! * **Trees**: [`ChildSpec::supervisor`] nests supervisors; stopping one stops its subtree in
//!   order first (its shutdown policy is infinity by default).
//! * **Dynamic API** on `Addr<Supervisor>`: `start_child`, `terminate_child`, `restart_child`,
//!   `delete_child`, `which_children`, `count_children` (with the restart count).
//! * **Events** ([`SupervisorEvent`]): child started, exited (with the reason), restarted,
//!   shutdown timed out, intensity exceeded, supervisor terminated; also logged via `tracing`.
//!
//! # Where whirl differs, and why
//!
//! * **Starting is asynchronous.** A spawn returns at once and the child's `started` hook runs
//!   on a worker, so children are *spawned* in order but their start hooks may overlap. A child
//!   whose start hook fails is reported as any other failure (a `Down`) and restarted under
//!   the restart intensity; a child that always fails to start therefore ends in escalation,
//!   where OTP would have failed the supervisor's own start.
//! * **Shutdown cannot be forced.** Processes are never interrupted mid-handler:
//!   stopping a worker is `Addr::exit(ExitReason::Normal)`, which takes effect before its next
//!   message. A [`Shutdown::Timeout`] bounds how long the supervisor *waits*; when it expires
//!   the supervisor reports [`EventKind::ShutdownTimedOut`], stops tracking that incarnation
//!   and carries on (the exit request stays, so the child terminates when its handler
//!   returns). There is no separate `shutdown` exit reason: a child stopped by its supervisor
//!   exits `Normal`, which is why transient children are not restarted after it.
//! * **Child specs are data, and are started on the supervisor.** A spec holds an initial
//!   state, or a plain function pointer and its arguments (OTP's `{M, F, A}`), all
//!   [`Isolated`](crate::Isolated): no closure can smuggle shared mutable state into every
//!   incarnation of a child (see [`ChildSpec::worker_with`]). The state is cloned, or the
//!   start function applied to a clone of the arguments, on the supervisor's worker. A start
//!   function (or a child template) that panics fails the supervisor, which stops its other
//!   children and escalates, much as a crash in OTP's `start_child` would; keep start
//!   functions to building state, and put fallible setup in the child's `started` hook, where
//!   a failure is an ordinary, restartable one.
//! * **Stopping never blocks a worker.** The supervisor stops children one at a time, waiting
//!   for each `Down` as a message; requests arriving meanwhile are answered afterwards.
//! * **A child stopped on request stays stopped** when a sibling's failure restarts the
//!   others under one-for-all or rest-for-one; only children that were running are restarted.
//!
//! # Stable addressing across restarts
//!
//! A restarted child is a new process with a new id. An `Addr` to the old incarnation stays
//! valid to hold but refers to the terminated process: **posting to it returns
//! [`PostError::Terminated`](crate::PostError::Terminated) with the message inside**, so the
//! sender still has it. Give the child a name ([`ChildSpec::named`]); the supervisor
//! re-registers the name at every start, so the sender re-resolves it with
//! [`Runtime::whereis`](crate::Runtime::whereis) (or [`Ctx::whereis`](crate::Ctx::whereis)) and
//! posts again. While the child is restarting, `whereis` returns `None` (its holder has
//! terminated) until the new incarnation is registered. Messages that were *accepted* by the
//! old incarnation but not yet handled when it terminated go to the dead-letter sink, as for
//! any terminated process. No message is lost silently.
//!
//! # The root
//!
//! The root supervisor is the one thing that must not fail. If it does (its intensity is
//! exceeded, or a child supervisor's escalation reaches it), it stops its subtree and
//! terminates like any process: its [`EventKind::Terminated`] event carries the failure, it is
//! logged at error level, and anyone monitoring it gets a `Down`. Nothing waits on it, so
//! nothing hangs.

mod child;
mod error;
mod event;
mod intensity;
mod message;
mod process;
mod requests;
mod restart;
mod spec;
mod stop;

pub use child::{ChildCounts, ChildInfo};
pub use error::SupervisorError;
pub use event::{EventKind, EventSink, SupervisorEvent};
pub use message::{ChildRef, SupervisorMsg};
pub use process::Supervisor;
pub use spec::{ChildKind, ChildSpec, ChildTemplate, Restart, Shutdown, Strategy, SupervisorSpec};
