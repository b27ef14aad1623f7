//! The way out to one peer: its credit window, its two lanes, and the writer thread that
//! publishes them.
//!
//! Posting to another node never blocks and never does I/O. The posting thread takes one unit
//! of the peer's **credit window** (at most `window` data frames unacknowledged), encodes the
//! message and `try_send`s the frame into the peer's bounded **data lane**; if either is full
//! the message comes straight back as Rejected. One **writer thread** per peer drains the
//! lanes into Zenoh with congestion control `Block`: a put may wait there, but only the writer
//! waits, and the credit window keeps the backlog far below the point where Zenoh would close
//! the transport. The receiver acknowledges cumulatively (`Ack { received }`), which gives the
//! credit back.
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
//! **Down.** When the peer's token is withdrawn the link is closed for good: the credit word
//! gets its `DOWN` bit, what it counted (frames sent and never acknowledged) becomes
//! [`in_doubt`](crate::DistCounts::in_doubt), later posts return Terminated, and the writer
//! stops. A post racing with Down either took its credit before (and is counted in doubt, or
//! takes itself back out of that count when it hands its message back) or sees the bit.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, TrySendError};
use parking_lot::Mutex;
use zenoh::qos::{CongestionControl, Priority};
use zenoh::{Session, Wait};

use crate::counts::Counters;
use crate::NodeId;

/// Set in the credit word once the peer is Down.
const DOWN: u64 = 1 << 63;

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
    /// Data frames the writer has handed to Zenoh.
    published: Arc<AtomicU64>,
    /// Asks to this peer awaiting their end.
    asks: AtomicU64,
    /// Data frames handed to the data lane so far (a fence's mark: see `moves.rs`).
    enqueued: AtomicU64,
    /// Held for reading around each send to this peer, for writing while a fence's mark is
    /// read: no send is half done when it is (`moves.rs`). One per link, so senders to
    /// different peers never touch the same lock word.
    pub(crate) gate: parking_lot::RwLock<()>,
    data: Sender<Vec<u8>>,
    /// Kept so the data lane never disconnects before the link is dropped.
    _data_rx: Receiver<Vec<u8>>,
    control: Sender<Vec<u8>>,
    /// Dropped to stop the writer.
    stop: Mutex<Option<Sender<()>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl Link {
    /// Opens the link to `peer`, whose mailbox key is `key`, and starts its writer.
    pub(crate) fn open(
        session: &Session,
        peer: NodeId,
        key: String,
        window: usize,
    ) -> std::io::Result<Link> {
        let (data, data_rx) = crossbeam_channel::bounded(window);
        let (control, control_rx) = crossbeam_channel::bounded(2 * window + 16);
        let (stop, stop_rx) = crossbeam_channel::bounded(0);
        let session = session.clone();
        let published = Arc::new(AtomicU64::new(0));
        let lanes = Lanes {
            data: data_rx.clone(),
            control: control_rx,
            stop: stop_rx,
            published: Arc::clone(&published),
        };
        let writer = std::thread::Builder::new()
            .name(format!("whirl-dist-writer-{:08x}", peer.as_u128() as u32))
            .spawn(move || write_loop(&session, &key, &lanes))?;
        Ok(Link {
            window: window as u64,
            credit: AtomicU64::new(0),
            acked: AtomicU64::new(0),
            published,
            asks: AtomicU64::new(0),
            enqueued: AtomicU64::new(0),
            gate: parking_lot::RwLock::new(()),
            data,
            _data_rx: data_rx,
            control,
            stop: Mutex::new(Some(stop)),
            writer: Mutex::new(Some(writer)),
        })
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

    /// Queues a data frame (credit already taken). Cannot fail while the invariants hold:
    /// the link keeps a receiver of the lane (so it never disconnects), and the lane holds at
    /// most the credit outstanding, which is at most its capacity, because acknowledgements
    /// never refill more than the writer has published. On failure the frame comes back.
    pub(crate) fn send_data(&self, frame: Vec<u8>) -> Result<(), Vec<u8>> {
        self.data
            .try_send(frame)
            .map_err(TrySendError::into_inner)?;
        self.enqueued.fetch_add(1, Relaxed);
        Ok(())
    }

    /// Data frames handed to the data lane so far.
    pub(crate) fn enqueued(&self) -> u64 {
        self.enqueued.load(Relaxed)
    }

    /// Queues a control frame; `false` if the lane is full (the caller accounts for what the
    /// frame carried). A closed lane means the peer is Down and the frame moot.
    pub(crate) fn send_control(&self, frame: Vec<u8>) -> bool {
        !matches!(self.control.try_send(frame), Err(TrySendError::Full(_)))
    }

    /// The peer has taken `received` data frames in total: refill the window. A peer cannot
    /// acknowledge more than was published to it (a confused or hostile one is capped).
    pub(crate) fn on_ack(&self, received: u64) {
        let received = received.min(self.published.load(Acquire));
        let previous = self.acked.fetch_max(received, AcqRel);
        if received > previous {
            let delta = received - previous;
            let _ = self.credit.fetch_update(AcqRel, Acquire, |c| {
                (c & DOWN == 0).then(|| c.saturating_sub(delta))
            });
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
    /// many data frames were unacknowledged: they are in doubt. Idempotent: later calls
    /// return 0.
    pub(crate) fn close(&self) -> u64 {
        let before = self.credit.fetch_or(DOWN, AcqRel);
        self.stop.lock().take();
        match before & DOWN {
            0 => before,
            _ => 0,
        }
    }

    /// Waits for the writer to stop (after [`close`](Link::close)).
    pub(crate) fn join(&self) {
        if let Some(writer) = self.writer.lock().take() {
            let _ = writer.join();
        }
    }
}

/// What the writer drains.
struct Lanes {
    data: Receiver<Vec<u8>>,
    control: Receiver<Vec<u8>>,
    stop: Receiver<()>,
    published: Arc<AtomicU64>,
}

/// The writer: control frames first, then data, until stopped. Frames still queued when the
/// link closes are not sent (their credit is what [`Link::close`] counts in doubt).
fn write_loop(session: &Session, key: &str, lanes: &Lanes) {
    let Lanes {
        data,
        control,
        stop,
        published,
    } = lanes;
    let publisher = |priority| {
        session
            .declare_publisher(key.to_owned())
            .congestion_control(CongestionControl::Block)
            .priority(priority)
            .wait()
    };
    let (data_pub, control_pub) = match (
        publisher(Priority::Data),
        publisher(Priority::InteractiveHigh),
    ) {
        (Ok(d), Ok(c)) => (d, c),
        (Err(error), _) | (_, Err(error)) => {
            tracing::error!(key, %error, "cannot declare the publishers of a link; it sends nothing");
            // Wait for the stop so the lanes stay open until the link is closed (posts keep
            // getting credit refusals rather than a silent drop).
            let _ = stop.recv();
            return;
        }
    };
    loop {
        let (frame, is_control) = if let Ok(frame) = control.try_recv() {
            (frame, true)
        } else {
            crossbeam_channel::select! {
                recv(control) -> frame => match frame { Ok(f) => (f, true), Err(_) => return },
                recv(data) -> frame => match frame { Ok(f) => (f, false), Err(_) => return },
                recv(stop) -> _ => return,
            }
        };
        let target = if is_control { &control_pub } else { &data_pub };
        if let Err(error) = target.put(frame).wait() {
            tracing::warn!(key, %error, "a frame could not be published");
        }
        if !is_control {
            published.fetch_add(1, Release);
        }
    }
}
