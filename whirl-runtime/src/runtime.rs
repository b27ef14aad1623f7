//! The runtime: a node with a default group, more groups on demand, the dead-letter sink,
//! timers, and orderly shutdown.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::addr::Addr;
use crate::control_thread::ControlThread;
use crate::counters::MessageCounts;
use crate::dead_letter::{default_sink, DeadLetter, DeadLetterSink};
use crate::error::SpawnError;
use crate::group::{default_threads, Group, GroupBuilder, GroupShared, DEFAULT_BUDGET};
use crate::names::{NameError, Names};
use crate::principal::Principal;
use crate::probe::Running;
use crate::process::{ExitReason, Process, ProcessId};
use crate::registry::Registry;
use crate::shutdown::{AbandonedProcess, ShutdownReport};
use crate::spawn::{spawn, try_spawn, Placement};
use crate::stats::{GroupStats, RuntimeStats};
use crate::timer::Timers;

/// How long a graceful shutdown waits, after draining, for handlers still running to return
/// before it reports their processes as abandoned (and for their workers to exit).
const GRACEFUL_PATIENCE: Duration = Duration::from_secs(5);
/// The same for a shutdown with a deadline and for a dropped runtime: the bound, beyond the
/// deadline, documented on [`Runtime::shutdown_timeout`].
pub(crate) const ABANDON_GRACE: Duration = Duration::from_millis(100);

pub(crate) struct RuntimeShared {
    groups: Mutex<Vec<Arc<GroupShared>>>,
    next_id: AtomicU64,
    closing: AtomicBool,
    dead_letters: DeadLetterSink,
    pub(crate) registry: Registry,
    pub(crate) timers: Timers,
    pub(crate) names: Names,
    pub(crate) control: Arc<ControlThread>,
    #[cfg(feature = "net")]
    net: Mutex<Option<crate::net::Net>>,
}

impl RuntimeShared {
    pub(crate) fn next_process_id(&self) -> ProcessId {
        ProcessId(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    #[inline]
    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Relaxed)
    }

    /// Hands a letter to the user's sink. The sink runs on a worker (or a poster's thread):
    /// a panic in it is contained and logged, never allowed to kill the thread.
    pub(crate) fn dead_letter(&self, letter: DeadLetter) {
        let sink = &self.dead_letters;
        if catch_unwind(AssertUnwindSafe(|| sink(letter))).is_err() {
            tracing::error!("the dead-letter sink panicked; the letter is dropped");
        }
    }

    pub(crate) fn add_group(&self, group: Arc<GroupShared>) {
        let mut groups = self.groups.lock();
        if groups.iter().any(|g| g.name == group.name) {
            tracing::warn!(
                group = %group.name,
                "a group with this name already exists; lookups by name find the first one"
            );
        }
        groups.push(group);
    }

    /// The first group built with `name`.
    pub(crate) fn group_named(&self, name: &str) -> Option<Arc<GroupShared>> {
        self.groups.lock().iter().find(|g| g.name == name).cloned()
    }

    /// The runtime's poller, started on first use.
    #[cfg(feature = "net")]
    pub(crate) fn net(&self) -> std::io::Result<crate::net::Net> {
        let mut net = self.net.lock();
        if let Some(n) = &*net {
            return Ok(n.clone());
        }
        if self.is_closing() {
            return Err(std::io::Error::other("the runtime is shutting down"));
        }
        let started = crate::net::Net::start()?;
        *net = Some(started.clone());
        Ok(started)
    }

    pub(crate) fn stats(&self) -> RuntimeStats {
        let groups: Vec<GroupStats> = self.groups().iter().map(|g| g.stats()).collect();
        RuntimeStats {
            counts: groups.iter().map(|g| g.counts).sum(),
            live_processes: self.registry.len(),
            groups,
        }
    }

    pub(crate) fn groups(&self) -> Vec<Arc<GroupShared>> {
        self.groups.lock().clone()
    }

    fn counts(&self) -> MessageCounts {
        self.groups().iter().map(|g| g.counters.snapshot()).sum()
    }

    /// Whether the whole runtime was quiescent at one instant during the reading: all
    /// groups' "done" counters are read before any "started" counter.
    fn is_quiescent(&self) -> bool {
        let groups = self.groups();
        let done: Vec<_> = groups.iter().map(|g| g.counters.read_done()).collect();
        std::sync::atomic::fence(Ordering::SeqCst);
        groups
            .iter()
            .zip(done)
            .all(|(g, done)| g.counters.read_started().is_quiescent_with(&done))
    }
}

/// Configures a [`Runtime`].
#[must_use = "a runtime builder does nothing until `build` is called"]
pub struct RuntimeBuilder {
    threads: usize,
    budget: usize,
    lifo_slot: bool,
    dead_letters: DeadLetterSink,
}

impl RuntimeBuilder {
    /// Worker threads of the default group (default: the number of cores).
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

    /// Starts the runtime and its default group.
    pub fn build(self) -> Runtime {
        // The clock behind every message's enqueue stamp (`observe.rs`).
        let _ = crate::predicate::shared_clock();
        let shared = Arc::new(RuntimeShared {
            groups: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
            closing: AtomicBool::new(false),
            dead_letters: self.dead_letters,
            registry: Registry::new(),
            timers: Timers::new(),
            names: Names::default(),
            control: Arc::default(),
            #[cfg(feature = "net")]
            net: Mutex::new(None),
        });
        let default_group = GroupBuilder::new(Arc::clone(&shared), "default".into())
            .threads(self.threads)
            .budget(self.budget)
            .lifo_slot(self.lifo_slot)
            .build();
        Runtime {
            shared,
            default_group,
            shut_down: AtomicBool::new(false),
        }
    }
}

/// A whirl node: worker groups running processes.
///
/// Dropping a runtime shuts it down without waiting for inboxes to drain (see
/// [`Runtime::shutdown_graceful`] for the orderly way).
pub struct Runtime {
    pub(crate) shared: Arc<RuntimeShared>,
    default_group: Group,
    shut_down: AtomicBool,
}

impl Default for Runtime {
    fn default() -> Self {
        Runtime::new()
    }
}

impl Runtime {
    /// A runtime whose default group has one worker per core.
    pub fn new() -> Self {
        Runtime::builder().build()
    }

    /// Configures a runtime.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder {
            threads: default_threads(),
            budget: DEFAULT_BUDGET,
            lifo_slot: true,
            dead_letters: default_sink(),
        }
    }

    /// Starts configuring a new group with its own workers.
    pub fn group(&self, name: impl Into<String>) -> GroupBuilder {
        GroupBuilder::new(Arc::clone(&self.shared), name.into())
    }

    /// The default group.
    pub fn default_group(&self) -> &Group {
        &self.default_group
    }

    /// The first group built with `name`, if any.
    pub fn group_named(&self, name: &str) -> Option<Group> {
        self.shared.group_named(name).map(Group::from_shared)
    }

    /// Spawns a process in the group it declares ([`Process::GROUP`]), or else in the default
    /// group.
    pub fn spawn<P: Process>(&self, state: P) -> Addr<P> {
        spawn(Placement::Default(self.default_group.shared()), state, None)
    }

    /// Spawns a process in `group`.
    pub fn spawn_in<P: Process>(&self, group: &Group, state: P) -> Addr<P> {
        spawn(Placement::Explicit(group.shared()), state, None)
    }

    /// Spawns a process in `group`, serving `principal`.
    pub fn spawn_for<P: Process>(&self, group: &Group, principal: Principal, state: P) -> Addr<P> {
        spawn(Placement::Explicit(group.shared()), state, Some(principal))
    }

    /// Like [`Runtime::spawn`], but a process that cannot run where it was asked to (its
    /// declared group does not exist, it shares state outside a group that allows it, the
    /// runtime has shut down) is not created: the error says why and hands the state back.
    pub fn try_spawn<P: Process>(&self, state: P) -> Result<Addr<P>, SpawnError<P>> {
        try_spawn(Placement::Default(self.default_group.shared()), state, None)
    }

    /// Like [`Runtime::spawn_in`], refusing as [`Runtime::try_spawn`] does.
    pub fn try_spawn_in<P: Process>(
        &self,
        group: &Group,
        state: P,
    ) -> Result<Addr<P>, SpawnError<P>> {
        try_spawn(Placement::Explicit(group.shared()), state, None)
    }

    /// Like [`Runtime::spawn_for`], refusing as [`Runtime::try_spawn`] does.
    pub fn try_spawn_for<P: Process>(
        &self,
        group: &Group,
        principal: Principal,
        state: P,
    ) -> Result<Addr<P>, SpawnError<P>> {
        try_spawn(Placement::Explicit(group.shared()), state, Some(principal))
    }

    /// The live process registered as `name`, if it is a `P` (`None` for an unknown name, a
    /// terminated holder, or another process type). Supervisors register their named children
    /// here at every (re)start, so a name reaches the current incarnation; see
    /// [`ChildSpec::named`](crate::ChildSpec::named).
    pub fn whereis<P: Process>(&self, name: &str) -> Option<Addr<P>> {
        self.shared.names.whereis(name)
    }

    /// Registers `addr` as `name`. Fails, handing the name back, if another live process holds
    /// it; a name whose holder terminated is free again.
    pub fn register<P: Process>(&self, name: &str, addr: &Addr<P>) -> Result<(), NameError> {
        self.shared.names.register(name, addr)
    }

    /// Forgets `name`; returns whether it was registered.
    pub fn unregister(&self, name: &str) -> bool {
        self.shared.names.unregister(name, None)
    }

    /// Message counters summed over all groups.
    pub fn counts(&self) -> MessageCounts {
        self.shared.counts()
    }

    /// The runtime's socket poller (feature `net`), started on first use. See
    /// [`net`](crate::net).
    #[cfg(feature = "net")]
    pub fn net(&self) -> std::io::Result<crate::net::Net> {
        self.shared.net()
    }

    /// A snapshot of every group's statistics (see [`Group::stats`]).
    pub fn stats(&self) -> RuntimeStats {
        self.shared.stats()
    }

    /// Processes alive now.
    pub fn live_processes(&self) -> usize {
        self.shared.registry.len()
    }

    /// Blocks until no message is queued or being handled anywhere and no process is
    /// scheduled. Pending timers do not count. For tests, examples and `main`.
    pub fn block_until_idle(&self) {
        self.wait_until(None, || self.shared.is_quiescent());
    }

    /// Like [`Runtime::block_until_idle`], giving up after `timeout`; returns whether the
    /// runtime became idle.
    pub fn block_until_idle_timeout(&self, timeout: Duration) -> bool {
        self.wait_until(Some(timeout), || self.shared.is_quiescent())
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
        if self.shut_down.swap(true, Ordering::AcqRel) {
            return ShutdownReport {
                drained: true,
                ..ShutdownReport::default()
            };
        }
        let groups = self.shared.groups();
        let count = || -> MessageCounts { groups.iter().map(|g| g.counters.snapshot()).sum() };
        let before = count();
        self.shared.closing.store(true, Ordering::Relaxed);
        let drained = self.wait_until(drain_timeout, || self.shared.is_quiescent());
        self.shared.timers.stop();
        self.shared.control.stop();
        let abandoned = self.terminate_all(grace);
        #[cfg(feature = "net")]
        if let Some(net) = self.shared.net.lock().take() {
            net.stop();
        }
        self.stop_workers(grace);
        let after = count();
        let report = ShutdownReport {
            drained,
            handled: after.handled - before.handled,
            dead_lettered: after.dead_lettered - before.dead_lettered,
            terminated: after.terminated - before.terminated,
            abandoned,
            elapsed: began.elapsed(),
        };
        if !report.abandoned.is_empty() {
            crate::failures::report(crate::failures::FailureReport::ShutdownAbandoned {
                report: report.to_string(),
            });
        }
        report
    }

    /// Asks every live process to terminate normally, terminates on this thread those no
    /// worker runs, and waits (at most `grace` without progress) for handlers that are still
    /// running. Returns the processes left running.
    fn terminate_all(&self, grace: Duration) -> Vec<AbandonedProcess> {
        let registry = &self.shared.registry;
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
            let rescued: usize = self.shared.groups().iter().map(|g| g.rescue()).sum();
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
        let groups = self.shared.groups();
        let running: Vec<(String, Running)> = groups
            .iter()
            .flat_map(|g| g.running().into_iter().map(move |r| (g.name.clone(), r)))
            .collect();
        let mut abandoned: Vec<AbandonedProcess> = self
            .shared
            .registry
            .live()
            .into_iter()
            .map(|process| {
                let id = process.id();
                let found = running.iter().find(|(_, r)| r.process == id);
                AbandonedProcess {
                    id,
                    name: self.shared.names.name_of(id),
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
        let groups = std::mem::take(&mut *self.shared.groups.lock());
        let handles: Vec<JoinHandle<()>> = groups.iter().flat_map(|g| g.stop()).collect();
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
            .field("groups", &self.shared.groups().len())
            .field("live_processes", &self.live_processes())
            .finish_non_exhaustive()
    }
}
