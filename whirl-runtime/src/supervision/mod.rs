//! Supervisors with Erlang/OTP semantics (the paper's section III-G): a system process that
//! starts children from [`ChildSpec`]s, monitors them and restarts them.
//!
//! # What an Erlang engineer will recognise
//!
//! * **Strategies** ([`RestartStrategy`]): one-for-one, one-for-all, rest-for-one, and
//!   simple-one-for-one (dynamic children of one [`ChildTemplate`], started with
//!   [`Addr::start_dynamic`](crate::Addr::start_dynamic) and named by process id; by id,
//!   `terminate_child` and friends answer [`SupervisorError::WrongStrategy`], OTP's
//!   `{error, simple_one_for_one}`, and `count_children` reports one spec, the template).
//! * **Restart types** ([`Restart`]): permanent, transient (restarted only after a failure),
//!   temporary (never restarted, not even by a sibling's one-for-all restart, and removed when
//!   it terminates; its start arguments are dropped as soon as it runs, as OTP keeps none).
//! * **Restart intensity**: at most `max_restarts` within `period` (default 1 in 5 s, as in
//!   OTP), measured on an injectable [`Clock`](crate::time::Clock); a zero period is refused at
//!   start, as OTP refuses it. One restart more and the supervisor stops all its children
//!   (reverse order) and fails, so its own supervisor takes over: escalation. One failure is
//!   one restart against the intensity, however many children the strategy restarts for it.
//!   (Shutdown timeouts run on the runtime's timers, in real time; only the intensity period
//!   uses the spec's clock.)
//! * **Restart with backoff** (not in OTP's `supervisor`; Akka's `BackoffSupervisor`):
//!   [`ChildSpec::backoff`] restarts a child whose failures come from outside it after growing
//!   delays ([`Backoff`]), outside the intensity, so that an outage longer than the intensity
//!   allows is ridden out; the exact rule is [below](#riding-out-outages-restart-with-backoff).
//! * **Order**: children start in spec order and stop in reverse order; one-for-all and
//!   rest-for-one stop the affected children in reverse order, then restart them in order.
//! * **Trees**: [`ChildSpec::supervisor`] nests supervisors; stopping one stops its subtree in
//!   order first (its shutdown policy is infinity by default).
//! * **The `shutdown` exit reason**: the supervisor stops children with
//!   [`ExitReason::Shutdown`](crate::ExitReason), neither `Normal` nor a failure (a transient
//!   child is not restarted after it), and exits with it after an ordered stop.
//! * **Names** ([`ChildSpec::named`]): a child's name is re-pointed at each new incarnation,
//!   but never taken from another live process: that start fails with
//!   [`SupervisorError::NameTaken`] carrying the holder's id, OTP's
//!   `{already_started, Pid}` (at the supervisor's own start, the supervisor fails to start,
//!   as OTP's does; at a restart, the supervisor tries again later, each attempt a restart
//!   against the intensity, as OTP's `try_again_restart`).
//! * **Dynamic API** on `Addr<Supervisor<A>>`: `start_child`, `start_dynamic`,
//!   `terminate_child`, `restart_child`, `delete_child`, `which_children`, `which_child`,
//!   `child_spec` (OTP's `get_childspec`), `count_children` (with the restart count).
//!   `start_child`, `restart_child` and `start_dynamic` are synchronous, as OTP's, which wait
//!   for `init`: they answer once the child's `started` hook has returned `Ok`, or with
//!   [`SupervisorError::StartFailed`] if it failed (a new child is then forgotten, a restarted
//!   one stays stopped; neither is restarted for it). An id already in use is
//!   [`SupervisorError::AlreadyStarted`] (running) or [`SupervisorError::AlreadyPresent`]
//!   (stopped), OTP's two cases.
//! * **Typed children**: [`ChildInfo::addr`] gives a child's `Addr<P>` if it is a `P` (a type
//!   check, not a trusted cast). The template's argument type is the supervisor's type
//!   parameter (`Supervisor<A>`, `SupervisorSpec<A>`, from [`ChildTemplate<A>`]), so
//!   `start_dynamic` takes an `A`, checked at compile time, and a static supervisor
//!   (`Supervisor<NoTemplate>`, the default) has no `start_dynamic` at all.
//! * **Significant children and auto-shutdown** (OTP 24): [`ChildSpec::significant`] and
//!   [`SupervisorSpec::auto_shutdown`] ([`AutoShutdown`]): when any, or all, significant
//!   children have terminated on their own and are not restarted, the supervisor stops the
//!   rest and exits `Shutdown`. A child the supervisor stopped (`terminate_child`, a
//!   strategy's stop) does not count, as in OTP; a permanent significant child, or one under
//!   `AutoShutdown::Never`, is a spec error.
//! * **Events** ([`SupervisorEvent`]): child started, exited (with the reason), restarted,
//!   shutdown timed out, intensity exceeded, supervisor terminated; also logged via `tracing`.
//!
//! # Where whirl differs, and why
//!
//! * **The supervisor's own start does not wait for its children's start hooks.** It spawns
//!   its spec's children in order and returns; their `started` hooks run on workers and may
//!   overlap. A child whose start hook fails is then reported as any other failure (a `Down`)
//!   and restarted under the restart intensity, so a child that always fails to start ends
//!   in escalation, where OTP would have failed the supervisor's own start. Why: the
//!   supervisor's `started` hook runs on a worker and cannot wait for messages (the acks of
//!   its children) without blocking that worker, which a child may need to start at all;
//!   and an asynchronous start lets a large tree start in parallel. Restarts by the strategy
//!   are asynchronous for the same reason. Only a child that cannot be spawned at all (its
//!   name is taken) fails the supervisor's start. The dynamic API's starts are synchronous
//!   (above): there the *caller* waits, never the supervisor's worker (the answer is a
//!   message the child's runtime sends when its hook returns).
//! * **Shutdown cannot be forced (no `brutal_kill`).** Processes are never preempted
//!   mid-handler: stopping a worker is `Addr::exit(ExitReason::Shutdown)`, which takes effect
//!   before its next message. A [`Shutdown::Timeout`] bounds how long the supervisor *waits*;
//!   when it expires the supervisor reports [`EventKind::ShutdownTimedOut`], stops monitoring
//!   that incarnation (`demonitor`) and carries on (the exit request stays, so the child
//!   terminates when its handler returns). Why: a thread cannot be interrupted safely in the
//!   middle of arbitrary Rust code, and whirl has no preemption point inside a handler.
//! * **No `{shutdown, Term}` reasons, no exit signals to trap.** `ExitReason::Shutdown`
//!   carries no term; a process that wants to say more fails with a reason. Monitors are
//!   one-way notices (links are two monitors), so a supervisor does not need to trap exits.
//! * **Child specs are data, and are started on the supervisor.** A spec holds an initial
//!   state, or a plain function pointer and its arguments (OTP's `{M, F, A}`), all
//!   [`Isolated`](crate::Isolated): no closure can smuggle shared mutable state into every
//!   incarnation of a child (see [`ChildSpec::worker_with`]). The state is cloned, or the
//!   start function applied to a clone of the arguments, on the supervisor's worker. A start
//!   function (or a child template) that panics fails the supervisor, which stops its other
//!   children and escalates, much as a crash in OTP's `start_child` would; keep start
//!   functions to building state, and put fallible setup in the child's `started` hook, where
//!   a failure is an ordinary, restartable one (or, for the dynamic API, a `StartFailed`).
//! * **Stopping never blocks a worker.** The supervisor stops children one at a time, waiting
//!   for each `Down` as a message; requests arriving meanwhile are answered afterwards.
//! * **A child stopped on request stays stopped** when a sibling's failure restarts the
//!   others under one-for-all or rest-for-one; only children that were running are restarted.
//! * **`terminate_child` also takes a process id under the static strategies** (OTP takes
//!   only the id there): harmless, and convenient when all one holds is a pid.
//! * **`start_child` on a simple-one-for-one supervisor is a separate method,
//!   `start_dynamic`**, typed by the template's argument, rather than `start_child` with a
//!   list of extra arguments checked at run time.
//!
//! # Riding out outages: restart with backoff
//!
//! OTP's defaults (at most 1 restart in 5 s, [`SupervisorSpec::new`]) make the restart
//! intensity a crash-loop detector: a child that needs more restarts than that is taken to be
//! broken, and the failure escalates until a supervisor that can do something about it. A
//! child that fails because something outside it is down (its database, for 3 s) looks the
//! same: each restart finds the database still down and fails at once, the second within 5 s
//! fails the supervisor, then its parent's intensity runs out the same way, and a 3 s outage
//! becomes a dead service. Raising the intensity only hides real crash loops, and a restart at
//! once is wasted while the outage lasts.
//!
//! A child spec with a [`Backoff`] (`ChildSpec::backoff(Backoff::exponential(min, max))`) is
//! restarted after a delay instead. The supervisor is a process: the delay runs on the
//! runtime's timers (`Ctx::post_after`), its worker is never held, and it goes on answering
//! requests and handling other children meanwhile. The rule, next to OTP's:
//!
//! | | OTP (and whirl without backoff) | whirl, a child with a backoff |
//! |---|---|---|
//! | a failed child is restarted | at once | after `min × 2ⁿ⁻¹`, at most `max`, for its `n`th failure in a row (shortened by up to the jitter fraction) |
//! | counted against the intensity | every restart, within `period` | never: its failures are neither recorded in the intensity window nor checked against it |
//! | what bounds a crash loop | more than `max_restarts` in `period` fails the supervisor | the delays (once capped, one restart per `max` at most); and with `max_attempts(k)`, failure `k + 1` in a row fails the supervisor ([`EventKind::BackoffExhausted`]) |
//! | a run of failures ends | (the period slides) | when the incarnation that failed had run at least `reset_after` (default `max`) on the supervisor's clock: its next delay is `min` again |
//!
//! In detail:
//!
//! 1. Only the failures of the child that has the backoff are exempt. Other children's
//!    restarts count as in OTP, also while a backoff child waits; and when another child's
//!    failure restarts the backoff child along with it (one-for-all, rest-for-one), that is an
//!    ordinary restart, immediate and counted.
//! 2. Under one-for-all and rest-for-one, the siblings a backoff child's failure affects are
//!    stopped at once (in reverse order, as always) and restarted with it when its delay is
//!    over, the delay counting from when they are all down: one restart in
//!    [`ChildCounts::restarts`].
//! 3. While it waits the child is stopped: `which_children` shows no pid, `count_children`
//!    does not count it active, `whereis` on its name finds nobody. `terminate_child` leaves it
//!    stopped (the delayed restart is cancelled), `restart_child` starts it at once,
//!    `delete_child` forgets it; each also ends its run of failures. A supervisor that
//!    terminates cancels its pending restarts, and none happens once the runtime is shutting
//!    down.
//! 4. A restart that cannot start (its name is held by another process) is one more failure
//!    in a row, tried again after the next delay (OTP's `try_again_restart` tries again at
//!    once, each attempt counted).
//! 5. Each delayed restart is reported first as [`EventKind::RestartDelayed`] (the attempt
//!    and the delay), then as `ChildRestarted` when it happens.
//!
//! With the default intensity and `Backoff::exponential(100 ms, 5 s)`, a database down for a
//! minute costs its client restarts after 0.1, 0.2, 0.4 ... 3.2 s, then one every 5 s, and
//! the supervisor stays up; a bug that crashes the client soon after every start restarts it
//! every 5 s at most, each restart reported, until `max_attempts`, if set, escalates it.
//!
//! # Stable addressing across restarts
//!
//! A restarted child is a new process with a new id. An `Addr` to the old incarnation stays
//! valid to hold but refers to the terminated process: **posting to it returns
//! [`PostError::Terminated`](crate::PostError::Terminated) with the message inside**, so the
//! sender still has it. Give the child a name ([`ChildSpec::named`]); the supervisor
//! re-registers the name at every start (taking it only from the child's previous
//! incarnation, never from another process), so the sender re-resolves it with
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

// From the bottom up: the vocabulary, events, intensity and backoff; starting a child and what
// is reported about children; recipes and specs; errors; messages; what a stop operation is;
// the supervisor (`process.rs`) and its behaviour by concern (`requests.rs`, `restart.rs`,
// `delayed.rs`, `stop.rs`); the client API.
mod api;
mod backoff;
mod delayed;
mod error;
mod event;
mod info;
mod intensity;
mod kinds;
mod listing;
mod message;
mod process;
mod recipe;
mod requests;
mod restart;
mod spec;
mod start;
mod stop;
mod stop_op;

pub use backoff::Backoff;
pub use error::SupervisorError;
#[cfg(feature = "prometheus")]
pub(crate) use event::restart_counts;
pub use event::{EventKind, EventSink, SupervisorEvent};
pub use info::{ChildCounts, ChildInfo};
pub use kinds::{AutoShutdown, ChildKind, ChildRef, Restart, RestartStrategy, Shutdown};
pub use message::{StartDynamic, SupervisorMsg};
pub use process::Supervisor;
pub use spec::{ChildSpec, ChildTemplate, IntoChildSpec, NoTemplate, SupervisorSpec};
