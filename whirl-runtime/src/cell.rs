//! A live process: its mailbox, its state, and the turn a worker runs when it holds the
//! process's scheduling token.
//!
//! The post → schedule → handle path:
//!
//! 1. `Addr::post` checks liveness and admission, pushes the message into the mailbox and, if
//!    that took the token, hands the cell to the group's scheduler (`group.rs`).
//! 2. A worker (`worker.rs`) pops the cell and calls [`Runnable::run`], the one dynamic call
//!    per scheduling.
//! 3. [`ProcessCell::run_turn`] handles up to the group's budget of messages, then gives the
//!    token back, or re-queues itself at the back if messages remain (fairness).
//!
//! Termination closes the mailbox, runs the `terminated` hook exactly once, notifies monitors,
//! and drains what is left in the inbox to the dead-letter sink.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Instant;

use parking_lot::Mutex;

use crate::counters::Event;
use crate::ctx::Ctx;
use crate::dead_letter::DeadLetter;
use crate::group::GroupShared;
use crate::mailbox::{AfterPush, AfterRelease, Mailbox};
use crate::observe;
use crate::principal::Principal;
use crate::probe::TurnProbe;
use crate::process::{Down, ExitReason, Failure, FailureKind, Process, ProcessId};
use crate::sync::UnsafeCell;
use crate::worker;

/// A type-erased process the scheduler can run and the runtime can stop.
pub(crate) trait Runnable: Send + Sync + 'static {
    /// Runs one turn; returns the messages handled. A `sampled` turn is timed and records its
    /// messages' queue latencies (`stats.rs`). The caller passes the token it holds (the `Arc`
    /// in the run queue), and the probe where the turn publishes what it is running.
    fn run(self: Arc<Self>, sampled: bool, probe: &TurnProbe) -> usize;
    /// Terminates the process on the calling thread without running any handler: its pending
    /// kill reason (or a normal exit), the `terminated` hook, monitors told, the inbox
    /// dead-lettered. For a runtime that shuts down while its workers cannot run the process.
    /// The caller holds the token.
    fn abandon(self: Arc<Self>);
    /// Asks the process to terminate with `reason` at its next turn.
    fn kill(self: Arc<Self>, reason: ExitReason);
    /// The process's id.
    fn id(&self) -> ProcessId;
    /// The principal the process serves, if any.
    fn principal(&self) -> Option<&Principal>;
    /// The name of the process's group.
    fn group_name(&self) -> &str;
}

/// A run-queue entry: one strong reference, owned by whoever holds the token.
pub(crate) type Task = Arc<dyn Runnable>;

/// Something that wants to hear when a process terminates.
pub(crate) trait Watcher: Send + Sync + 'static {
    fn notify_down(self: Arc<Self>, notice: Down);
}

/// Bookkeeping that outsiders touch: monitors, kill requests, the exit reason. Most processes
/// are never monitored or killed, so it is allocated on first use, which keeps an idle
/// process small (invariant 6); behind a plain lock, since it is off the message path.
#[derive(Default)]
struct Control {
    watchers: Vec<Weak<dyn Watcher>>,
    pending_kill: Option<ExitReason>,
    exit: Option<ExitReason>,
    /// Called once the `started` hook has returned `Ok` (a supervisor's synchronous start).
    on_started: Option<OnStarted>,
}

/// What [`ProcessCell::set_on_started`] runs, given the process's id.
pub(crate) type OnStarted = Box<dyn FnOnce(ProcessId) + Send>;

/// What only the token holder touches.
struct Body<P> {
    state: Option<P>,
    started: bool,
}

pub(crate) struct ProcessCell<P: Process> {
    id: ProcessId,
    pub(crate) mailbox: Mailbox<P::Message>,
    pub(crate) group: Arc<GroupShared>,
    pub(crate) principal: Option<Principal>,
    body: UnsafeCell<Body<P>>,
    control: OnceLock<Box<Mutex<Control>>>,
}

// SAFETY: `body` is only accessed by the holder of the mailbox's scheduling token, one thread
// at a time (see `mailbox.rs`), and `P: Send`; everything else is `Sync` on its own.
unsafe impl<P: Process> Sync for ProcessCell<P> {}

impl<P: Process> ProcessCell<P> {
    /// A new cell whose token is held by the caller, who must schedule it.
    pub(crate) fn new(
        id: ProcessId,
        group: Arc<GroupShared>,
        principal: Option<Principal>,
        state: P,
    ) -> Self {
        ProcessCell {
            id,
            mailbox: Mailbox::new_scheduled(),
            group,
            principal,
            body: UnsafeCell::new(Body {
                state: Some(state),
                started: false,
            }),
            control: OnceLock::new(),
        }
    }

    pub(crate) fn id(&self) -> ProcessId {
        self.id
    }

    fn control(&self) -> &Mutex<Control> {
        self.control.get_or_init(Box::default)
    }

    /// Delivers a message that has passed liveness and admission checks.
    #[inline]
    pub(crate) fn deliver(self: &Arc<Self>, msg: P::Message, meta: u32) {
        self.group.counters.add(Event::Posted, 1);
        let after = self.mailbox.push(msg, meta);
        self.after_token_attempt(after);
    }

    /// Acts on the outcome of an attempt to take the token.
    #[inline]
    fn after_token_attempt(self: &Arc<Self>, after: AfterPush) {
        match after {
            AfterPush::Nothing => {}
            AfterPush::Schedule => self.group.schedule(Arc::clone(self) as Task),
            AfterPush::Drain => self.drain_after_exit(),
        }
    }

    /// Registers `watcher` for this process's termination; if it has already terminated, the
    /// notice is delivered at once.
    pub(crate) fn add_watcher(&self, watcher: Weak<dyn Watcher>) {
        let mut control = self.control().lock();
        match &control.exit {
            None => control.watchers.push(watcher),
            Some(reason) => {
                let notice = Down {
                    id: self.id,
                    reason: reason.clone(),
                };
                drop(control);
                if let Some(w) = watcher.upgrade() {
                    w.notify_down(notice);
                }
            }
        }
    }

    /// Runs `f` once the `started` hook has returned `Ok` (not if the process terminates
    /// before or in it: its monitors see that). Set before the process is scheduled.
    pub(crate) fn set_on_started(&self, f: OnStarted) {
        self.control().lock().on_started = Some(f);
    }

    /// The start hook succeeded: runs the callback, if one was set (no `Control` is
    /// allocated for a process nobody asked about).
    fn notify_started(&self) {
        let callback = self.control.get().and_then(|c| c.lock().on_started.take());
        if let Some(f) = callback {
            f(self.id);
        }
    }

    /// Removes `watcher` (every registration of it); returns whether there was one, i.e.
    /// whether this process had not yet terminated and notified it.
    pub(crate) fn remove_watcher(&self, watcher: &Weak<dyn Watcher>) -> bool {
        let mut control = self.control().lock();
        let before = control.watchers.len();
        control.watchers.retain(|w| !Weak::ptr_eq(w, watcher));
        control.watchers.len() != before
    }

    /// One turn. The caller holds the token.
    ///
    /// Accounting for quiescence (`Runtime::block_until_idle`): a run caused by messages is
    /// covered by `posted` vs `handled`, so `handled` is counted only once the turn's work,
    /// termination included, is done. Runs without a message (the start hook, a kill
    /// request) are counted as activations when requested and as deactivations here, when
    /// consumed.
    fn run_turn<const SAMPLED: bool>(self: Arc<Self>, probe: &TurnProbe) -> usize {
        if self.mailbox.is_closed() {
            // Re-scheduled only to drain messages that raced with termination.
            self.drain_after_exit();
            return 0;
        }
        let budget = self.group.budget();
        // Sampled turns are timed (see `stats.rs`).
        let started_at = SAMPLED.then(Instant::now);
        let mut ctx = Ctx::new(self, probe);
        // SAFETY: we hold the token, so no other thread touches the body until we release it.
        let body = ctx.cell().body.with_mut(|b| unsafe { &mut *b });

        // SAFETY: `ctx` holds an `Arc` to the cell until `into_cell` below, after the cursor
        // (the only user of this reference) is dropped; the cell is never mutably borrowed.
        let cell_ref: &Self = unsafe { &*Arc::as_ptr(ctx.cell()) };
        // SAFETY: we hold the token for the cursor's whole life.
        let mut inbox = unsafe { cell_ref.mailbox.cursor() };
        // Read the tail once up front, so the first pop does not trigger a second kill check.
        let _ = inbox.has_messages();
        let mut refreshes = inbox.refreshes();

        // The process's message type, until a handler says which one it handles.
        probe.begin(cell_ref.id, std::any::type_name::<P::Message>);
        let mut consumed_activations = 0;
        let mut exit = cell_ref.take_kill_request(&mut consumed_activations);
        if !body.started {
            body.started = true;
            consumed_activations += 1;
            if exit.is_none() {
                exit = invoke(body, &mut ctx, |p, ctx| p.started(ctx));
                if exit.is_none() {
                    cell_ref.notify_started();
                }
            }
        }
        let mut handled = 0;
        // `handled` is normally counted once per turn. A group with admission control counts
        // each message as it is done, so that predicates reading the queue length see it
        // exactly, not up to a turn's worth of messages too long.
        let count_each = cell_ref.group.predicate().is_some();
        let observes = cell_ref.group.observes();
        while exit.is_none() && handled < budget && inbox.has_messages() {
            if inbox.refreshes() != refreshes {
                // The cursor just re-read the tail, on the line senders write: look for a
                // kill request (a failed link...) there too, before handling more. Messages
                // already known to be queued are handled before a kill seen later, so a
                // consumer that is behind does not poll that line per message.
                refreshes = inbox.refreshes();
                exit = cell_ref.take_kill_request(&mut consumed_activations);
                if exit.is_some() {
                    break;
                }
            }
            let Some((msg, meta)) = inbox.pop() else {
                break;
            };
            handled += 1;
            exit = invoke(body, &mut ctx, |p, ctx| p.handle(msg, ctx));
            if exit.is_none() && cell_ref.group.is_stopped() {
                // The runtime finished shutting down while this handler ran (it was reported
                // as abandoned): terminate now, so the rest of the inbox is dead-lettered and
                // the hook runs, instead of handling messages nobody waits for.
                exit = Some(
                    cell_ref
                        .take_kill_request(&mut consumed_activations)
                        .unwrap_or(ExitReason::Normal),
                );
            }
            if count_each {
                cell_ref.group.counters.add(Event::Handled, 1);
            }
            if SAMPLED && meta != observe::UNOBSERVED {
                worker::record_queue_latency(observe::queued_millis(meta));
            }
            if observes {
                observe::handled(&cell_ref.group, cell_ref.principal.as_ref(), meta);
            }
        }
        if let Some(at) = started_at {
            worker::record_timed_turn(handled, at.elapsed(), cell_ref.principal.as_ref());
        }
        let more = exit.is_none() && handled == budget && inbox.has_messages();
        probe.end();
        drop(inbox);
        let cell = ctx.into_cell();
        let uncounted = if count_each { 0 } else { handled as u64 };

        if let Some(reason) = exit {
            cell.terminate(reason, uncounted, consumed_activations);
            return handled;
        }
        // Counted before the token is given back, so no clone of the group (whose reference
        // count every worker of the group would otherwise touch each turn) is needed after:
        // the turn's work is done, and anything that arrives meanwhile shows as posted.
        cell.count_turn(uncounted, consumed_activations);
        let reschedule = more
            // SAFETY: we hold the token.
            || unsafe { cell.mailbox.release() } == AfterRelease::Reschedule;
        if reschedule {
            let task = Arc::clone(&cell) as Task;
            cell.group.yield_now(task);
        }
        handled
    }

    /// Adds a turn's handled messages and consumed lifecycle runs to the group's counters.
    fn count_turn(&self, handled: u64, consumed_activations: u64) {
        if handled > 0 {
            self.group.counters.add(Event::Handled, handled);
        }
        if consumed_activations > 0 {
            self.group
                .counters
                .add(Event::Deactivated, consumed_activations);
        }
    }

    /// Takes a pending kill request, counting it as consumed.
    #[inline]
    fn take_kill_request(&self, consumed_activations: &mut u64) -> Option<ExitReason> {
        if !self.mailbox.kill_requested() {
            return None;
        }
        let pending = self.control().lock().pending_kill.take();
        if pending.is_some() {
            *consumed_activations += 1;
        }
        Some(pending.unwrap_or(ExitReason::Normal))
    }

    /// Terminates the process. The caller holds the token; it is released at the end.
    ///
    /// Takes no reference into the body: `self` may be the last reference to the cell, and
    /// the cell is freed when it drops at the end (Miri caught an earlier version that kept a
    /// `&mut Body` alive across that).
    fn terminate(self: Arc<Self>, reason: ExitReason, handled: u64, mut consumed_activations: u64) {
        // SAFETY: we hold the token.
        unsafe { self.mailbox.close() };
        // SAFETY: we hold the token, so the body is ours; the reference ends in this statement.
        let state = self.body.with_mut(|b| unsafe { (*b).state.take() });
        if let Some(mut state) = state {
            let hook = catch_unwind(AssertUnwindSafe(|| {
                state.terminated(&reason);
                drop(state);
            }));
            if hook.is_err() {
                tracing::warn!(process = %self.id, "terminated hook panicked; ignored");
            }
        }
        let watchers = {
            let mut control = self.control().lock();
            control.exit = Some(reason.clone());
            // A kill that arrived while terminating for another reason is moot, but it was
            // counted as an activation.
            if control.pending_kill.take().is_some() {
                consumed_activations += 1;
            }
            std::mem::take(&mut control.watchers)
        };
        if let ExitReason::Failed(f) = &reason {
            if *f.kind() == FailureKind::Error {
                crate::failures::report(crate::failures::FailureReport::ProcessFailed {
                    id: self.id,
                    group: self.group.name.clone(),
                    failure: f.clone(),
                });
            } else {
                // A panic (std's hook printed it) or a linked failure (its cause is reported).
                tracing::debug!(process = %self.id, failure = %f, "process failed");
            }
        }
        for watcher in watchers.into_iter().filter_map(|w| w.upgrade()) {
            watcher.notify_down(Down {
                id: self.id,
                reason: reason.clone(),
            });
        }
        let registered = self.group.runtime.registry.remove(self.id);
        self.group.counters.add(Event::Terminated, 1);
        self.drain_to_dead_letters(&reason);
        // Last, so that a quiescence check cannot pass before the hook, the notices and the
        // drain are done.
        self.count_turn(handled, consumed_activations);
        drop(registered);
    }

    /// For a terminated process whose token the caller holds (messages that raced with its
    /// termination): dead-letters them with the exit reason and releases the token.
    fn drain_after_exit(&self) {
        let reason = self.control().lock().exit.clone();
        self.drain_to_dead_letters(&reason.unwrap_or(ExitReason::Normal));
    }

    /// Gives every queued message to the dead-letter sink and releases the token.
    fn drain_to_dead_letters(&self, reason: &ExitReason) {
        let mut count = 0;
        let runtime = &self.group.runtime;
        // SAFETY: callers hold the token of a closed mailbox.
        unsafe {
            self.mailbox.drain_closed(|msg, meta| {
                count += 1;
                if meta != observe::UNOBSERVED && self.group.observes() {
                    observe::dead_lettered(&self.group, self.principal.as_ref(), meta);
                }
                runtime.dead_letter(DeadLetter::new(self.id, reason.clone(), msg));
            })
        };
        if count > 0 {
            self.group.counters.add(Event::DeadLettered, count);
        }
    }
}

/// Runs a handler or hook with panics contained; returns the exit it asked for, if any.
fn invoke<P: Process>(
    body: &mut Body<P>,
    ctx: &mut Ctx<P>,
    f: impl FnOnce(&mut P, &mut Ctx<P>) -> Result<(), Failure>,
) -> Option<ExitReason> {
    let state = body.state.as_mut()?;
    match catch_unwind(AssertUnwindSafe(|| f(state, ctx))) {
        Ok(Ok(())) => ctx.take_exit(),
        Ok(Err(failure)) => Some(ExitReason::Failed(failure)),
        Err(payload) => {
            let text = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".to_owned());
            Some(ExitReason::Failed(Failure::with_kind(
                FailureKind::Panic,
                text,
            )))
        }
    }
}

impl<P: Process> Runnable for ProcessCell<P> {
    fn run(self: Arc<Self>, sampled: bool, probe: &TurnProbe) -> usize {
        // Two copies of the turn: the unsampled one, run by almost every turn, has no
        // statistics code in its message loop. Every turn of a process serving a principal
        // is measured (per-principal accounting).
        if sampled || self.principal.is_some() {
            self.run_turn::<true>(probe)
        } else {
            self.run_turn::<false>(probe)
        }
    }

    fn abandon(self: Arc<Self>) {
        if self.mailbox.is_closed() {
            self.drain_after_exit();
            return;
        }
        let mut consumed_activations = 0;
        let reason = self
            .take_kill_request(&mut consumed_activations)
            .unwrap_or(ExitReason::Normal);
        // SAFETY: the caller holds the token; the reference ends in this statement.
        let never_started = self
            .body
            .with_mut(|b| unsafe { !std::mem::replace(&mut (*b).started, true) });
        if never_started {
            // The start, counted as an activation at spawn, is consumed without running.
            consumed_activations += 1;
        }
        self.terminate(reason, 0, consumed_activations);
    }

    fn id(&self) -> ProcessId {
        self.id
    }

    fn principal(&self) -> Option<&Principal> {
        self.principal.as_ref()
    }

    fn group_name(&self) -> &str {
        &self.group.name
    }

    fn kill(self: Arc<Self>, reason: ExitReason) {
        {
            let mut control = self.control().lock();
            if control.exit.is_some() || control.pending_kill.is_some() {
                return;
            }
            control.pending_kill = Some(reason);
            // Counted before the token is requested, so that a quiescence check never misses
            // the kill; consumed (and counted as a deactivation) by the turn that acts on it.
            self.group.counters.add(Event::Activated, 1);
        }
        let after = self.mailbox.request_kill();
        self.after_token_attempt(after);
    }
}

impl<P: Process> Watcher for ProcessCell<P> {
    fn notify_down(self: Arc<Self>, notice: Down) {
        let failure = match &notice.reason {
            ExitReason::Failed(f) => Some(Failure::with_kind(
                FailureKind::Linked(notice.id),
                f.reason(),
            )),
            ExitReason::Normal | ExitReason::Shutdown => None,
        };
        // `down_message` is user code, running on the terminating process's thread: a panic
        // in it fails the watcher (as a panic in its handler would), not that thread.
        let converted = catch_unwind(AssertUnwindSafe(|| P::down_message(notice)));
        let converted = match converted {
            Ok(converted) => converted,
            Err(_) => {
                self.kill(ExitReason::Failed(Failure::with_kind(
                    FailureKind::Panic,
                    "down_message panicked",
                )));
                return;
            }
        };
        match converted {
            // A system process: the notice is an ordinary message. It bypasses the predicate:
            // shedding it would break supervision exactly when it matters.
            Some(msg) => {
                if !self.mailbox.is_closed() {
                    self.deliver(msg, observe::UNOBSERVED);
                }
            }
            None => {
                if let Some(f) = failure {
                    self.kill(ExitReason::Failed(f));
                }
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    //! Small enough for Miri: exercises the token-protected body, termination, the
    //! terminated hook, monitors and the dead-letter drain across real worker threads.

    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Arc;

    use crate::{Ctx, Down, ExitReason, Failure, Process, Runtime};

    struct Tally {
        seen: Vec<u32>,
        hooks: Arc<AtomicUsize>,
    }

    /// A number for a `Tally`.
    struct Num(u32);
    // SAFETY: a `u32` is owned data.
    unsafe impl crate::Isolated for Num {}
    impl crate::Message for Num {}

    // SAFETY: `seen` and the message are owned data. `hooks` is the test's instrument, an
    // atomic shared only with the test thread, which reads it from outside the runtime after
    // shutdown; no other process's state reaches it. (Application code could not hold it: the
    // `#[process]` check rejects it.)
    unsafe impl Process for Tally {
        type Message = u32;
        fn handle(&mut self, msg: u32, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
            self.seen.push(msg);
            match msg {
                99 => panic!("boom"),
                98 => ctx.complete(),
                _ => {}
            }
            Ok(())
        }
        fn terminated(&mut self, _reason: &ExitReason) {
            self.hooks.fetch_add(1, SeqCst);
        }
    }

    impl crate::Handles<Num> for Tally {
        fn into_message(Num(n): Num) -> u32 {
            n
        }
    }

    struct Watch {
        downs: Arc<AtomicUsize>,
    }

    // SAFETY: the messages are `Down` notices (isolated); `downs` is the test's instrument, as
    // for `Tally`.
    unsafe impl Process for Watch {
        type Message = Down;
        fn handle(&mut self, down: Down, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
            assert!(down.reason.is_failure());
            self.downs.fetch_add(1, SeqCst);
            Ok(())
        }
        fn down_message(notice: Down) -> Option<Down> {
            Some(notice)
        }
    }

    impl crate::Handles<Down> for Watch {
        fn into_message(msg: Down) -> Down {
            msg
        }
    }

    #[test]
    fn cell_lifecycle_across_workers() {
        let dead = Arc::new(AtomicUsize::new(0));
        let rt = {
            let dead = Arc::clone(&dead);
            Runtime::builder()
                .threads(2)
                .budget(2)
                .dead_letters(move |_| {
                    dead.fetch_add(1, SeqCst);
                })
                .build()
        };
        let hooks = Arc::new(AtomicUsize::new(0));
        let downs = Arc::new(AtomicUsize::new(0));
        let crasher = rt.spawn(Tally {
            seen: Vec::new(),
            hooks: Arc::clone(&hooks),
        });
        let watcher = rt.spawn(Watch {
            downs: Arc::clone(&downs),
        });
        let watch_target = crasher.clone();
        let monitor_via = rt.spawn(Monitor {
            target: Some(watch_target),
        });
        let _ = monitor_via;
        drop(watcher);
        rt.block_until_idle();
        // Posts racing with the crash come back to the sender instead of becoming dead letters.
        let returned = [1, 2, 3, 99, 4, 5]
            .into_iter()
            .filter(|&i| crasher.post(Num(i)).is_err())
            .count();
        let quiet = rt.spawn(Tally {
            seen: Vec::new(),
            hooks: Arc::clone(&hooks),
        });
        for i in [1, 98, 7] {
            quiet.post(Num(i)).unwrap();
        }
        rt.block_until_idle();
        assert!(crasher.post(Num(6)).is_err());
        assert_eq!(
            dead.load(SeqCst) + returned,
            3,
            "4, 5 after the panic and 7 after complete()"
        );
        let counts = rt.counts();
        assert_eq!(counts.posted, counts.handled + counts.dead_lettered);
        rt.shutdown_graceful();
        assert_eq!(hooks.load(SeqCst), 2);
        assert_eq!(
            downs.load(SeqCst),
            0,
            "the watcher never monitored anything"
        );
    }

    /// Monitors its target from its start hook, as a system process.
    struct Monitor {
        target: Option<crate::Addr<Tally>>,
    }

    // SAFETY: the state is a process address; the messages are `Down` notices.
    unsafe impl Process for Monitor {
        type Message = Down;
        fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
            if let Some(t) = self.target.take() {
                ctx.monitor(&t);
            }
            Ok(())
        }
        fn handle(&mut self, down: Down, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
            assert!(matches!(down.reason, ExitReason::Failed(_)));
            ctx.complete();
            Ok(())
        }
        fn down_message(notice: Down) -> Option<Down> {
            Some(notice)
        }
    }

    impl crate::Handles<Down> for Monitor {
        fn into_message(msg: Down) -> Down {
            msg
        }
    }
}
