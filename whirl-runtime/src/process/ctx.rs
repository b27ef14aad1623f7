//! What a handler can do besides changing its own state: [`Ctx`]'s methods (the type is
//! defined with the process model, `model.rs`). Its address, spawning, termination, monitors
//! and links, timers, its principal and names.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::addr::Addr;

use super::model::{Ctx, HandlerFuture, Handles, PendingHandler, Process, ProcessCell, Watcher};
use super::spawn::Spawner;
use crate::control::RuntimeStats;
use crate::group::{observe, Group, Recorder};
use crate::isolation::Message;
use crate::lifecycle::{ExitReason, Failure, ProcessId};
use crate::principal::Principal;
use crate::time::TimerHandle;

impl<P: Process> Ctx<P> {
    /// The context of a turn of `cell` recording into `recorder`.
    pub(super) fn new(cell: Arc<ProcessCell<P>>, recorder: &Recorder) -> Self {
        Ctx {
            cell,
            exit: None,
            recorder,
            probe: recorder.probe(),
            pending: None,
            moving: false,
            end_turn: false,
        }
    }

    /// The context an async handler's future owns: it outlives the turn that made it, so it
    /// reaches no worker (its recorder and probe are null).
    pub(super) fn detached(cell: Arc<ProcessCell<P>>) -> Self {
        Ctx {
            cell,
            exit: None,
            recorder: std::ptr::null(),
            probe: std::ptr::null(),
            pending: None,
            moving: false,
            end_turn: false,
        }
    }

    fn recorder(&self) -> Option<&Recorder> {
        // SAFETY: a non-null `recorder` was a valid reference when the turn began and outlives
        // it (see the field, invariant I10); this runs inside the turn. A detached context's
        // is null.
        unsafe { self.recorder.as_ref() }
    }

    /// Publishes the type of the message about to be handled (`#[process]`'s dispatch calls it
    /// in each arm, where the variant is already known, so it costs one store).
    #[doc(hidden)]
    #[inline]
    pub fn __handling(&self, message_type: fn() -> &'static str) {
        // SAFETY: a non-null `probe` points into the worker running this turn, valid for the
        // whole turn (see the field, invariant I10); this runs inside the turn. A detached
        // context's is null: an async handler's future reports through its turn instead.
        if let Some(probe) = unsafe { self.probe.as_ref() } {
            probe.handling(message_type);
        }
    }

    /// The context an async handler's future owns (it outlives the turn, so it reaches no
    /// worker). What `#[process]` generates for an `async fn` handler.
    #[doc(hidden)]
    pub fn __detached(&self) -> Ctx<P> {
        Ctx::detached(Arc::clone(&self.cell))
    }

    /// Hands an async handler's future to the turn, which polls it once `handle` has returned
    /// and then until it completes; the process handles no other message meanwhile. The future
    /// ends with [`Ctx::__finish`]. What `#[process]` generates for an `async fn` handler.
    ///
    /// # Safety
    ///
    /// The caller is `Process::handle` or `Process::started`, about to return: `future` may borrow the process state
    /// `handle` was given and nothing else that `handle` borrows. The runtime keeps the future
    /// next to that state and drops it before the state is used in any other way (I13).
    #[doc(hidden)]
    pub unsafe fn __suspend<'a>(
        &mut self,
        message: fn() -> &'static str,
        future: HandlerFuture<'a>,
    ) {
        // SAFETY: only the borrow of the process state is erased, which the caller promises is
        // all the future borrows; the turn keeps it valid until the future is dropped (I13).
        let future: HandlerFuture<'static> = unsafe { std::mem::transmute(future) };
        self.pending = Some(PendingHandler { message, future });
    }

    /// The end of an async handler's future: the exit it asks for, given the handler's
    /// result (a `complete()` or `fail()` called in the handler is in this context).
    #[doc(hidden)]
    pub fn __finish(&mut self, result: Result<(), Failure>) -> Option<ExitReason> {
        match result {
            Err(failure) => Some(ExitReason::Failed(failure)),
            Ok(()) => self.take_exit(),
        }
    }

    pub(crate) fn cell(&self) -> &Arc<ProcessCell<P>> {
        &self.cell
    }

    /// The cell, the context's turn being over. The turn has taken every pending handler
    /// out of the context after each call, so there is none to drop: not dropping the field
    /// keeps its drop check off the per-turn path.
    pub(crate) fn into_cell(self) -> Arc<ProcessCell<P>> {
        let Ctx { cell, pending, .. } = self;
        debug_assert!(pending.is_none(), "the turn takes every pending handler");
        std::mem::forget(pending);
        cell
    }

    pub(crate) fn take_exit(&mut self) -> Option<ExitReason> {
        self.exit.take()
    }

    /// This process's address.
    pub fn myself(&self) -> Addr<P> {
        Addr::from_cell(Arc::clone(&self.cell))
    }

    /// This process's id.
    pub fn id(&self) -> ProcessId {
        self.cell.id()
    }

    /// The principal this process serves, if it was given one.
    pub fn principal(&self) -> Option<&Principal> {
        self.cell.principal.as_ref()
    }

    /// The live process registered as `name`, if it is a `Q` (see
    /// [`Runtime::whereis`](crate::Runtime::whereis)).
    pub fn whereis<Q: Process>(&self, name: &str) -> Option<Addr<Q>> {
        self.cell.group.kernel.names.whereis::<Addr<Q>>(name)
    }

    /// The runtime's socket poller (feature `net`), started on first use.
    #[cfg(feature = "net")]
    pub fn net(&self) -> std::io::Result<crate::io::Net> {
        self.cell.group.kernel.net()
    }

    /// A snapshot of every group's statistics (as [`Runtime::stats`](crate::Runtime::stats)).
    pub fn runtime_stats(&self) -> RuntimeStats {
        self.cell.group.kernel.stats()
    }

    /// The group this process runs in.
    pub fn group(&self) -> Group {
        Group::from_shared(Arc::clone(&self.cell.group))
    }

    /// Spawns a child in the group it declares ([`Process::GROUP`]), or else in this process's
    /// group; it inherits this process's principal. The shorthand of
    /// [`spawner`](Self::spawner) with no options.
    pub fn spawn<Q: Process>(&self, state: Q) -> Addr<Q> {
        self.spawner().spawn(state)
    }

    /// A [`Spawner`] for a child: by default in the group it declares or this process's, on
    /// behalf of this process's principal.
    pub fn spawner(&self) -> Spawner<'_> {
        Spawner::new(&self.cell.group, None, self.cell.principal.clone())
    }

    /// Runs `acquire` (taking a lock on state this process shares, in a
    /// [`shares_state`](crate::GroupBuilder::shares_state) group), timing it as *lock
    /// latency* in the group's statistics, which the
    /// [`AdaptiveConcurrency`](crate::control::AdaptiveConcurrency) controller reads: more
    /// threads do not help a group whose handlers queue for a lock.
    ///
    /// ```
    /// # use std::sync::{Arc, Mutex};
    /// # use whirl::{Ctx, Failure, Process};
    /// struct Writer { rows: Arc<Mutex<Vec<u64>>> }
    /// # struct Row(u64);
    /// # // SAFETY: a `u64` is owned data.
    /// # unsafe impl whirl::Isolated for Row {}
    /// # impl whirl::Message for Row {}
    /// # // SAFETY: `rows` is shared on purpose, behind a `Mutex`; `SHARES_STATE` confines the
    /// # // process to a group built with `shares_state`. The message is owned data.
    /// # unsafe impl Process for Writer {
    /// # const SHARES_STATE: Option<&'static str> = Some("rows appended by several writers");
    /// # type Message = Row; fn handle(&mut self, Row(row): Row, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
    /// let mut rows = ctx.lock_timed(|| self.rows.lock().unwrap_or_else(|p| p.into_inner()));
    /// rows.push(row);
    /// # Ok(()) } }
    /// ```
    pub fn lock_timed<T>(&self, acquire: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let guard = acquire();
        if let Some(recorder) = self.recorder() {
            recorder.lock_wait(start.elapsed());
        }
        guard
    }

    /// Ends this turn once the handler returns: the process's other messages wait for its
    /// next turn, behind the group's other ready processes, as when the group's budget of
    /// messages per turn is used up. For a message that stands for much work (a socket
    /// process that has read its share of a busy connection), so one process does not hold a
    /// worker for a whole budget of them; the turn ends early only, the process is not
    /// suspended and nothing is lost. Does nothing in an async handler after an `.await`.
    pub fn end_turn(&mut self) {
        self.end_turn = true;
    }

    /// Terminates this process normally once the current handler returns.
    pub fn complete(&mut self) {
        self.exit.get_or_insert(ExitReason::Normal);
    }

    /// Terminates this process with `reason` once the current handler returns (a supervisor
    /// exits `Shutdown` after an ordered stop).
    pub(crate) fn exit_with(&mut self, reason: ExitReason) {
        self.exit.get_or_insert(reason);
    }

    /// Terminates this process with a failure once the current handler returns. Monitors
    /// see the reason.
    pub fn fail(&mut self, reason: impl Into<std::borrow::Cow<'static, str>>) {
        self.exit
            .get_or_insert(ExitReason::Failed(Failure::new(reason)));
    }

    /// Watches `other`: when it terminates, this process is told (a system process gets a
    /// `Down` message; a non-system one fails if `other` failed). Monitoring a process that
    /// has already terminated delivers the notice at once.
    pub fn monitor<Q: Process>(&self, other: &Addr<Q>) {
        let me: Arc<dyn Watcher> = Arc::clone(&self.cell) as Arc<dyn Watcher>;
        // Noted first: a notice delivered at once (`other` has ended) forgets it again.
        self.cell.note_monitoring(other.id());
        other.cell().add_watcher(Arc::downgrade(&me));
    }

    /// Stops watching `other` (Erlang's `demonitor`): every monitor this process placed on it
    /// with [`Ctx::monitor`] (or the half of a [`Ctx::link`] that watches `other`) is removed.
    /// Returns whether one was removed before `other` terminated. If it returns `false` and
    /// `other` has terminated, the notice was already given: a system process may still find
    /// the `Down` in its mailbox (there is no `flush`), as after Erlang's `demonitor/1`.
    pub fn demonitor<Q: Process>(&self, other: &Addr<Q>) -> bool {
        self.cell.forget_all_monitoring(other.id());
        other.cell().remove_watcher(&self.watcher())
    }

    /// This process as a watcher of others (what `monitor` registers).
    pub(crate) fn watcher(&self) -> std::sync::Weak<dyn Watcher> {
        let me: Arc<dyn Watcher> = Arc::clone(&self.cell) as Arc<dyn Watcher>;
        Arc::downgrade(&me)
    }

    /// Monitors in both directions: peers that share a goal fail together.
    pub fn link<Q: Process>(&self, other: &Addr<Q>) {
        self.monitor(other);
        let other_watcher: Arc<dyn Watcher> = Arc::clone(other.cell()) as Arc<dyn Watcher>;
        other.cell().note_monitoring(self.cell.id);
        self.cell.add_watcher(Arc::downgrade(&other_watcher));
    }

    /// Posts `msg` to this process after `delay`. The timer is cancelled if the process
    /// terminates first (its message is dropped, never posted) or if the handle is cancelled.
    pub fn post_after<M>(&self, delay: Duration, msg: M) -> TimerHandle
    where
        P: Handles<M>,
        M: Message,
    {
        let target = Arc::downgrade(&self.cell);
        let mut msg = Some(msg);
        self.cell
            .group
            .kernel
            .timers
            .schedule(delay, None, move || match (target.upgrade(), msg.take()) {
                (Some(cell), Some(m)) => {
                    cell.deliver_unadmitted(P::into_message(m), observe::UNOBSERVED)
                }
                _ => false,
            })
    }

    /// Posts a clone of `msg` to this process every `period`, until the process terminates or
    /// the handle is cancelled.
    pub fn post_every<M>(&self, period: Duration, msg: M) -> TimerHandle
    where
        P: Handles<M>,
        M: Message + Clone,
    {
        let target = Arc::downgrade(&self.cell);
        self.cell
            .group
            .kernel
            .timers
            .schedule(period, Some(period), move || match target.upgrade() {
                Some(cell) if !cell.has_terminated() => {
                    cell.deliver_unadmitted(P::into_message(msg.clone()), observe::UNOBSERVED)
                }
                _ => false,
            })
    }
}
