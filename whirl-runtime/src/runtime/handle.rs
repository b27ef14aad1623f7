//! The runtime: a node with a default group, more groups on demand, the dead-letter sink,
//! timers, and orderly shutdown.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::shutdown::{AbandonedProcess, ShutdownReport};
use crate::control::{MessageCounts, ProcessDetail, ProcessInfo, ProcessQuery, RuntimeStats};
use crate::group::{
    default_threads, Group, GroupBuilder, GroupError, Kernel, NameError, Running, DEFAULT_BUDGET,
};
use crate::lifecycle::failures::{self, FailureReport};
use crate::lifecycle::{default_sink, DeadLetter, DeadLetterSink, ExitReason, ProcessId};

use crate::process::{Addr, Process, Spawner};
use crate::time::shared_clock;

/// How long a graceful shutdown waits, after draining, for handlers still running to return
/// before it reports their processes as abandoned (and for their workers to exit).
const GRACEFUL_PATIENCE: Duration = Duration::from_secs(5);
/// The same for a shutdown with a deadline and for a dropped runtime: the bound, beyond the
/// deadline, documented on [`Runtime::shutdown_timeout`].
pub(crate) const ABANDON_GRACE: Duration = Duration::from_millis(100);

/// Configures a [`Runtime`].
#[must_use = "a runtime builder does nothing until `build` is called"]
pub struct RuntimeBuilder {
    threads: usize,
    budget: usize,
    lifo_slot: bool,
    slow_turn_threshold: Option<Duration>,
    dead_letters: DeadLetterSink,
    ask_timeout: Option<Duration>,
    stepped: bool,
}

impl RuntimeBuilder {
    /// How long `call` and `ask` wait for an answer when the request does not say
    /// (default [`DEFAULT_TIMEOUT`](crate::request::DEFAULT_TIMEOUT), 5 s, as Erlang's
    /// `gen_server:call`; `None` waits forever). A caller that gives up does not recall its
    /// request: see [`request`](crate::request).
    pub fn ask_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.ask_timeout = timeout;
        self
    }

    /// The runtime's shared workers (default: one per core): the threads every group runs on
    /// unless it owns threads ([`GroupBuilder::threads`]), the default group among them.
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// Run budget of the default group: messages per turn before a process yields.
    pub fn budget(mut self, budget: usize) -> Self {
        self.budget = budget.max(1);
        self
    }

    /// Whether the default group uses a LIFO slot (see [`GroupBuilder::lifo_slot`]).
    pub fn lifo_slot(mut self, enabled: bool) -> Self {
        self.lifo_slot = enabled;
        self
    }

    /// How long a turn of the default group may hold a worker before it is reported as slow
    /// (default 100 ms; `None` turns the report off). See
    /// [`GroupBuilder::slow_turn_threshold`].
    pub fn slow_turn_threshold(mut self, threshold: Option<Duration>) -> Self {
        self.slow_turn_threshold = threshold;
        self
    }

    /// Where dead letters go (default: a `tracing` debug event). The sink runs on the thread
    /// that terminated the process.
    ///
    /// A closure that may share state (`Send + Sync + 'static`, not
    /// [`Isolated`](crate::Isolated)): the sink is an observer outside every process, and
    /// collecting dead letters somewhere shared (a metrics counter, a test's vector) is its job.
    pub fn dead_letters(mut self, sink: impl Fn(DeadLetter) + Send + Sync + 'static) -> Self {
        self.dead_letters = Box::new(sink);
        self
    }

    /// No worker threads: every group's turns run only when the caller asks, one at a time,
    /// with [`Runtime::run_one`]. For a simulator that runs several runtimes in one thread
    /// and decides, from a seed, which turn runs next, so that a run replays exactly.
    ///
    /// Everything a turn does is as on worker threads (mailboxes, budgets, schedulers,
    /// predicates, supervision); what depends on threads or on the time passing does not
    /// happen unless the caller makes it: the timer thread (`post_after`, request timeouts),
    /// the controller thread (thread, batching and concurrency controllers, the slow-turn
    /// watchdog) and CPU budgets still run on real time, and a blocking call made from inside
    /// a turn waits forever, since nothing else runs. [`Runtime::block_until_idle`] and a
    /// graceful shutdown wait for turns that only the caller can run.
    pub fn stepped(mut self) -> Self {
        self.stepped = true;
        self
    }

    /// Starts the runtime and its default group, or says why its workers could not start.
    pub fn build(self) -> Result<Runtime, GroupError> {
        // The clock behind every message's enqueue stamp (`group/observe.rs`).
        let _ = shared_clock();
        super::panics::install();
        let kernel = Arc::new(Kernel::new(
            self.dead_letters,
            self.ask_timeout,
            self.stepped,
            self.threads,
        ));
        let default_group = GroupBuilder::new(Arc::clone(&kernel), "default".into())
            .budget(self.budget)
            .lifo_slot(self.lifo_slot)
            .slow_turn_threshold(self.slow_turn_threshold)
            .build()?;
        Ok(Runtime {
            kernel,
            default_group,
            shut_down: AtomicBool::new(false),
        })
    }
}

/// A whirl node: worker groups running processes.
///
/// Dropping a runtime shuts it down without waiting for inboxes to drain (see
/// [`Runtime::shutdown_graceful`] for the orderly way).
pub struct Runtime {
    pub(crate) kernel: Arc<Kernel>,
    default_group: Group,
    shut_down: AtomicBool,
}

/// Reads a runtime's statistics without keeping it alive: [`Runtime::observer`].
#[derive(Clone)]
pub struct RuntimeObserver {
    kernel: std::sync::Weak<Kernel>,
}

impl RuntimeObserver {
    /// A snapshot of every group's statistics, or `None` once the runtime is shutting down or
    /// gone.
    pub fn stats(&self) -> Option<RuntimeStats> {
        let kernel = self.kernel.upgrade()?;
        (!kernel.is_closing()).then(|| kernel.stats())
    }

    /// The first `query.limit` live processes in `query.sort` order (see
    /// [`Runtime::processes`]), or `None` once the runtime is shutting down or gone.
    pub fn processes(&self, query: &ProcessQuery) -> Option<Vec<ProcessInfo>> {
        let kernel = self.kernel.upgrade()?;
        (!kernel.is_closing()).then(|| kernel.processes(query))
    }

    /// Process `id` in detail (see [`Runtime::process_info`]), or `None` if it is not alive
    /// or the runtime is shutting down or gone.
    pub fn process_info(&self, id: ProcessId) -> Option<ProcessDetail> {
        let kernel = self.kernel.upgrade()?;
        if kernel.is_closing() {
            return None;
        }
        kernel.process_info(id)
    }

    /// Whether the runtime still runs (not shutting down, not dropped).
    pub fn is_running(&self) -> bool {
        self.kernel.upgrade().is_some_and(|k| !k.is_closing())
    }
}

impl std::fmt::Debug for RuntimeObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeObserver")
            .field("running", &self.is_running())
            .finish()
    }
}

impl Default for Runtime {
    fn default() -> Self {
        Runtime::new()
    }
}

impl Runtime {
    /// A runtime with one shared worker per core, its default group on them.
    ///
    /// # Panics
    ///
    /// If the operating system refuses to start the shared workers; build
    /// one with [`Runtime::builder`] to handle that.
    pub fn new() -> Self {
        match Runtime::builder().build() {
            Ok(runtime) => runtime,
            Err(e) => panic!("cannot start the whirl runtime: {e}"),
        }
    }

    /// Configures a runtime.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder {
            threads: default_threads(),
            budget: DEFAULT_BUDGET,
            lifo_slot: true,
            slow_turn_threshold: Some(GroupBuilder::DEFAULT_SLOW_TURN_THRESHOLD),
            dead_letters: default_sink(),
            ask_timeout: Some(crate::request::DEFAULT_TIMEOUT),
            stepped: false,
        }
    }

    /// On a [stepped](RuntimeBuilder::stepped) runtime, runs one turn: `pick` is given how
    /// many groups have a process ready (in the order the groups were made) and returns the
    /// index of the one to run, and that group's scheduler chooses the process, as a worker
    /// would. Returns the messages the turn handled, or `None` if no process was ready (or
    /// the runtime is not stepped).
    pub fn run_one(&self, pick: impl FnOnce(usize) -> usize) -> Option<usize> {
        if !self.kernel.stepped {
            return None;
        }
        let ready: Vec<_> = self
            .kernel
            .groups()
            .into_iter()
            .filter(|g| g.has_visible_work())
            .collect();
        if ready.is_empty() {
            return None;
        }
        let chosen = pick(ready.len()).min(ready.len() - 1);
        ready[chosen].run_stepped()
    }

    /// Starts configuring a new group with its own workers.
    pub fn group(&self, name: impl Into<String>) -> GroupBuilder {
        GroupBuilder::new(Arc::clone(&self.kernel), name.into())
    }

    /// The default group.
    pub fn default_group(&self) -> &Group {
        &self.default_group
    }

    /// The runtime's process groups, for publish/subscribe (Erlang's `pg`):
    /// [`routing::ProcessGroups`](crate::routing::ProcessGroups).
    pub fn process_groups(&self) -> crate::routing::ProcessGroups {
        crate::routing::ProcessGroups::of_runtime(&self.default_group)
    }

    /// The first group built with `name`, if any.
    pub fn group_named(&self, name: &str) -> Option<Group> {
        self.kernel.group_named(name).map(Group::from_shared)
    }

    /// Spawns a process in the group it declares ([`Process::GROUP`]), or else in the default
    /// group: the shorthand of [`spawner`](Self::spawner) with no options.
    pub fn spawn<P: Process>(&self, state: P) -> Addr<P> {
        self.spawner().spawn(state)
    }

    /// A [`Spawner`] to choose a process's group and principal, or to have a process that
    /// cannot run where it was asked to refused instead of failed
    /// ([`try_spawn`](Spawner::try_spawn)).
    pub fn spawner(&self) -> Spawner<'_> {
        Spawner::new(self.default_group.shared(), None, None)
    }

    /// The live process registered as `name`, if it is a `P` (`None` for an unknown name, a
    /// terminated holder, or another process type). Supervisors register their named children
    /// here at every (re)start, so a name reaches the current incarnation; see
    /// [`ChildSpec::named`](crate::supervision::ChildSpec::named).
    pub fn whereis<P: Process>(&self, name: &str) -> Option<Addr<P>> {
        self.kernel.names.whereis::<Addr<P>>(name)
    }

    /// Registers `addr` as `name`. Fails, handing the name back, if another live process holds
    /// it; a name whose holder terminated is free again.
    pub fn register<P: Process>(&self, name: &str, addr: &Addr<P>) -> Result<(), NameError> {
        self.kernel.names.register(name, Box::new(addr.clone()))
    }

    /// Forgets `name`; returns whether it was registered.
    pub fn unregister(&self, name: &str) -> bool {
        self.kernel.names.unregister(name, None)
    }

    /// Message counters summed over all groups.
    pub fn counts(&self) -> MessageCounts {
        self.kernel.counts()
    }

    /// The runtime's socket poller (feature `net`), started on first use. See
    /// [`net`](crate::net).
    #[cfg(feature = "net")]
    pub fn net(&self) -> std::io::Result<crate::net::Net> {
        self.kernel.net()
    }

    /// A snapshot of every group's statistics (see [`Group::stats`]).
    pub fn stats(&self) -> RuntimeStats {
        self.kernel.stats()
    }

    /// The first `query.limit` live processes in `query.sort` order, with their counters:
    /// the process table of a console, and what finds the process whose queue grows
    /// (`ProcessQuery::top(ProcessSort::QueueLength, 10)`). The figures are defined on
    /// [`ProcessInfo`].
    ///
    /// The walk reads a few atomics per live process, under the process table's shard locks
    /// a chunk at a time (spawns and terminations wait for one chunk at most; workers
    /// running processes never wait); memory is O(`limit`). It costs about 130 ns per live
    /// process on the calling thread (a million idle processes: 125 to 150 ms on a shared
    /// 2-core machine): call it from a thread of your own or a console, not per message.
    ///
    /// ```
    /// use whirl::control::{ProcessQuery, ProcessSort};
    /// use whirl::prelude::*;
    ///
    /// #[derive(Message)]
    /// struct Ping;
    ///
    /// #[process]
    /// struct Idle;
    /// #[process]
    /// impl Idle {
    ///     #[handle]
    ///     fn ping(&mut self, _: Ping) {}
    /// }
    ///
    /// let rt = Runtime::new();
    /// let idle = rt.spawn(Idle);
    /// rt.block_until_idle();
    /// let top = rt.processes(&ProcessQuery::top(ProcessSort::Turns, 5));
    /// assert!(top.iter().any(|p| p.id == idle.id() && p.turns >= 1));
    /// ```
    pub fn processes(&self, query: &ProcessQuery) -> Vec<ProcessInfo> {
        self.kernel.processes(query)
    }

    /// Live process `id` in detail: its row of the table, the processes it monitors and
    /// that monitor it, its links, its supervisor, the recent failures of its line (see
    /// [`ProcessDetail`]); `None` if it is not alive.
    pub fn process_info(&self, id: ProcessId) -> Option<ProcessDetail> {
        self.kernel.process_info(id)
    }

    /// A handle that reads this runtime's statistics from any thread, later, without keeping
    /// the runtime alive (for observers that outlive a borrow: a console, an exporter).
    pub fn observer(&self) -> RuntimeObserver {
        RuntimeObserver {
            kernel: Arc::downgrade(&self.kernel),
        }
    }

    /// The tokio runtime this runtime owns for async handlers (feature `tokio`), started on
    /// first use: for spawning tokio tasks next to the processes, or building clients that
    /// must be created inside a tokio context. `None` if it could not be started.
    #[cfg(feature = "tokio")]
    pub fn tokio_handle(&self) -> Option<tokio::runtime::Handle> {
        self.kernel.tokio.handle().cloned()
    }

    /// Processes alive now.
    pub fn live_processes(&self) -> usize {
        self.kernel.registry.len()
    }

    /// Blocks until no message is queued or being handled anywhere and no process is
    /// scheduled. Pending timers do not count. For tests, examples and `main`.
    pub fn block_until_idle(&self) {
        self.wait_until(None, || self.kernel.is_quiescent());
    }

    /// Like [`Runtime::block_until_idle`], giving up after `timeout`; returns whether the
    /// runtime became idle.
    pub fn block_until_idle_timeout(&self, timeout: Duration) -> bool {
        self.wait_until(Some(timeout), || self.kernel.is_quiescent())
    }

    fn wait_until(&self, timeout: Option<Duration>, done: impl Fn() -> bool) -> bool {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut pause = Duration::from_micros(20);
        loop {
            if done() {
                return true;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return false;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(2));
        }
    }

    /// Orderly shutdown: stops accepting posts from outside the runtime, lets every inbox
    /// drain (handlers may still post to each other), terminates every process normally
    /// (running its `terminated` hook), then joins the workers.
    ///
    /// Waits as long as the processes keep working; see [`Runtime::shutdown_timeout`] for a
    /// bounded version. A handler still running once everything else is done gets 5 s to
    /// return; after that its process is reported as abandoned (see [`ShutdownReport`]).
    pub fn shutdown_graceful(self) -> ShutdownReport {
        self.shutdown(None, GRACEFUL_PATIENCE)
    }

    /// Like [`Runtime::shutdown_graceful`], but after `timeout` of draining, terminates the
    /// remaining processes anyway: their `terminated` hooks run and their queued messages go
    /// to the dead-letter sink, on the calling thread if no worker is free to do it.
    ///
    /// Returns within `timeout` plus 100 ms (the grace a running handler gets to return) plus
    /// the time the hooks and the dead-letter sink take. A process whose handler has not
    /// returned by then is abandoned: listed in the report with the message it is handling,
    /// and terminated (hook run, inbox dead-lettered) as soon as that handler returns. Every
    /// message accepted is handled, rejected or dead-lettered; none is dropped.
    pub fn shutdown_timeout(self, timeout: Duration) -> ShutdownReport {
        self.shutdown(Some(timeout), ABANDON_GRACE)
    }

    /// Blocks until the process receives SIGINT or SIGTERM, then shuts down: like
    /// [`Runtime::shutdown_timeout`] with `grace` for draining. Returns the signal and the
    /// report. The one call a long-running service's `main` ends with; to do something between
    /// the signal and the shutdown (stop accepting connections), call
    /// [`signal::wait_for_signal`](crate::signal::wait_for_signal) and then shut down.
    ///
    /// # Errors
    ///
    /// If the signal handlers cannot be installed; the runtime is then shut down at once.
    #[cfg(unix)]
    pub fn shutdown_on_signal(
        self,
        grace: Duration,
    ) -> std::io::Result<(crate::signal::ShutdownSignal, ShutdownReport)> {
        match crate::signal::wait_for_signal() {
            Ok(signal) => Ok((signal, self.shutdown_timeout(grace))),
            Err(e) => {
                self.shutdown_timeout(Duration::ZERO);
                Err(e)
            }
        }
    }

    /// `grace` bounds each of the waits after draining: for running handlers to return, and
    /// for workers to exit.
    fn shutdown(&self, drain_timeout: Option<Duration>, grace: Duration) -> ShutdownReport {
        let began = Instant::now();
        let _span = tracing::info_span!("shutdown", ?drain_timeout).entered();
        if self.shut_down.swap(true, Ordering::AcqRel) {
            return ShutdownReport {
                drained: true,
                ..ShutdownReport::default()
            };
        }
        let groups = self.kernel.groups();
        let count = || -> MessageCounts { groups.iter().map(|g| g.counters.snapshot()).sum() };
        let before = count();
        self.kernel.start_closing();
        let drained = self.wait_until(drain_timeout, || self.kernel.is_quiescent());
        self.kernel.timers.stop();
        self.kernel.control.stop();
        let abandoned = self.terminate_all(grace);
        #[cfg(feature = "net")]
        if let Some(net) = self.kernel.take_net() {
            net.stop();
        }
        self.stop_workers(grace);
        // Last: the processes whose futures it drove are gone.
        #[cfg(feature = "tokio")]
        self.kernel.tokio.shut_down();
        let after = count();
        let report = ShutdownReport {
            drained,
            handled: after.handled - before.handled,
            dead_lettered: after.dead_lettered - before.dead_lettered,
            terminated: after.terminated - before.terminated,
            abandoned,
            cancelled_handlers: self
                .kernel
                .cancelled_by_shutdown
                .load(std::sync::atomic::Ordering::Relaxed),
            elapsed: began.elapsed(),
        };
        if !report.abandoned.is_empty() {
            failures::report(FailureReport::ShutdownAbandoned {
                report: report.to_string(),
            });
        }
        report
    }

    /// Asks every live process to terminate normally, terminates on this thread those no
    /// worker runs, and waits (at most `grace` without progress) for handlers that are still
    /// running. Returns the processes left running.
    fn terminate_all(&self, grace: Duration) -> Vec<AbandonedProcess> {
        let registry = &self.kernel.registry;
        let kill_all = || {
            for process in registry.live() {
                process.kill(ExitReason::Normal);
            }
        };
        kill_all();
        let mut stalled_since: Option<Instant> = None;
        loop {
            // Killing an idle process queues it; so do monitors told of a termination. Take
            // whatever is queued, wherever, and terminate it here: workers stuck in a handler
            // would never get to it.
            let rescued: usize = self.kernel.groups().iter().map(|g| g.rescue()).sum();
            if registry.len() == 0 {
                return Vec::new();
            }
            if rescued > 0 {
                stalled_since = None;
                continue;
            }
            // Nothing queued: what is left is running on a worker (or was spawned meanwhile,
            // by a terminating supervisor: kill it too).
            let now = Instant::now();
            if now.duration_since(*stalled_since.get_or_insert(now)) >= grace {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
            kill_all();
        }
        self.abandoned()
    }

    /// The live processes, with what each is running according to the workers' probes.
    fn abandoned(&self) -> Vec<AbandonedProcess> {
        let groups = self.kernel.groups();
        let running: Vec<(String, Running)> = groups
            .iter()
            .flat_map(|g| g.running().into_iter().map(move |r| (g.name.clone(), r)))
            .collect();
        let mut abandoned: Vec<AbandonedProcess> = self
            .kernel
            .registry
            .live()
            .into_iter()
            .map(|process| {
                let id = process.id();
                let found = running.iter().find(|(_, r)| r.process == id);
                AbandonedProcess {
                    id,
                    name: self.kernel.names.name_of(id),
                    group: found
                        .map(|(g, _)| g.clone())
                        .unwrap_or_else(|| process.group_name().to_owned()),
                    message_type: found.and_then(|(_, r)| r.message),
                    running_for: found.map_or(Duration::ZERO, |(_, r)| r.for_how_long),
                }
            })
            .collect();
        abandoned.sort_by_key(|p| p.id);
        abandoned
    }

    /// Stops every group's workers (terminating what is still queued), joining those that
    /// finish within `patience` and leaving any stuck in a never-ending handler detached, so
    /// shutdown cannot hang.
    fn stop_workers(&self, patience: Duration) {
        let groups = self.kernel.take_groups();
        let mut handles: Vec<JoinHandle<()>> = groups.iter().flat_map(|g| g.stop()).collect();
        if let Some(workers) = self.kernel.take_workers() {
            handles.extend(workers.stop());
        }
        let deadline = Instant::now() + patience;
        for handle in handles {
            while !handle.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            if handle.is_finished() {
                let _ = handle.join();
            }
        }
    }
}

impl Drop for Runtime {
    /// A dropped runtime shuts down like [`Runtime::shutdown_timeout`] with a zero timeout:
    /// nothing accepted is lost, and processes stuck in a handler are reported (a `tracing`
    /// warning) and abandoned.
    fn drop(&mut self) {
        self.shutdown(Some(Duration::ZERO), ABANDON_GRACE);
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("groups", &self.kernel.groups().len())
            .field("live_processes", &self.live_processes())
            .finish_non_exhaustive()
    }
}
