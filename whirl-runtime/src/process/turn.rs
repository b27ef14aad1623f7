//! Running a process: one turn (up to the group's budget of messages, panics contained), and
//! termination (the `terminated` hook exactly once, monitors told, the inbox dead-lettered).
//! This is where a cell becomes a group's `Runnable`.
//!
//! A turn reports into the [`Recorder`] its worker lent it — the probe that says what runs, the
//! statistics of sampled turns — and never calls back into the worker.

use std::ops::ControlFlow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

use super::inbox::Cursor;
use super::mailbox::{AfterRelease, Mailbox, Suspend};
use super::model::{Body, Ctx, PendingHandler, Process, ProcessCell, Suspended, Watcher};
use super::trace::{message_spans, Envelope, SentFrom};
use crate::control::Event;
use crate::group::{observe, GroupShared, Kernel, MoveError, Recorder, Runnable, Task, TurnProbe};
use crate::lifecycle::failures::{self, FailureReport};
use crate::lifecycle::{
    unanswered_because, Down, ExitReason, Failure, FailureKind, ProcessId, Unanswered,
};
use crate::principal::Principal;

/// How many times a turn that ran dry polls its inbox before giving the token back, when its
/// worker has nothing else to run, yielding the core between polls (a few microseconds in all).
///
/// Yielding, not spinning: on a machine whose cores are shared with the senders (or a load
/// generator), a spinning consumer takes the time the sender needs. Alternating runs of
/// `cargo run --release -p bench --bin bench -- --profile counting whirl` gave 27-32 M/s
/// without lingering, 42-44 M/s spinning with backoff, 39-41 M/s yielding; a single-connection
/// `wrk` against `iris_http` lost 15% of its requests per second with the spinning version and
/// none with the yielding one.
const LINGER_ROUNDS: u32 = 4;

/// One turn in progress: its state and its steps, from [`Turn::begin`] to [`Turn::end`].
///
/// The steps, in order: [`Turn::start`] (a kill or move request, the `started` hook on the
/// first turn), then [`Turn::run`]: a suspended async handler first ([`Turn::poll_suspended`]),
/// then queued messages up to the budget ([`Turn::handle_queued`], each handler through
/// [`Turn::handle_one`], an async one started by [`Turn::suspend_or_finish`]), then, if the
/// inbox ran dry, a short wait for more ([`Turn::linger`]). [`Turn::end`] closes the turn's
/// instruments and sums it up in an [`Outcome`], which [`ProcessCell::after_turn`] acts on.
///
/// The turn is the hot path (post → schedule → handle; `whirl/benches/hot_paths.rs` measures
/// it), and a `Turn` compiles to what the single function the turn used to be compiled to,
/// its fields kept in registers as that function's locals were, as long as the compiler can
/// split it into its fields, which it cannot once the address of a `Turn` or of one of its
/// fields reaches code that is not inlined. Hence three rules:
///
/// * the steps are `#[inline(always)]`;
/// * what must be dropped (the context with its `Arc` to the cell, the inbox's cursor, the
///   exit reason) is `run_turn`'s, lent to the turn by `&mut`, so a `Turn` has no drop glue
///   for an unwinding path to call on it;
/// * a field is never lent by `&mut` to a function of the cell: it is lent as a copy, copied
///   back after ([`Turn::take_request`]).
///
/// (Measured with callgrind on a stream of posts to one process: a `Turn` that owned the
/// context and the cursor, or that lent its counters by `&mut`, ran 4 to 6% more instructions
/// per message than the single function; this one runs within 4%, the difference being
/// register moves, and is as fast in `hot_paths`.)
struct Turn<'t, 'c, P: Process, const SAMPLED: bool> {
    /// The handlers' context (it holds the turn's `Arc` to the cell).
    ctx: &'t mut Ctx<P>,
    /// The cell, borrowed from `ctx`'s `Arc` (see `run_turn`).
    cell: &'c ProcessCell<P>,
    /// The body, reached field by field (see `Body`). We hold the token, so no other thread
    /// touches it until we release it or park the process (I9).
    body: *mut Body<P>,
    /// The inbox, read as its only consumer (we hold the token).
    inbox: &'t mut Cursor<'c, Envelope<P::Message>>,
    /// The cursor's tail re-reads seen so far: a new one is a chance to look for a kill.
    refreshes: u32,
    recorder: &'t Recorder,
    probe: &'t TurnProbe,
    /// Whether a subscriber wants the turn's `tracing` span (opened in `begin`).
    spans: bool,
    budget: usize,
    /// `handled` is normally counted once per turn. A group with admission control counts
    /// each message as it is done, so that predicates reading the queue length see it
    /// exactly, not up to a turn's worth of messages too long.
    count_each: bool,
    observes: bool,
    /// The exit the turn has come to, if any.
    exit: &'t mut Option<ExitReason>,
    /// Whether the process is to move to another group at the next message boundary
    /// (`relocate.rs`).
    moving: bool,
    /// Whether the turn ends with an async handler still pending.
    waiting: bool,
    /// Whether a handler ended the turn early ([`Ctx::end_turn`]).
    yielded: bool,
    handled: usize,
    /// Activations consumed by this turn (runs without a message: the start, a request).
    consumed_activations: u64,
}

/// How a turn ended (with its exit, if any), for [`ProcessCell::after_turn`].
struct Outcome {
    moving: bool,
    waiting: bool,
    handled: usize,
    /// Whether a full budget, or a handler ending the turn, left messages queued.
    more: bool,
    count_each: bool,
    consumed_activations: u64,
}

impl<'t, 'c, P: Process, const SAMPLED: bool> Turn<'t, 'c, P, SAMPLED> {
    /// Opens the turn over `run_turn`'s context, cursor and exit: the probe, the span.
    #[inline(always)]
    fn begin(
        ctx: &'t mut Ctx<P>,
        cell: &'c ProcessCell<P>,
        inbox: &'t mut Cursor<'c, Envelope<P::Message>>,
        exit: &'t mut Option<ExitReason>,
        recorder: &'t Recorder,
    ) -> Self {
        let body: *mut Body<P> = cell.body.with_mut(|b| b);
        // Read the tail once up front, so the first pop does not trigger a second kill check.
        let _ = inbox.has_messages();
        let refreshes = inbox.refreshes();
        // The process's message type, until a handler says which one it handles.
        let probe = recorder.probe();
        probe.begin(cell.id, std::any::type_name::<P::Message>);
        // One span per turn, at TRACE. Whether a subscriber wants TRACE is looked up by the
        // worker once every 64 turns; the turn reads its worker's flag, and the span is built
        // and kept out of line (in the recorder), so without such a subscriber a turn pays
        // one load and a branch at each end.
        let spans = recorder.spans();
        if spans {
            open_turn_span::<P>(recorder, cell);
        }
        Turn {
            ctx,
            cell,
            body,
            inbox,
            refreshes,
            recorder,
            probe,
            spans,
            budget: cell.group.budget(),
            count_each: cell.group.predicate().is_some(),
            observes: cell.group.observes(),
            exit,
            moving: false,
            waiting: false,
            yielded: false,
            handled: 0,
            consumed_activations: 0,
        }
    }

    /// Before any message: a kill or move request already made; then, on the process's first
    /// turn, its `started` hook (the start counted as an activation at spawn is consumed).
    #[inline(always)]
    fn start(&mut self) {
        *self.exit = self.take_request();
        if self.cell.mailbox.first_turn() {
            if self.exit.is_none() {
                self.run_started_hook();
            } else {
                self.consumed_activations += 1;
            }
        }
    }

    /// The `started` hook, panics contained. A hook that suspended (`#[started] async fn`)
    /// is not done yet: its future is kept as a suspended handler's is, and polled first by
    /// [`Turn::poll_suspended`], before any message; the start is done when it completes.
    #[inline(always)]
    fn run_started_hook(&mut self) {
        // SAFETY: the token is ours (I9); the reference covers only `state` and ends with
        // the hook.
        *self.exit = invoke(unsafe { &mut (*self.body).state }, self.ctx, |p, ctx| {
            p.started(ctx)
        });
        self.moving |= std::mem::take(&mut self.ctx.moving);
        // A future made by a hook that failed is dropped here, before the state is used
        // again (I13).
        match self.ctx.pending.take().filter(|_| self.exit.is_none()) {
            Some(hook) => {
                let pending = Suspended {
                    future: hook.future,
                    message: hook.message,
                    meta: observe::UNOBSERVED,
                    since: Instant::now(),
                    waker: Waker::from(Arc::clone(self.ctx.cell())),
                    starting: true,
                };
                // SAFETY: as in `poll_suspended`: the reference covers only `suspended`. (I9)
                unsafe { (*self.body).suspended = Some(Box::new(pending)) };
            }
            None => self.start_done(),
        }
    }

    /// The message loop: a suspended handler, then queued messages, then lingering for more
    /// while the worker has nothing else to do, until the turn ends.
    #[inline(always)]
    fn run(&mut self) {
        loop {
            if self.poll_suspended().is_break() {
                return;
            }
            // A move ends the turn at this boundary: checked here once, and after each
            // handler (where a handler's `Ctx::move_to` shows), not per message.
            if !self.moving && self.handle_queued().is_break() {
                return;
            }
            if !self.linger() {
                return;
            }
        }
    }

    /// An async handler (or `started` hook) first: the process takes no other message until
    /// it completes. `Break` if it is still pending (the turn ends, waiting for its waker).
    #[inline(always)]
    fn poll_suspended(&mut self) -> ControlFlow<()> {
        if self.exit.is_some() {
            return ControlFlow::Continue(());
        }
        // SAFETY: as in `run_started_hook`; this reference covers only `suspended`, never
        // the state a pending future borrows (I13).
        let suspended = unsafe { &mut (*self.body).suspended };
        let Some(pending) = suspended.as_mut() else {
            return ControlFlow::Continue(());
        };
        let cell = self.cell;
        match poll_handler(pending, &cell.mailbox, self.probe, &cell.group.kernel) {
            Poll::Ready(asked) => {
                let (meta, starting) = (pending.meta, pending.starting);
                *suspended = None;
                *self.exit = asked;
                if starting {
                    self.start_done();
                } else {
                    self.handled += 1;
                    self.done(meta);
                }
                // A move asked for while the handler waited happens now.
                self.moving = self.moving || cell.move_requested();
                ControlFlow::Continue(())
            }
            Poll::Pending => {
                self.waiting = true;
                ControlFlow::Break(())
            }
        }
    }

    /// Handles queued messages until the budget is spent, the inbox is empty, the process is
    /// to exit or move, or a handler suspends (`Break`: the turn ends, waiting for it).
    #[inline(always)]
    fn handle_queued(&mut self) -> ControlFlow<()> {
        while self.exit.is_none() && self.handled < self.budget && self.inbox.has_messages() {
            if self.inbox.refreshes() != self.refreshes {
                // The cursor just re-read the tail, on the line senders write: look for a kill
                // request (a failed link...) there too, before handling more. Messages already
                // known to be queued are handled before a kill seen later, so a consumer that
                // is behind does not poll that line per message.
                self.refreshes = self.inbox.refreshes();
                *self.exit = self.take_request();
                if self.exit.is_some() || self.moving {
                    break;
                }
            }
            let Some((msg, meta)) = self.inbox.pop() else {
                break;
            };
            self.handle_one(msg, meta)?;
            if self.ctx.moving {
                // The handler asked to move (`Ctx::move_to`): no later message here.
                self.ctx.moving = false;
                self.moving = true;
                break;
            }
            if self.ctx.end_turn {
                // The handler gave the worker up (`Ctx::end_turn`): what is left waits for
                // the next turn, behind the group's other ready processes.
                self.ctx.end_turn = false;
                self.yielded = true;
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }

    /// Runs the handler of one message, panics contained, and counts it done; `Break` if it
    /// is an async handler that suspended.
    #[inline(always)]
    fn handle_one(&mut self, envelope: Envelope<P::Message>, meta: u32) -> ControlFlow<()> {
        let Envelope { msg, from } = envelope;
        let span = message_spans().then(|| message_span::<P>(self.cell, from));
        let entered = span.as_ref().map(tracing::Span::enter);
        // SAFETY: the token is ours (I9); no future is pending, so nothing else borrows the
        // state; the reference ends with the handler.
        *self.exit = invoke(unsafe { &mut (*self.body).state }, self.ctx, |p, ctx| {
            p.handle(msg, ctx)
        });
        drop(entered);
        if let Some(span) = span {
            self.handled_in(span);
        }
        if let Some(handler) = self
            .ctx
            .pending
            .is_some()
            .then(|| self.ctx.pending.take())
            .flatten()
        {
            // The future borrows the state the handler was given (I13). A handler that asked
            // to exit cannot have made one, but if it did, it is dropped here, before the
            // state is used again.
            if self.exit.is_none() {
                self.suspend_or_finish(handler, meta)?;
            }
        }
        self.handled += 1;
        if self.exit.is_none() && self.cell.group.is_stopped() {
            // The runtime finished shutting down while this handler ran (it was reported as
            // abandoned): terminate now, so the rest of the inbox is dead-lettered and the
            // hook runs, instead of handling messages nobody waits for.
            *self.exit = Some(self.take_kill_request().unwrap_or(ExitReason::Normal));
        }
        self.done(meta);
        ControlFlow::Continue(())
    }

    /// A message was handled in `span`: names its type, and keeps the span of a handler that
    /// failed for the turn's end, where the failure is reported inside it.
    #[cold]
    #[inline(never)]
    fn handled_in(&self, span: tracing::Span) {
        if let Some(message) = self.probe.read().and_then(|running| running.message) {
            span.record("message", message);
        }
        if self.exit.is_some() {
            self.recorder.keep_failed_span(span);
        }
    }

    /// Polls the future an async handler just made, at once: a handler that does not wait
    /// completes here, as a plain one does, and only one that waits is kept in the body
    /// (`Break`: the turn ends).
    #[inline(always)]
    fn suspend_or_finish(&mut self, handler: PendingHandler, meta: u32) -> ControlFlow<()> {
        let mut pending = Suspended {
            future: handler.future,
            message: handler.message,
            meta,
            since: Instant::now(),
            waker: Waker::from(Arc::clone(self.ctx.cell())),
            starting: false,
        };
        let cell = self.cell;
        match poll_handler(&mut pending, &cell.mailbox, self.probe, &cell.group.kernel) {
            Poll::Ready(asked) => {
                *self.exit = asked;
                ControlFlow::Continue(())
            }
            Poll::Pending => {
                // SAFETY: as in `poll_suspended`: the reference covers only `suspended`. (I9)
                unsafe { (*self.body).suspended = Some(Box::new(pending)) };
                self.waiting = true;
                ControlFlow::Break(())
            }
        }
    }

    /// A message is done: counted now under admission control, its queueing time sampled,
    /// its completion observed.
    #[inline(always)]
    fn done(&self, meta: u32) {
        let group = &self.cell.group;
        if self.count_each {
            group.counters.add(Event::Handled, 1);
        }
        if SAMPLED && meta != observe::UNOBSERVED {
            self.recorder.queue_latency(observe::queued_millis(meta));
        }
        if self.observes {
            observe::handled(group, self.cell.principal.as_ref(), meta);
        }
    }

    /// Ran dry: if this worker has nothing else to do, keep the token a moment longer; `true`
    /// if messages came meanwhile (the turn goes on).
    ///
    /// A sender streaming to this process then finds it scheduled and only pushes, instead of
    /// taking the token and queueing the process on every burst; and the worker would only
    /// spin looking for work anyway. Only a process that handled several messages in this
    /// turn is being streamed to; one that got a single message (a request, a spawn's first
    /// message) has nothing more coming, and lingering would only hold back work posted
    /// elsewhere.
    #[inline(always)]
    fn linger(&mut self) -> bool {
        let group = &self.cell.group;
        if self.exit.is_none()
            && !self.moving
            && self.handled > 1
            && self.handled < self.budget
            && crate::group::may_linger(group)
        {
            for _ in 0..LINGER_ROUNDS {
                std::thread::yield_now();
                if self.inbox.has_messages() {
                    return true;
                }
                if !crate::group::may_linger(group) {
                    break;
                }
            }
        }
        false
    }

    /// A kill or move request made since the turn began, if any (`cell.rs`).
    ///
    /// The cell's method takes its counters by `&mut`: they are lent as copies, because a
    /// pointer into the `Turn` that reached a function not inlined would keep the compiler
    /// from holding any of its fields in registers.
    #[inline(always)]
    fn take_request(&mut self) -> Option<ExitReason> {
        let (mut consumed, mut moving) = (self.consumed_activations, self.moving);
        let exit = self.cell.take_request(&mut consumed, &mut moving);
        (self.consumed_activations, self.moving) = (consumed, moving);
        exit
    }

    /// The `started` hook is done, successfully if the turn has no exit (`start_done` in
    /// `ProcessCell`; see [`Turn::take_request`] for the copy).
    #[inline(always)]
    fn start_done(&mut self) {
        let mut consumed = self.consumed_activations;
        self.cell.start_done(&mut consumed, self.exit.is_none());
        self.consumed_activations = consumed;
    }

    /// A kill request, if one was made (see [`Turn::take_request`] for the copy).
    #[inline(always)]
    fn take_kill_request(&mut self) -> Option<ExitReason> {
        let mut consumed = self.consumed_activations;
        let exit = self.cell.take_kill_request(&mut consumed);
        self.consumed_activations = consumed;
        exit
    }

    /// Closes the turn: whether messages are left for another, the probe and the span.
    #[inline(always)]
    fn end(self) -> Outcome {
        let more = self.exit.is_none()
            && !self.moving
            && !self.waiting
            && (self.handled == self.budget || self.yielded)
            && self.inbox.has_messages();
        self.probe.end();
        if self.spans {
            self.recorder.close_turn_span();
        }
        Outcome {
            moving: self.moving,
            waiting: self.waiting,
            handled: self.handled,
            more,
            count_each: self.count_each,
            consumed_activations: self.consumed_activations,
        }
    }
}

impl<P: Process> ProcessCell<P> {
    /// One turn. The caller holds the token.
    ///
    /// Accounting for quiescence (`Runtime::block_until_idle`): a run caused by messages is
    /// covered by `posted` vs `handled`, so `handled` is counted only once the turn's work,
    /// termination included, is done. Runs without a message (the start hook, a kill
    /// request) are counted as activations when requested and as deactivations here, when
    /// consumed. A message whose async handler is still pending is not handled yet: it is
    /// counted by the turn in which its future completes.
    fn run_turn<const SAMPLED: bool>(self: Arc<Self>, recorder: &Recorder) -> usize {
        if self.mailbox.is_closed() {
            // Re-scheduled only to drain messages that raced with termination.
            self.drain_after_exit();
            return 0;
        }
        // Sampled turns are timed (see `stats.rs`).
        let started_at = SAMPLED.then(Instant::now);
        let mut ctx = Ctx::new(self, recorder);
        // SAFETY: `ctx` holds an `Arc` to the cell until `into_cell` below, after the turn and
        // the cursor (the only users of this reference) are done; the cell is never mutably
        // borrowed (I9).
        let cell: &Self = unsafe { &*Arc::as_ptr(ctx.cell()) };
        // SAFETY: we hold the token for the cursor's whole life. (I9)
        let mut inbox = unsafe { cell.mailbox.cursor() };
        let mut exit = None;
        let mut turn = Turn::<P, SAMPLED>::begin(&mut ctx, cell, &mut inbox, &mut exit, recorder);
        turn.start();
        turn.run();
        if let Some(at) = started_at {
            recorder.timed(turn.handled, at.elapsed(), cell.principal.as_ref());
        }
        let outcome = turn.end();
        cell.turn_done(outcome.handled, inbox.position());
        drop(inbox);
        // A handler that failed: its termination is reported inside its message's span.
        let failed = exit.as_ref().and_then(|_| recorder.take_failed_span());
        let _inside = failed.as_ref().map(tracing::Span::enter);
        ctx.into_cell().after_turn(exit, outcome)
    }

    /// What follows a turn: termination, a move, or the token given back (the process
    /// rescheduled if messages are left or came meanwhile, or parked on its async handler).
    /// Returns the messages the turn handled.
    ///
    /// Takes the cell by `Arc` and holds no reference into it: termination may free it.
    #[inline(always)]
    fn after_turn(self: Arc<Self>, exit: Option<ExitReason>, outcome: Outcome) -> usize {
        let Outcome {
            moving,
            waiting,
            handled,
            more,
            count_each,
            mut consumed_activations,
        } = outcome;
        let mut uncounted = if count_each { 0 } else { handled as u64 };
        if let Some(reason) = exit {
            self.terminate(reason, uncounted, consumed_activations);
            return handled;
        }
        if moving && !waiting {
            match self.finish_move(uncounted, consumed_activations) {
                None => return handled,
                // It stays (the request was withdrawn, or a kill came first).
                Some((u, c)) => (uncounted, consumed_activations) = (u, c),
            }
        }
        // Counted before the token is given back, so no clone of the group (whose reference
        // count every worker of the group would otherwise touch each turn) is needed after:
        // the turn's work is done, and anything that arrives meanwhile shows as posted.
        self.count_turn(uncounted, consumed_activations);
        let reschedule = if waiting {
            // From here on the future's waker may run the process on another thread: nothing
            // below touches the body.
            self.mailbox.suspend() == Suspend::Resumed
        } else {
            more
                // A drained inbox forgets the priority its messages lent the process.
                || self.reset_inherited()
                // SAFETY: we hold the token. (I9)
                || unsafe { self.mailbox.release() } == AfterRelease::Reschedule
        };
        if reschedule {
            let task = Arc::clone(&self) as Task;
            self.group.yield_now(task);
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
        mut handled: u64,
        mut consumed_activations: u64,
    ) {
        // SAFETY: we hold the token. (I9)
        unsafe { self.mailbox.close() };
        // An async handler still pending is cancelled: its future is dropped before the state
        // it borrows is touched (I13). Its message counts as handled, as one whose handler
        // failed half-way does; an async `started` hook's consumes the start's activation.
        // SAFETY: we hold the token; the reference covers only `suspended` and ends in this
        // statement. (I9)
        let cancelled = self.body.with_mut(|b| unsafe { (*b).suspended.take() });
        if let Some(pending) = cancelled {
            if pending.starting {
                consumed_activations += 1;
            } else {
                handled += 1;
            }
            self.cancelled(*pending, &reason);
        }
        if let Some(receiver) = self.take_hand_over() {
            return self.finish_hand_over(receiver, handled, consumed_activations);
        }
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
        let watchers = self.record_exit(&reason, &mut consumed_activations);
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
        // Before anyone hears of the end: a supervisor restarting this process must not find
        // the new incarnation among the members this failure kills.
        if let Some(fate) = &self.group.shares_state {
            fate.ended(self.id, &reason);
        }
        self.notify_watchers(watchers, &reason);
        let registered = self.group.kernel.registry.remove(self.id);
        self.group.counters.add(Event::Terminated, 1);
        self.drain_to_dead_letters(&reason);
        // Last, so that a quiescence check cannot pass before the hook, the notices and the
        // drain are done.
        self.count_turn(handled, consumed_activations);
        drop(registered);
    }
}

impl<P: Process> ProcessCell<P> {
    /// The `started` hook is done (returned, or its future completed): consumes the start's
    /// activation and, if it succeeded, confirms the start to whoever waits for it (a
    /// supervisor's synchronous start). The caller holds the token.
    fn start_done(&self, consumed_activations: &mut u64, succeeded: bool) {
        *consumed_activations += 1;
        if succeeded {
            self.notify_started();
        }
    }

    /// Drops the future of an async handler that was pending when the process terminated
    /// (panics in its destructors contained), and reports it. The caller holds the token.
    fn cancelled(&self, pending: Suspended, reason: &ExitReason) {
        let Suspended {
            future,
            message,
            since,
            ..
        } = pending;
        // A request the handler was answering tells its caller why no answer comes.
        let why = match reason {
            ExitReason::Shutdown => Unanswered::ShutDown,
            _ => Unanswered::Terminated,
        };
        let dropped = unanswered_because(why, || catch_unwind(AssertUnwindSafe(|| drop(future))));
        if dropped.is_err() {
            tracing::warn!(process = %self.id, "dropping a cancelled async handler panicked; ignored");
        }
        let pending_for = since.elapsed();
        if self.group.kernel.is_closing() {
            // A shutdown may cancel a million handlers: its report counts them.
            self.group
                .kernel
                .cancelled_by_shutdown
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tracing::debug!(
                process = %self.id,
                message_type = message(),
                pending_ms = pending_for.as_millis() as u64,
                "async handler cancelled by the shutdown",
            );
            return;
        }
        // One event: the failure hook's (by default a structured `WARN`).
        failures::report(FailureReport::HandlerCancelled {
            id: self.id,
            group: self.group.name.clone(),
            message_type: message(),
            pending_for,
            reason: reason.clone(),
        });
    }
}

/// Opens the turn's `tracing` span and keeps it entered in the recorder until the turn ends.
#[cold]
#[inline(never)]
fn open_turn_span<P: Process>(recorder: &Recorder, cell: &ProcessCell<P>) {
    let span = tracing::trace_span!(
        "turn",
        process = %cell.id,
        process_type = std::any::type_name::<P>(),
        messages = std::any::type_name::<P::Message>(),
        group = %cell.group.name,
        principal = cell.principal.as_ref().map(Principal::id),
    );
    recorder.open_turn_span(span);
}

/// The span a message is handled in (see `trace.rs`): a child of the span it was posted from,
/// or of the current one (the turn's, at `TRACE`) if it was posted outside any.
#[cold]
#[inline(never)]
fn message_span<P: Process>(cell: &ProcessCell<P>, from: SentFrom) -> tracing::Span {
    let parent = from.into_span().unwrap_or_else(tracing::Span::current);
    tracing::debug_span!(
        target: "whirl::message",
        parent: &parent,
        "message",
        process = %cell.id,
        process_type = std::any::type_name::<P>(),
        group = %cell.group.name,
        principal = cell.principal.as_ref().map(Principal::id),
        message = tracing::field::Empty,
    )
}

/// Runs a handler or hook with panics contained; returns the exit it asked for, if any.
fn invoke<P: Process>(
    state: &mut Option<P>,
    ctx: &mut Ctx<P>,
    f: impl FnOnce(&mut P, &mut Ctx<P>) -> Result<(), Failure>,
) -> Option<ExitReason> {
    let state = state.as_mut()?;
    match catch_unwind(AssertUnwindSafe(|| f(state, ctx))) {
        Ok(Ok(())) => ctx.take_exit(),
        Ok(Err(failure)) => Some(ExitReason::Failed(failure)),
        Err(payload) => Some(panicked(payload)),
    }
}

/// The failure a panic with `payload` becomes.
fn panicked(payload: Box<dyn std::any::Any + Send>) -> ExitReason {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_owned());
    ExitReason::Failed(Failure::with_kind(FailureKind::Panic, with_hint(text)))
}

/// A panic's text, with what to do when whirl knows the cause: tokio's "no reactor" panic of a
/// tokio-based future (sqlx, reqwest, tokio's timers...) polled by a runtime built without the
/// `tokio` feature.
fn with_hint(text: String) -> String {
    if cfg!(not(feature = "tokio")) && text.contains("Tokio 1.x runtime") {
        return format!(
            "{text} (a handler used a tokio-based future or API, and whirl was built without its \
             `tokio` feature: enable it, `whirl = {{ features = [\"tokio\"] }}`, and async \
             handlers run inside the runtime's own tokio context)"
        );
    }
    text
}

/// Polls a suspended async handler once, panics contained: `Ready` with the exit it asked for
/// (a panic is a failure), or `Pending`. The caller holds the token.
fn poll_handler(
    pending: &mut Suspended,
    mailbox: &Mailbox<impl Sized>,
    probe: &TurnProbe,
    kernel: &Kernel,
) -> Poll<Option<ExitReason>> {
    #[cfg(not(feature = "tokio"))]
    let _ = kernel;
    // Wake-ups before this poll are covered by it.
    mailbox.begin_poll();
    probe.handling(pending.message);
    // Futures of tokio-based libraries find their reactor and timers (feature `tokio`).
    #[cfg(feature = "tokio")]
    let _tokio = kernel.tokio.enter();
    let mut cx = Context::from_waker(&pending.waker);
    match catch_unwind(AssertUnwindSafe(|| pending.future.as_mut().poll(&mut cx))) {
        Ok(poll) => poll,
        Err(payload) => {
            // The panicked handler's future goes now, with a request it was answering: its
            // caller is told the handler failed (panics in its destructors contained).
            let failed = std::mem::replace(&mut pending.future, Box::pin(std::future::ready(None)));
            let _ = unanswered_because(Unanswered::HandlerFailed, || {
                catch_unwind(AssertUnwindSafe(|| drop(failed)))
            });
            Poll::Ready(Some(panicked(payload)))
        }
    }
}

/// The waker of a process's async handler: schedules the process again, unless it is already
/// running (the poller then polls again) or done.
impl<P: Process> Wake for ProcessCell<P> {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.mailbox.wake() {
            self.group.schedule(Arc::clone(self) as Task);
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
        let never_started = self.mailbox.first_turn();
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

    fn inherited_priority(&self) -> Option<u8> {
        self.inherited()
    }

    fn stage(&self) -> crate::group::scheduler::Stage {
        crate::group::scheduler::Stage::of::<P>()
    }

    fn group_name(&self) -> &str {
        &self.group.name
    }

    fn row(&self) -> Option<crate::control::ProcessInfo> {
        Some(ProcessCell::row(self))
    }

    fn relations(&self) -> crate::control::Relations {
        ProcessCell::relations(self)
    }

    fn set_supervision(&self, supervision: crate::control::Supervision) {
        ProcessCell::set_supervision(self, supervision);
    }

    fn request_move(self: Arc<Self>, to: &dyn std::any::Any) -> Result<(), MoveError> {
        match to.downcast_ref::<Arc<GroupShared>>() {
            Some(to) => self.ask_to_move(to),
            None => unreachable!("the group layer passes the target as an `Arc<GroupShared>`"),
        }
    }

    fn kill(self: Arc<Self>, reason: ExitReason) {
        let mut cell = self;
        loop {
            let mut control = cell.control().lock();
            if control.moved_to.is_some() {
                drop(control);
                // The process moved to another group: the request goes after it (in a loop:
                // a stale address may be thousands of moves behind).
                match cell.forwarded() {
                    Some(next) => {
                        cell = next;
                        continue;
                    }
                    None => return,
                }
            }
            if control.exit.is_some() || control.pending_kill.is_some() {
                return;
            }
            control.pending_kill = Some(reason);
            // Counted before the token is requested, so that a quiescence check never misses
            // the kill; consumed (and counted as a deactivation) by the turn that acts on it.
            cell.group.counters.add(Event::Activated, 1);
            break;
        }
        let after = cell.mailbox.request_kill();
        cell.after_token_attempt(after);
    }
}

impl<P: Process> Watcher for ProcessCell<P> {
    fn watcher_id(&self) -> Option<ProcessId> {
        Some(self.id)
    }

    fn notify_down(self: Arc<Self>, notice: Down) {
        self.forget_monitoring(notice.id);
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
                self.deliver_unadmitted(msg, observe::UNOBSERVED);
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

    use crate::process::Sender;
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
                .expect("the runtime starts")
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

    /// Handles each number in an async handler: yields once (waking itself), then records
    /// it; 0 never completes.
    struct Later {
        seen: Vec<u32>,
        hooks: Arc<AtomicUsize>,
    }

    /// Pending once, waking itself; then ready.
    struct YieldOnce(bool);

    impl std::future::Future for YieldOnce {
        type Output = ();
        fn poll(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<()> {
            if self.0 {
                return std::task::Poll::Ready(());
            }
            self.0 = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    }

    // SAFETY: as for `Tally`: owned data, and the test's instrument. (I8)
    unsafe impl Process for Later {
        type Message = Num;
        fn handle(&mut self, Num(n): Num, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
            let mut detached = ctx.__detached();
            let future: crate::process::HandlerFuture<'_> = Box::pin(async move {
                if n == 0 {
                    std::future::pending::<()>().await;
                }
                YieldOnce(false).await;
                self.seen.push(n);
                assert_eq!(self.seen.len(), n as usize, "in order, one at a time");
                detached.__finish(Ok(()))
            });
            // SAFETY: the future borrows only this state, and `handle` returns at once (I13).
            unsafe { ctx.__suspend(std::any::type_name::<Num>, future) };
            Ok(())
        }
        fn terminated(&mut self, _reason: &ExitReason) {
            self.hooks.fetch_add(1, SeqCst);
        }
    }

    impl crate::Handles<Num> for Later {
        fn into_message(msg: Num) -> Num {
            msg
        }
    }

    #[test]
    fn async_handlers_park_resume_and_cancel() {
        let dead = Arc::new(AtomicUsize::new(0));
        let rt = {
            let dead = Arc::clone(&dead);
            Runtime::builder()
                .threads(2)
                .dead_letters(move |_| {
                    dead.fetch_add(1, SeqCst);
                })
                .build()
                .expect("the runtime starts")
        };
        let hooks = Arc::new(AtomicUsize::new(0));
        let later = rt.spawn(Later {
            seen: Vec::new(),
            hooks: Arc::clone(&hooks),
        });
        for n in 1..=3 {
            later.post(Num(n)).unwrap();
        }
        rt.block_until_idle();
        // Never completes: the process parks until it is killed; what is queued behind it
        // is dead-lettered.
        later.post(Num(0)).unwrap();
        later.post(Num(4)).unwrap();
        later.exit(ExitReason::Normal);
        rt.block_until_idle();
        assert_eq!(hooks.load(SeqCst), 1);
        let counts = rt.counts();
        assert_eq!(counts.posted, 5);
        assert_eq!(counts.posted, counts.handled + counts.dead_lettered);
        assert!(dead.load(SeqCst) >= 1);
        rt.shutdown_graceful();
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
