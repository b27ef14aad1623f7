//! What a group schedules: a [`Task`], a type-erased process its workers run one turn at a
//! time, and the [`Recorder`] a worker lends to each turn it runs.
//!
//! The group layer knows nothing of processes: the `process` layer implements [`Runnable`]
//! for its cells. Data flows one way: a turn reports what it is running and how long it took
//! into the recorder it was given (its worker's probe and statistics), and never calls back
//! into the worker.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::time::Duration;

use super::move_error::MoveError;
use super::pool::{now, Slot};
use super::probe::TurnProbe;
use crate::control::{LocalStats, ProcessInfo, Relations, Supervision};
use crate::lifecycle::{ExitReason, ProcessId};
use crate::principal::Principal;

/// A type-erased process the scheduler can run and the runtime can stop.
pub(crate) trait Runnable: Send + Sync + 'static {
    /// Runs one turn, recording into `recorder`; returns the messages handled. A `sampled`
    /// turn is timed and records its messages' queue latencies (`control/stats.rs`). The
    /// caller passes the token it holds (the `Arc` in the run queue).
    fn run(self: Arc<Self>, sampled: bool, recorder: &Recorder) -> usize;
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
    /// The highest priority among the principals its queued messages were posted on behalf
    /// of, if any (priority inheritance). Default: none.
    fn inherited_priority(&self) -> Option<u8> {
        None
    }
    /// The name of the process's group.
    fn group_name(&self) -> &str;
    /// The process's row of the process table (`Runtime::processes`), without its names and
    /// group; `None` for what is not a process.
    fn row(&self) -> Option<ProcessInfo> {
        None
    }
    /// Who the process watches and who watches it, and its supervisor.
    fn relations(&self) -> Relations {
        Relations::default()
    }
    /// Records where the process sits in a supervision tree (a supervisor just started it).
    fn set_supervision(&self, supervision: Supervision) {
        let _ = supervision;
    }
    /// Asks the process to move at its next message boundary (`process/relocate.rs`) to the
    /// group `to`, which is always an `Arc<GroupShared>`: passed erased because this module
    /// sits below `shared.rs` (a group runs `Task`s) and so cannot name the group's type.
    fn request_move(self: Arc<Self>, to: &dyn Any) -> Result<(), MoveError>;
    /// The process's stage for cohort scheduling (`scheduler/cohort.rs`): its process type.
    /// The default names the implementing type; the process layer names the process type.
    fn stage(&self) -> super::stage::Stage {
        super::stage::Stage::of::<Self>()
    }
}

/// A run-queue entry: one strong reference, owned by whoever holds the token.
pub(crate) type Task = Arc<dyn Runnable>;

/// Where the turns a worker runs report: the probe of its pool slot (what runs now, readable
/// from any thread) and its local statistics, published to the slot now and then. One per
/// worker, lent by reference to every turn (nothing is built per turn).
pub(crate) struct Recorder {
    pub(super) slot: Arc<Slot>,
    pub(super) stats: RefCell<LocalStats>,
    /// Whether turns open a `tracing` span: whether a subscriber wants TRACE, as the worker
    /// last looked (once every `SAMPLE_EVERY` turns), so a turn reads a flag of its own
    /// worker instead of asking tracing.
    pub(super) spans: Cell<bool>,
    /// The span of the turn running now, entered, when `spans` is on. Kept as a `Span`
    /// entered and exited by hand: the guard type is not `Send`, and a recorder moves to its
    /// worker's thread when the worker starts.
    turn_span: RefCell<Option<tracing::Span>>,
    /// The span of a message whose handler failed this turn (`keep_failed_span`).
    failed_span: RefCell<Option<tracing::Span>>,
}

impl Recorder {
    /// The recorder of a worker holding `slot`.
    pub(crate) fn new(slot: Arc<Slot>) -> Self {
        Recorder {
            slot,
            stats: RefCell::new(LocalStats::new()),
            spans: Cell::new(tracing::level_enabled!(tracing::Level::TRACE)),
            turn_span: RefCell::new(None),
            failed_span: RefCell::new(None),
        }
    }

    /// Whether a turn should open its `tracing` span (a subscriber wants TRACE, as of a few
    /// turns ago).
    #[inline]
    pub(crate) fn spans(&self) -> bool {
        self.spans.get()
    }

    /// Enters `span` for the turn beginning (closed by [`Recorder::close_turn_span`]).
    #[cold]
    pub(crate) fn open_turn_span(&self, span: tracing::Span) {
        if let Ok(mut slot) = self.turn_span.try_borrow_mut() {
            span.with_subscriber(|(id, dispatch)| dispatch.enter(id));
            *slot = Some(span);
        }
    }

    /// Keeps the span of a message whose handler failed, for the turn's end
    /// ([`Recorder::take_failed_span`]).
    #[cold]
    pub(crate) fn keep_failed_span(&self, span: tracing::Span) {
        if let Ok(mut slot) = self.failed_span.try_borrow_mut() {
            *slot = Some(span);
        }
    }

    /// The span [`Recorder::keep_failed_span`] kept, if any.
    #[cold]
    pub(crate) fn take_failed_span(&self) -> Option<tracing::Span> {
        self.failed_span.try_borrow_mut().ok()?.take()
    }

    /// Leaves and closes the turn's span, if one is open.
    #[cold]
    pub(crate) fn close_turn_span(&self) {
        if let Ok(mut slot) = self.turn_span.try_borrow_mut() {
            if let Some(span) = slot.take() {
                span.with_subscriber(|(id, dispatch)| dispatch.exit(id));
            }
        }
    }

    /// Publishes what the turns recorded to the slot, if anything is new.
    pub(crate) fn publish(&self) {
        if let Ok(mut stats) = self.stats.try_borrow_mut() {
            if stats.is_dirty() {
                stats.publish(&self.slot.stats, now());
            }
        }
    }

    /// Marks the start of an idle spell of the slot's worker (for this slot's group),
    /// publishing what the last turns recorded.
    pub(crate) fn begin_idle(&self) {
        self.publish();
        let since = now().as_nanos() as u64;
        self.slot
            .stats
            .idle_since
            .store(since + 1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Ends the idle spell [`Recorder::begin_idle`] began, adding it to the slot's idle time.
    pub(crate) fn end_idle(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        let stats = &self.slot.stats;
        let since = stats.idle_since.swap(0, Relaxed);
        if since != 0 {
            let now = now().as_nanos() as u64;
            stats
                .idle_nanos
                .fetch_add(now.saturating_sub(since - 1), Relaxed);
        }
    }

    /// Where a turn publishes the process and message it is running.
    #[inline]
    pub(crate) fn probe(&self) -> &TurnProbe {
        &self.slot.probe
    }

    fn record(&self, f: impl FnOnce(&mut LocalStats)) {
        // Borrowed only for the length of one record, never across a handler.
        if let Ok(mut stats) = self.stats.try_borrow_mut() {
            f(&mut stats);
        }
    }

    /// A message handled in a sampled turn had waited `millis` in its inbox.
    #[cold]
    pub(crate) fn queue_latency(&self, millis: u16) {
        self.record(|stats| stats.record_queue_latency(Duration::from_millis(u64::from(millis))));
    }

    /// A timed turn (sampled, or serving a principal) handled `handled` messages in `elapsed`.
    #[cold]
    pub(crate) fn timed(&self, handled: usize, elapsed: Duration, principal: Option<&Principal>) {
        self.record(|stats| {
            let now = now();
            if stats.record_turn(handled as u64, elapsed, principal, now) {
                stats.publish(&self.slot.stats, now);
            }
        });
    }

    /// A handler waited `wait` for a lock (`Ctx::lock_timed`).
    pub(crate) fn lock_wait(&self, wait: Duration) {
        self.record(|stats| stats.record_lock_wait(wait));
    }
}

/// Which turns of one worker are sampled: one in [`SAMPLE_EVERY`](crate::control::SAMPLE_EVERY),
/// and the first of each new millisecond of the shared coarse clock to handle a message (see
/// `worker.rs`, `run_task`). Shared by both kinds of worker.
pub(crate) struct Sampler {
    /// The shared clock's millisecond at the worker's last sampled turn.
    sampled_ms: Cell<u32>,
}

impl Sampler {
    pub(crate) fn new() -> Self {
        Sampler {
            sampled_ms: Cell::new(u32::MAX),
        }
    }

    /// Runs the worker's `tick`th turn with `run`, telling it whether it is sampled; every
    /// `SAMPLE_EVERY` turns, first refreshes whether `recorder`'s turns open tracing spans.
    #[inline]
    pub(crate) fn run(
        &self,
        tick: u32,
        recorder: &Recorder,
        run: impl FnOnce(bool) -> usize,
    ) -> usize {
        let ms = crate::time::shared_millis();
        let every = tick.is_multiple_of(crate::control::SAMPLE_EVERY);
        if every {
            // Whether turns open tracing spans, looked up once per `SAMPLE_EVERY` turns.
            recorder
                .spans
                .set(tracing::level_enabled!(tracing::Level::TRACE));
        }
        let sampled = every || ms != self.sampled_ms.get();
        let handled = run(sampled);
        if sampled && handled > 0 {
            self.sampled_ms.set(ms);
        }
        handled
    }
}

/// Whether a worker's LIFO slot holds something, without taking it out.
pub(crate) fn is_occupied<T>(slot: &Cell<Option<T>>) -> bool {
    let value = slot.take();
    let occupied = value.is_some();
    slot.set(value);
    occupied
}
