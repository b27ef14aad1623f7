//! Running a process: one turn (up to the group's budget of messages, panics contained), and
//! termination (the `terminated` hook exactly once, monitors told, the inbox dead-lettered).
//! This is where a cell becomes a group's `Runnable`.
//!
//! A turn reports into the [`Recorder`] its worker lent it — the probe that says what runs, the
//! statistics of sampled turns — and never calls back into the worker.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

use super::mailbox::AfterRelease;
use super::model::{Body, Ctx, Process, ProcessCell, Watcher};
use crate::control::Event;
use crate::group::{observe, Recorder, Runnable, Task};
use crate::lifecycle::failures::{self, FailureReport};
use crate::lifecycle::{Down, ExitReason, Failure, FailureKind, ProcessId};
use crate::principal::Principal;

/// How many times a turn that ran dry polls its inbox before giving the token back, when its
/// worker has nothing else to run, yielding the core between polls (a few microseconds in all).
///
/// Yielding, not spinning: on a machine whose cores are shared with the senders (or a load
/// generator), a spinning consumer takes the time the sender needs. Alternating runs of
/// `cargo run --release -p examples --bin bench -- --profile counting whirl` gave 27-32 M/s
/// without lingering, 42-44 M/s spinning with backoff, 39-41 M/s yielding; a single-connection
/// `wrk` against `iris_http` lost 15% of its requests per second with the spinning version and
/// none with the yielding one.
const LINGER_ROUNDS: u32 = 4;

impl<P: Process> ProcessCell<P> {
    /// One turn. The caller holds the token.
    ///
    /// Accounting for quiescence (`Runtime::block_until_idle`): a run caused by messages is
    /// covered by `posted` vs `handled`, so `handled` is counted only once the turn's work,
    /// termination included, is done. Runs without a message (the start hook, a kill
    /// request) are counted as activations when requested and as deactivations here, when
    /// consumed.
    fn run_turn<const SAMPLED: bool>(self: Arc<Self>, recorder: &Recorder) -> usize {
        if self.mailbox.is_closed() {
            // Re-scheduled only to drain messages that raced with termination.
            self.drain_after_exit();
            return 0;
        }
        let budget = self.group.budget();
        // Sampled turns are timed (see `stats.rs`).
        let started_at = SAMPLED.then(Instant::now);
        let mut ctx = Ctx::new(self, recorder);
        // SAFETY: we hold the token, so no other thread touches the body until we release it. (I9)
        let body = ctx.cell().body.with_mut(|b| unsafe { &mut *b });

        // SAFETY: `ctx` holds an `Arc` to the cell until `into_cell` below, after the cursor
        // (the only user of this reference) is dropped; the cell is never mutably borrowed
        // (I9).
        let cell_ref: &Self = unsafe { &*Arc::as_ptr(ctx.cell()) };
        // SAFETY: we hold the token for the cursor's whole life. (I9)
        let mut inbox = unsafe { cell_ref.mailbox.cursor() };
        // Read the tail once up front, so the first pop does not trigger a second kill check.
        let _ = inbox.has_messages();
        let mut refreshes = inbox.refreshes();

        // The process's message type, until a handler says which one it handles.
        let probe = recorder.probe();
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
        'turn: loop {
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
                    recorder.queue_latency(observe::queued_millis(meta));
                }
                if observes {
                    observe::handled(&cell_ref.group, cell_ref.principal.as_ref(), meta);
                }
            }
            // Ran dry: if this worker has nothing else to do, keep the token a moment longer. A
            // sender streaming to this process then finds it scheduled and only pushes, instead of
            // taking the token and queueing the process on every burst; and the worker would only
            // spin looking for work anyway.
            // Only a process that handled several messages in this turn is being streamed to; one
            // that got a single message (a request, a spawn's first message) has nothing more
            // coming, and lingering would only hold back work posted elsewhere.
            if exit.is_none()
                && handled > 1
                && handled < budget
                && crate::group::may_linger(&cell_ref.group)
            {
                for _ in 0..LINGER_ROUNDS {
                    std::thread::yield_now();
                    if inbox.has_messages() {
                        continue 'turn;
                    }
                    if !crate::group::may_linger(&cell_ref.group) {
                        break;
                    }
                }
            }
            break;
        }
        if let Some(at) = started_at {
            recorder.timed(handled, at.elapsed(), cell_ref.principal.as_ref());
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
            // SAFETY: we hold the token. (I9)
            || unsafe { cell.mailbox.release() } == AfterRelease::Reschedule;
        if reschedule {
            let task = Arc::clone(&cell) as Task;
            cell.group.yield_now(task);
        }
        handled
    }

    /// Terminates the process. The caller holds the token; it is released at the end.
    ///
    /// Takes no reference into the body: `self` may be the last reference to the cell, and
    /// the cell is freed when it drops at the end (Miri caught an earlier version that kept a
    /// `&mut Body` alive across that).
    pub(super) fn terminate(
        self: Arc<Self>,
        reason: ExitReason,
        handled: u64,
        mut consumed_activations: u64,
    ) {
        // SAFETY: we hold the token. (I9)
        unsafe { self.mailbox.close() };
        // SAFETY: we hold the token, so the body is ours; the reference ends in this statement.
        // (I9)
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
                failures::report(FailureReport::ProcessFailed {
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
            watcher.notify_down(Down::new(self.id, reason.clone()));
        }
        let registered = self.group.kernel.registry.remove(self.id);
        self.group.counters.add(Event::Terminated, 1);
        self.drain_to_dead_letters(&reason);
        // Last, so that a quiescence check cannot pass before the hook, the notices and the
        // drain are done.
        self.count_turn(handled, consumed_activations);
        drop(registered);
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
    fn run(self: Arc<Self>, sampled: bool, recorder: &Recorder) -> usize {
        // Two copies of the turn: the unsampled one, run by almost every turn, has no
        // statistics code in its message loop. Every turn of a process serving a principal
        // is measured (per-principal accounting).
        if sampled || self.principal.is_some() {
            self.run_turn::<true>(recorder)
        } else {
            self.run_turn::<false>(recorder)
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
        // SAFETY: the caller holds the token; the reference ends in this statement. (I9)
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
    // SAFETY: a `u32` is owned data. (I8)
    unsafe impl crate::Isolated for Num {}
    impl crate::Message for Num {}

    // SAFETY: `seen` and the message are owned data. `hooks` is the test's instrument, an
    // atomic shared only with the test thread, which reads it from outside the runtime after
    // shutdown; no other process's state reaches it. (Application code could not hold it: the
    // `#[process]` check rejects it.) (I8)
    unsafe impl Process for Tally {
        type Message = Num;
        fn handle(&mut self, Num(msg): Num, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
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
        fn into_message(msg: Num) -> Num {
            msg
        }
    }

    struct Watch {
        downs: Arc<AtomicUsize>,
    }

    // SAFETY: the messages are `Down` notices (isolated); `downs` is the test's instrument, as
    // for `Tally`. (I8)
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

    // SAFETY: the state is a process address; the messages are `Down` notices. (I8)
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
