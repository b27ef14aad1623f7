//! The way out to one peer: its credit window and its two lanes; and the node's small pool of
//! writer threads that publishes the lanes of every peer.
//!
//! Posting to another node never blocks and never does I/O. The posting thread takes one unit
//! of the peer's **credit window** (at most `window` data frames unacknowledged), encodes the
//! message and appends the frame to the peer's **data lane**; if the window is full the
//! message comes straight back as Rejected. The receiver acknowledges cumulatively
//! (`Ack { received }`), which gives the credit back.
//!
//! The **control lane** carries acknowledgements, bounces and replies, ahead of data and at
//! Zenoh's `InteractiveHigh` priority, so they never queue behind bulk data. Its capacity is
//! `2 × window + 16`, which bounds what can be outstanding when the peer uses the same window:
//! a bounce is queued before the acknowledgement that covers its frame, so at most the peer's
//! window of bounces are in the lane; asks awaiting an answer are limited to a window per peer,
//! so are replies; acknowledgements are cumulative, and one that finds the lane full can be
//! dropped (the next one covers it). A peer with a larger window can fill the lane: a bounce
//! that finds it full is dead-lettered on this node and counted
//! ([`bounce_overflow`](crate::DistCounts::bounce_overflow)), never dropped silently.
//!
//! **Lanes cost what they hold.** A lane is a `VecDeque` under the link's mutex, empty (and
//! unallocated) until a frame is queued; its bound is a count, not a preallocated buffer: the
//! data lane never holds more than the credit outstanding, the control lane refuses a frame
//! past its capacity. A lane that grew large is given back when the writer empties it, and
//! closing a link drops whatever it still holds. An idle link costs about 0.3 KiB plus, once
//! it has sent something, its two Zenoh publishers (about 4 KiB with Zenoh's state for them;
//! measured by `many_links_measure` below: a thread and 0.8 MiB per peer before the pool).
//!
//! **Writers.** A node has a small, fixed pool of writer threads ([`Writers`], two by
//! default), not one per peer. A link with frames is on the pool's **ready queue** at most
//! once. Which thread may touch a link's lanes is decided by one flag, `scheduled`, kept under
//! the same mutex as the lanes:
//!
//! * a post appends its frame and, if `scheduled` was false, sets it and pushes the link onto
//!   the ready queue (after releasing the link's mutex);
//! * a writer pops a link off the ready queue and owns it: it takes one frame at a time,
//!   control before data, seals it (the [`Seal`] hook, if any), and `put`s it on the lane's
//!   publisher, up to [`BUDGET`] frames; then it pushes the link back on the queue, so that a
//!   busy peer cannot starve the others;
//! * a writer that finds both lanes empty clears `scheduled` in the same critical section,
//!   and lets go of the link.
//!
//! No wakeup is lost: the "empty, so clear the flag" decision and the "append, and was the
//! flag clear?" decision are both made under the link's mutex, so they are ordered. A post
//! ordered after the clear sees the flag clear and schedules the link; a post ordered before
//! it left a frame the writer would have seen, so the writer could not have found the lanes
//! empty. And no link is drained by two writers at once: while `scheduled` is set the link is
//! either on the ready queue once or in the hands of one writer, never both, and a writer
//! takes it only off the queue. So each lane of a link is published in FIFO order by at most
//! one thread at a time, and the seal of a lane is called in its publish order.
//!
//! The writer publishes with congestion control `Block`: a put may wait while the peer's
//! transport queue is full, and then that writer waits, not the poster. One peer that stops
//! reading holds one writer for at most Zenoh's block timeout
//! (`transport/link/tx/queue/congestion_control/block/wait_before_close`, 5 s by default),
//! after which Zenoh closes that transport and the peer goes Down; meanwhile the other writers
//! serve the other links. The credit window keeps this rare: a peer is never sent more than
//! `window` frames it has not acknowledged, far below what fills Zenoh's queue. (Dropping
//! instead of blocking would lose frames that were accepted; we never do.) A link's two
//! publishers are declared by the first writer that has a frame for it, and dropped, which
//! undeclares them, when the link is closed.
//!
//! **Down.** When the peer's token is withdrawn the link is closed for good: the credit word
//! gets its `DOWN` bit, what it counted (frames sent and never acknowledged) becomes
//! [`in_doubt`](crate::DistCounts::in_doubt), later posts return Terminated, the frames still
//! queued are dropped unsent, and a writer drops the publishers. A post racing with Down either
//! took its credit before (and is counted in doubt, or takes itself back out of that count
//! when it hands its message back) or sees the bit. Nothing global keeps a closed link: the
//! ready queue may hold it until a writer sees it closed and lets go.

use std::collections::{BTreeSet, VecDeque};
use std::mem;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::transport::{Class, Publisher, Transport};
use parking_lot::{Condvar, Mutex};

use crate::counts::Counters;

/// Set in the credit word once the peer is Down.
const DOWN: u64 = 1 << 63;

/// Writer threads per node.
pub(crate) const DEFAULT_WRITERS: usize = 2;

/// Frames a writer publishes for one link before it moves on to the next ready link.
pub(crate) const BUDGET: usize = 64;

/// A lane whose buffer has room for more frames than this is given back when it empties.
const SHRINK_ABOVE: usize = 256;

/// Called by the writer on each frame just before it is published, with whether the frame is
/// on the control lane. Calls for one lane of a link are made one at a time, in publish order
/// (so a per-lane counter in a trailer numbers the frames as the peer receives them).
pub(crate) type Seal = Arc<dyn Fn(bool, &mut Vec<u8>) + Send + Sync>;

/// Why a frame could not be queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The credit window or the lane is full.
    Full,
    /// The peer is Down (or this node is shutting down).
    Down,
}

/// The outbound side of one peer.
pub(crate) struct Link {
    window: u64,
    /// Data frames sent and not yet acknowledged, plus the `DOWN` bit.
    credit: AtomicU64,
    /// The highest `Ack { received }` seen, capped at `published`.
    acked: AtomicU64,
    /// Data frames beyond `acked` that the peer answered already (a bounce, a redirect, a
    /// reply), by position: not in doubt if the peer goes Down before acknowledging them.
    /// Changed together with `acked`, under this lock.
    answered: Mutex<BTreeSet<u64>>,
    /// Asks to this peer awaiting their end.
    asks: AtomicU64,
    /// Data frames handed to the data lane so far (a fence's mark: see `moves.rs`).
    enqueued: AtomicU64,
    /// Held for reading around each send to this peer, for writing while a fence's mark is
    /// read: no send is half done when it is (`moves.rs`). One per link, so senders to
    /// different peers never touch the same lock word.
    pub(crate) gate: parking_lot::RwLock<()>,
    /// What the writers see: the lanes and the publishers.
    out: Arc<Outbox>,
    /// The node's writers, to schedule `out` on.
    pool: Arc<Pool>,
}

/// The part of a link the writers drain.
struct Outbox {
    /// The peer's mailbox key.
    key: String,
    control_capacity: usize,
    seal: Option<Seal>,
    /// Data frames a writer has handed to Zenoh.
    published: AtomicU64,
    lanes: Mutex<Lanes>,
    /// Signalled when `Lanes::scheduled` is cleared (for [`Link::join`]).
    idle: Condvar,
    /// Touched only by the thread that owns the link (`scheduled` set, off the ready queue),
    /// so never contended; a mutex only to make that ownership safe to express.
    publishers: Mutex<Publishers>,
}

struct Lanes {
    control: VecDeque<Vec<u8>>,
    data: VecDeque<Vec<u8>>,
    /// On the ready queue or owned by a writer (see the module documentation).
    scheduled: bool,
    closed: bool,
}

/// The publishers of a link's two lanes.
struct Pair {
    data: Box<dyn Publisher>,
    control: Box<dyn Publisher>,
}

enum Publishers {
    /// Not declared yet: nothing was published.
    Undeclared,
    /// Boxed: a link that never sends pays a word for them, not two publishers.
    Declared(Box<Pair>),
    /// Declaring failed, the link is closed, or publishing panicked: frames are dropped
    /// unsent. Data frames are then never acknowledged, so the window fills and posts are
    /// refused.
    Gone,
}

impl Link {
    /// Opens the link whose peer's mailbox key is `key`, served by `writers`, with a credit
    /// window of `window` data frames and a control lane sized for a peer that sends this node
    /// at most `control_window` unacknowledged frames (this node's own window, which TLS peers
    /// are told in the hello). Allocates no lane and declares nothing until a frame is queued.
    pub(crate) fn open(
        writers: &Writers,
        key: String,
        window: usize,
        control_window: usize,
        seal: Option<Seal>,
    ) -> Link {
        Link {
            window: window as u64,
            credit: AtomicU64::new(0),
            acked: AtomicU64::new(0),
            answered: Mutex::new(BTreeSet::new()),
            asks: AtomicU64::new(0),
            enqueued: AtomicU64::new(0),
            gate: parking_lot::RwLock::new(()),
            out: Arc::new(Outbox {
                key,
                control_capacity: 2 * control_window + 16,
                seal,
                published: AtomicU64::new(0),
                lanes: Mutex::new(Lanes {
                    control: VecDeque::new(),
                    data: VecDeque::new(),
                    scheduled: false,
                    closed: false,
                }),
                idle: Condvar::new(),
                publishers: Mutex::new(Publishers::Undeclared),
            }),
            pool: Arc::clone(&writers.pool),
        }
    }

    /// Takes one unit of credit for a data frame about to be queued.
    pub(crate) fn take_credit(&self) -> Result<(), Refusal> {
        let window = self.window;
        self.credit
            .fetch_update(AcqRel, Acquire, |c| (c < window).then_some(c + 1))
            .map(drop)
            .map_err(|c| match c & DOWN {
                0 => Refusal::Full,
                _ => Refusal::Down,
            })
    }

    /// Gives back a unit taken by [`take_credit`](Link::take_credit) for a frame that was not
    /// queued after all. If the link went Down in between, that unit was counted in doubt:
    /// take it back out of the count, since the message goes back to its sender.
    pub(crate) fn return_credit(&self, counts: &Counters) {
        if self
            .credit
            .fetch_update(AcqRel, Acquire, |c| (c & DOWN == 0).then(|| c - 1))
            .is_err()
        {
            counts.in_doubt.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Queues a data frame (credit already taken). The lane needs no bound of its own: it
    /// holds at most the credit outstanding. On a closed link the frame is dropped (its
    /// credit was counted in doubt by [`close`](Link::close)). Never fails today; the
    /// `Result` hands the frame back should a bound ever be added.
    pub(crate) fn send_data(&self, frame: Vec<u8>) -> Result<(), Vec<u8>> {
        self.enqueue(false, frame);
        self.enqueued.fetch_add(1, Relaxed);
        Ok(())
    }

    /// Data frames handed to the data lane so far.
    pub(crate) fn enqueued(&self) -> u64 {
        self.enqueued.load(Relaxed)
    }

    /// Queues a control frame; `false` if the lane is full (the caller accounts for what the
    /// frame carried). A closed link means the peer is Down and the frame moot: it is dropped.
    pub(crate) fn send_control(&self, frame: Vec<u8>) -> bool {
        self.enqueue(true, frame)
    }

    /// Appends `frame` to a lane and schedules the link if no writer has it; `false` only if
    /// the control lane is full.
    fn enqueue(&self, is_control: bool, frame: Vec<u8>) -> bool {
        let mut lanes = self.out.lanes.lock();
        if lanes.closed {
            return true;
        }
        if is_control {
            if lanes.control.len() >= self.out.control_capacity {
                return false;
            }
            lanes.control.push_back(frame);
        } else {
            lanes.data.push_back(frame);
        }
        let wake = !mem::replace(&mut lanes.scheduled, true);
        drop(lanes);
        if wake {
            self.pool.schedule(Arc::clone(&self.out));
        }
        true
    }

    /// The peer has taken `received` data frames in total: refill the window. A peer cannot
    /// acknowledge more than was published to it (a confused or hostile one is capped).
    pub(crate) fn on_ack(&self, received: u64) {
        let received = received.min(self.out.published.load(Acquire));
        let mut answered = self.answered.lock();
        let previous = self.acked.fetch_max(received, AcqRel);
        if !answered.is_empty() {
            *answered = answered.split_off(&(received + 1));
        }
        drop(answered);
        if received > previous {
            let delta = received - previous;
            let _ = self.credit.fetch_update(AcqRel, Acquire, |c| {
                (c & DOWN == 0).then(|| c.saturating_sub(delta))
            });
        }
    }

    /// The peer answered the `seq`-th data frame it took (bounced, redirected or replied to
    /// it): if that frame is not acknowledged yet, it is not in doubt any more. A position
    /// beyond what was published is ignored (a peer cannot answer what it never got).
    pub(crate) fn answered(&self, seq: u64) {
        // Most answers come after their acknowledgement (no lock then), or name nothing.
        if seq <= self.acked.load(Acquire) || seq > self.out.published.load(Acquire) {
            return;
        }
        let mut answered = self.answered.lock();
        if seq > self.acked.load(Acquire) {
            answered.insert(seq);
        }
    }

    /// Reserves a slot for an ask awaiting its answer; `false` if `window` are already out.
    pub(crate) fn begin_ask(&self) -> bool {
        let window = self.window;
        self.asks
            .fetch_update(AcqRel, Acquire, |n| (n < window).then_some(n + 1))
            .is_ok()
    }

    /// Frees a slot reserved by [`begin_ask`](Link::begin_ask).
    pub(crate) fn end_ask(&self) {
        let _ = self
            .asks
            .fetch_update(AcqRel, Acquire, |n| n.checked_sub(1));
    }

    /// Closes the link for good (the peer is Down, or this node shuts down). Returns how
    /// many data frames were unacknowledged and unanswered: they are in doubt. Idempotent: later calls
    /// return 0. Never blocks on a writer: the frames still queued are dropped here, and the
    /// link is scheduled so that a writer drops its publishers.
    pub(crate) fn close(&self) -> u64 {
        let before = self.credit.fetch_or(DOWN, AcqRel);
        let mut lanes = self.out.lanes.lock();
        if !lanes.closed {
            lanes.closed = true;
            let unsent = (mem::take(&mut lanes.control), mem::take(&mut lanes.data));
            let wake = !mem::replace(&mut lanes.scheduled, true);
            drop(lanes);
            drop(unsent);
            if wake {
                self.pool.schedule(Arc::clone(&self.out));
            }
        }
        match before & DOWN {
            0 => before.saturating_sub(self.answered.lock().len() as u64),
            _ => 0,
        }
    }

    /// Waits, after [`close`](Link::close), until no writer touches this link any more and its
    /// publishers are dropped (a put under way may take up to Zenoh's block timeout). The
    /// writer that let go of it may still hold a reference for a moment, to drop it.
    pub(crate) fn join(&self) {
        let mut lanes = self.out.lanes.lock();
        while lanes.closed && lanes.scheduled {
            // Each wait is bounded only as a precaution: clearing `scheduled` signals `idle`.
            self.out
                .idle
                .wait_for(&mut lanes, Duration::from_millis(100));
        }
    }
}

impl Outbox {
    /// Publishes up to [`BUDGET`] frames, control first; the caller owns the link. Returns
    /// `true` if the link is still scheduled (the caller puts it back on the ready queue),
    /// `false` if the writer let go of it.
    fn drain(&self, transport: &dyn Transport) -> bool {
        for _ in 0..BUDGET {
            let mut lanes = self.lanes.lock();
            if lanes.closed {
                // `close` emptied the lanes and left the publishers to the owner: this writer.
                drop(lanes);
                self.retire();
                return false;
            }
            let (is_control, frame) = match lanes.control.pop_front() {
                Some(frame) => (true, frame),
                None => match lanes.data.pop_front() {
                    Some(frame) => (false, frame),
                    None => {
                        // Empty: let go, in the same critical section as the check (no lost
                        // wakeup, see the module documentation), and give back large buffers.
                        lanes.scheduled = false;
                        let spare = (shrink(&mut lanes.control), shrink(&mut lanes.data));
                        drop(lanes);
                        self.idle.notify_all();
                        drop(spare);
                        return false;
                    }
                },
            };
            drop(lanes);
            self.publish(transport, is_control, frame);
        }
        true
    }

    /// Seals and publishes one frame on its lane's publisher, declaring them on first use.
    fn publish(&self, transport: &dyn Transport, is_control: bool, mut frame: Vec<u8>) {
        let mut publishers = self.publishers.lock();
        if matches!(*publishers, Publishers::Undeclared) {
            *publishers = self.declare(transport);
        }
        let Publishers::Declared(pair) = &*publishers else {
            return;
        };
        if let Some(seal) = &self.seal {
            seal(is_control, &mut frame);
        }
        let target = if is_control {
            &pair.control
        } else {
            &pair.data
        };
        if let Err(error) = target.put(frame) {
            tracing::warn!(key = self.key.as_str(), %error, "a frame could not be published");
        }
        if !is_control {
            self.published.fetch_add(1, Release);
        }
    }

    fn declare(&self, transport: &dyn Transport) -> Publishers {
        let publisher = |class| transport.publisher(&self.key, class);
        match (publisher(Class::Data), publisher(Class::Control)) {
            (Ok(data), Ok(control)) => Publishers::Declared(Box::new(Pair { data, control })),
            (Err(error), _) | (_, Err(error)) => {
                tracing::error!(key = self.key.as_str(), %error, "cannot declare the publishers of a link; it sends nothing");
                Publishers::Gone
            }
        }
    }

    /// Lets go of a link for good (it is closed, the pool stops, or publishing panicked):
    /// drops its publishers and its frames and clears `scheduled`; frames queued later are
    /// dropped unsent by the writer (`Publishers::Gone`). Only the link's owner calls this.
    fn retire(&self) {
        let publishers = mem::replace(&mut *self.publishers.lock(), Publishers::Gone);
        drop(publishers);
        let mut lanes = self.lanes.lock();
        let unsent = (mem::take(&mut lanes.control), mem::take(&mut lanes.data));
        lanes.scheduled = false;
        drop(lanes);
        self.idle.notify_all();
        drop(unsent);
    }
}

/// Takes a lane's buffer if it is empty and large, to be dropped outside the lock.
fn shrink(lane: &mut VecDeque<Vec<u8>>) -> Option<VecDeque<Vec<u8>>> {
    (lane.is_empty() && lane.capacity() > SHRINK_ABOVE).then(|| mem::take(lane))
}

/// The node's writer threads; stopped by [`stop`](Writers::stop) or when dropped.
pub(crate) struct Writers {
    pool: Arc<Pool>,
    /// Where [`flush`](Writers::flush) publishes.
    transport: Arc<dyn Transport>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// What the writers and the links share.
struct Pool {
    ready: Mutex<Ready>,
    /// Signalled when a link is pushed or the pool stops.
    wake: Condvar,
}

struct Ready {
    /// Links with `scheduled` set that no writer holds, each at most once.
    queue: VecDeque<Arc<Outbox>>,
    stopped: bool,
}

impl Writers {
    /// Starts `count` writer threads publishing on `transport`.
    pub(crate) fn start(transport: &Arc<dyn Transport>, count: usize) -> std::io::Result<Writers> {
        let writers = Writers {
            pool: Arc::new(Pool {
                ready: Mutex::new(Ready {
                    queue: VecDeque::new(),
                    stopped: false,
                }),
                wake: Condvar::new(),
            }),
            transport: Arc::clone(transport),
            threads: Mutex::new(Vec::with_capacity(count)),
        };
        for i in 0..count {
            let pool = Arc::clone(&writers.pool);
            let transport = Arc::clone(transport);
            let thread = std::thread::Builder::new()
                .name(format!("whirl-dist-writer-{i}"))
                .spawn(move || pool.run(&*transport))?;
            writers.threads.lock().push(thread);
        }
        Ok(writers)
    }

    /// Publishes every ready link's frames on the calling thread, one link at a time in the
    /// order they became ready (a simulator's step, on a pool started with no threads).
    /// Returns the links drained.
    pub(crate) fn flush(&self) -> usize {
        let mut drained = 0;
        loop {
            let Some(out) = self.pool.ready.lock().queue.pop_front() else {
                return drained;
            };
            drained += 1;
            if out.drain(&*self.transport) {
                self.pool.schedule(out);
            }
        }
    }

    /// Stops the writers once each is done with the link in its hands, and lets go of the
    /// links still ready (their frames are not sent). Idempotent. Links scheduled later are let
    /// go of at once.
    pub(crate) fn stop(&self) {
        self.pool.ready.lock().stopped = true;
        self.pool.wake.notify_all();
        let threads = mem::take(&mut *self.threads.lock());
        for thread in threads {
            let _ = thread.join();
        }
        let left = mem::take(&mut self.pool.ready.lock().queue);
        for out in left {
            out.retire();
        }
    }
}

impl Drop for Writers {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Pool {
    /// Puts a link its caller owns (it set `scheduled`, or drained it) on the ready queue.
    fn schedule(&self, out: Arc<Outbox>) {
        let mut ready = self.ready.lock();
        if ready.stopped {
            drop(ready);
            out.retire();
            return;
        }
        ready.queue.push_back(out);
        drop(ready);
        self.wake.notify_one();
    }

    /// A writer: takes the next ready link, drains it, puts it back if it has more.
    fn run(&self, transport: &dyn Transport) {
        loop {
            let out = {
                let mut ready = self.ready.lock();
                loop {
                    if ready.stopped {
                        return;
                    }
                    if let Some(out) = ready.queue.pop_front() {
                        break out;
                    }
                    self.wake.wait(&mut ready);
                }
            };
            // A panic (in a seal, say) must not take a writer away from every other link.
            // The link's state is a mutex-guarded flag and lanes that `retire` resets (no
            // mutex is poisoned), so it is safe to observe after the unwind.
            match std::panic::catch_unwind(AssertUnwindSafe(|| out.drain(transport))) {
                Ok(true) => self.schedule(out),
                Ok(false) => {}
                Err(_) => {
                    tracing::error!(
                        key = out.key.as_str(),
                        "publishing on a link panicked; the link sends nothing more"
                    );
                    out.retire();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU32;
    use std::sync::Weak;
    use std::time::Instant;

    use super::*;

    /// A Zenoh transport that talks to nobody: no listener, no scouting.
    fn session() -> Arc<dyn Transport> {
        let mut config = zenoh::Config::default();
        for (key, value) in [
            ("mode", "\"peer\""),
            ("listen/endpoints", "[]"),
            ("connect/endpoints", "[]"),
            ("scouting/multicast/enabled", "false"),
            ("scouting/gossip/enabled", "false"),
        ] {
            config.insert_json5(key, value).expect("config");
        }
        crate::transport::ZenohTransport::open(config).expect("session")
    }

    /// A field of `/proc/self/status` (`Threads`, `VmRSS` in KiB).
    fn status(field: &str) -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
        status
            .lines()
            .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
            .expect("field")
    }

    fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn control_lane_is_bounded_by_count_and_close_frees_it() {
        let session = session();
        // No writer threads: nothing drains, so the lane fills.
        let writers = Writers::start(&session, 0).expect("writers");
        let link = Link::open(&writers, "whirl/link-test/bounded".into(), 4, 4, None);
        assert_eq!(
            link.out.lanes.lock().control.capacity(),
            0,
            "allocated lazily"
        );
        for _ in 0..(2 * 4 + 16) {
            assert!(link.send_control(vec![0; 8]));
        }
        assert!(!link.send_control(vec![0; 8]), "full at 2 × window + 16");
        link.take_credit().expect("credit");
        link.send_data(vec![1; 8]).expect("queued");
        assert_eq!(link.close(), 1);
        assert_eq!(link.close(), 0, "idempotent");
        assert!(link.send_control(vec![0; 8]), "moot once closed");
        assert_eq!(link.take_credit(), Err(Refusal::Down));
        {
            let lanes = link.out.lanes.lock();
            assert!(lanes.control.capacity() == 0 && lanes.data.capacity() == 0);
        }
        // The close scheduled the link; the stopped pool lets go of it.
        writers.stop();
        link.join();
        assert_eq!(Arc::strong_count(&link.out), 1);
    }

    #[test]
    fn lanes_are_published_in_order_sealed_in_order_control_first() {
        let session = session();
        let key = "whirl/link-test/order";
        let got = Arc::new(Mutex::new(Vec::<Vec<u8>>::new()));
        let sink = Arc::clone(&got);
        let _subscriber = session
            .subscribe(
                key,
                Box::new(move |payload| sink.lock().push(payload.to_vec())),
            )
            .expect("subscriber");
        let counters = Arc::new([AtomicU32::new(0), AtomicU32::new(0)]);
        let seal_counters = Arc::clone(&counters);
        let seal: Seal = Arc::new(move |is_control, frame: &mut Vec<u8>| {
            let n = seal_counters[usize::from(is_control)].fetch_add(1, Relaxed);
            frame.extend_from_slice(&n.to_le_bytes());
        });
        // No writers yet: queue both lanes, then let one writer drain.
        let idle = Writers::start(&session, 0).expect("writers");
        let link = Link::open(&idle, key.into(), 1024, 1024, Some(seal.clone()));
        for i in 0..300u32 {
            link.take_credit().expect("credit");
            let mut frame = vec![0];
            frame.extend_from_slice(&i.to_le_bytes());
            link.send_data(frame).expect("queued");
            let mut frame = vec![1];
            frame.extend_from_slice(&i.to_le_bytes());
            assert!(link.send_control(frame));
        }
        // Hand the queued link to a live pool, as the stopped pool would have dropped it.
        let writers = Writers::start(&session, 2).expect("writers");
        let ready = mem::take(&mut idle.pool.ready.lock().queue);
        for out in ready {
            writers.pool.schedule(out);
        }
        wait_until("600 frames", || got.lock().len() == 600);
        let got = got.lock().clone();
        // Everything of the control lane was queued before the writer ran: it goes first.
        assert!(got[..300].iter().all(|f| f[0] == 1));
        let mut next = [0u32; 2];
        for frame in &got {
            let lane = usize::from(frame[0]);
            let seq = u32::from_le_bytes(frame[1..5].try_into().expect("seq"));
            let sealed = u32::from_le_bytes(frame[5..9].try_into().expect("seal"));
            assert_eq!((seq, sealed), (next[lane], next[lane]), "lane {lane}");
            next[lane] += 1;
        }
        assert_eq!(link.out.published.load(Acquire), 300);
        // Now concurrently: posts race with the writers; each lane stays in order.
        let link = Arc::new(Link::open(
            &writers,
            key.into(),
            1 << 20,
            1 << 20,
            Some(seal),
        ));
        counters[0].store(0, Relaxed);
        counters[1].store(0, Relaxed);
        let sink = Arc::new(Mutex::new(Vec::<Vec<u8>>::new()));
        let sink2 = Arc::clone(&sink);
        let _second = session
            .subscribe(
                key,
                Box::new(move |payload| sink2.lock().push(payload.to_vec())),
            )
            .expect("subscriber");
        for i in 0..5000u32 {
            link.take_credit().expect("credit");
            let mut frame = vec![0];
            frame.extend_from_slice(&i.to_le_bytes());
            link.send_data(frame).expect("queued");
            if i % 3 == 0 {
                let mut frame = vec![1];
                frame.extend_from_slice(&(i / 3).to_le_bytes());
                assert!(link.send_control(frame));
            }
            if i % 97 == 0 {
                std::thread::yield_now();
            }
        }
        wait_until("the racing frames", || {
            link.out.published.load(Acquire) == 5000 && sink.lock().len() == 5000 + 1667
        });
        let mut next = [0u32; 2];
        for frame in sink.lock().iter() {
            let lane = usize::from(frame[0]);
            let seq = u32::from_le_bytes(frame[1..5].try_into().expect("seq"));
            let sealed = u32::from_le_bytes(frame[5..9].try_into().expect("seal"));
            assert_eq!((seq, sealed), (next[lane], next[lane]), "lane {lane}");
            next[lane] += 1;
        }
        assert!(!link.out.lanes.lock().scheduled, "let go once empty");
        link.close();
        link.join();
        writers.stop();
    }

    #[test]
    fn a_panicking_seal_costs_its_link_not_the_writer() {
        let session = session();
        let writers = Writers::start(&session, 1).expect("writers");
        let seal: Seal = Arc::new(|_, _: &mut Vec<u8>| panic!("a seal that fails"));
        let broken = Link::open(&writers, "whirl/link-test/broken".into(), 8, 8, Some(seal));
        let healthy = Link::open(&writers, "whirl/link-test/healthy".into(), 8, 8, None);
        broken.take_credit().expect("credit");
        broken.send_data(vec![0]).expect("queued");
        wait_until("the broken link to be let go", || {
            !broken.out.lanes.lock().scheduled
        });
        // The only writer survived: the other link is served.
        healthy.take_credit().expect("credit");
        healthy.send_data(vec![0]).expect("queued");
        wait_until("the healthy link to publish", || {
            healthy.out.published.load(Acquire) == 1
        });
        // The broken link drops what it is given; its window fills, so posts are refused.
        for _ in 1..8 {
            broken.take_credit().expect("credit");
            broken.send_data(vec![0]).expect("queued");
        }
        assert_eq!(broken.take_credit(), Err(Refusal::Full));
        assert_eq!(broken.out.published.load(Acquire), 0);
        broken.close();
        healthy.close();
        broken.join();
        healthy.join();
        writers.stop();
    }

    /// Runs [`many_links_measure`] alone in a child process, so that no other test's threads
    /// are counted.
    #[test]
    fn many_links_share_the_pool_and_are_freed() {
        let exe = std::env::current_exe().expect("test binary");
        let output = std::process::Command::new(exe)
            .args([
                "link::tests::many_links_measure",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .output()
            .expect("run the measurement");
        let stdout = String::from_utf8_lossy(&output.stdout);
        println!("{stdout}{}", String::from_utf8_lossy(&output.stderr));
        assert!(output.status.success(), "the measurement failed");
        assert!(stdout.contains("1 passed"), "the measurement did not run");
    }

    /// Opens 1,000 links on one pool of two writers, sends one data and one control frame on
    /// each (declaring their publishers), and checks that the process gained only the two
    /// writer threads and that closing and dropping the links frees them. Prints the
    /// figures. Run by [`many_links_share_the_pool_and_are_freed`].
    #[test]
    #[ignore = "run alone, in its own process, by many_links_share_the_pool_and_are_freed"]
    fn many_links_measure() {
        const LINKS: usize = 1000;
        const WINDOW: usize = 8192;
        let session = session();
        // Let Zenoh start what it starts on a first declaration and put.
        let warm = session.publisher("whirl/link-test/warm", Class::Data);
        warm.expect("publisher").put(vec![0]).expect("put");
        std::thread::sleep(Duration::from_millis(200));
        let (threads0, rss0) = (status("Threads"), status("VmRSS"));
        let writers = Writers::start(&session, DEFAULT_WRITERS).expect("writers");
        let (threads1, rss1) = (status("Threads"), status("VmRSS"));
        let links: Vec<Link> = (0..LINKS)
            .map(|i| {
                Link::open(
                    &writers,
                    format!("whirl/link-test/n/{i}/mbox"),
                    WINDOW,
                    WINDOW,
                    None,
                )
            })
            .collect();
        let (threads2, rss2) = (status("Threads"), status("VmRSS"));
        for link in &links {
            link.take_credit().expect("credit");
            link.send_data(vec![7; 64]).expect("queued");
            assert!(link.send_control(vec![8; 16]));
        }
        wait_until("every link to publish", || {
            links.iter().all(|l| l.out.published.load(Acquire) == 1)
        });
        wait_until("the writers to let go", || {
            links.iter().all(|l| !l.out.lanes.lock().scheduled)
        });
        let (threads3, rss3) = (status("Threads"), status("VmRSS"));
        let kib = |a: u64, b: u64| (b as f64 - a as f64) / LINKS as f64;
        println!(
            "threads: {threads0} before the pool, {threads1} with it, {threads2} with {LINKS} links open, {threads3} after each sent a frame"
        );
        println!(
            "RSS KiB: {rss0} before, {rss1} with the pool, {rss2} with {LINKS} links open ({:.2} KiB/link), {rss3} after each sent a frame ({:.2} KiB/link incl. publishers)",
            kib(rss1, rss2),
            kib(rss1, rss3)
        );
        assert_eq!(threads1, threads0 + DEFAULT_WRITERS as u64);
        assert!(threads3 <= threads1, "links must not add threads");
        let weak: Vec<Weak<Outbox>> = links.iter().map(|l| Arc::downgrade(&l.out)).collect();
        for link in &links {
            assert_eq!(link.close(), 1, "the frame was never acknowledged");
        }
        for link in &links {
            link.join();
        }
        drop(links);
        // A writer that let go of a link drops its reference just after signalling `join`.
        let alive = || weak.iter().filter(|w| w.strong_count() > 0).count();
        wait_until("closed and dropped links to be freed", || alive() == 0);
        println!(
            "after close and drop: {} links alive, RSS {} KiB",
            alive(),
            status("VmRSS")
        );
        writers.stop();
        assert_eq!(status("Threads"), threads0);
    }
}
