//! The scheduling state machine of one process: its inbox plus an atomic word that says who
//! may run it.
//!
//! The word holds seven bits:
//!
//! * `SCHEDULED` — the *token*. Whoever sets it (from clear) owns the process: it alone pops
//!   the inbox and touches the process state, until it clears the bit again. A process is
//!   therefore never run on two threads at once (invariant I1), and there is never more than
//!   one entry for it in any run queue.
//! * `CLOSED` — the process has terminated. Set once, by the token holder. Posts that see it
//!   return the message to the sender; messages that slipped in before the bit became visible
//!   are drained to the dead-letter sink by whoever holds the token next.
//! * `KILL` — someone outside asked the process to terminate (a linked failure, shutdown).
//!   The token holder acts on it at its next turn.
//! * `SUSPENDED` — the token holder is an async handler's pending future, not a thread: the
//!   process is on no run queue and no worker. Posts only queue (the token is held); whoever
//!   clears the bit — the future's waker, or a kill request — takes over the token and puts the
//!   process on a run queue. Exactly one party clears it (a `fetch_and` that saw it set).
//! * `WOKEN` — the future was woken while it was being polled; the poller, about to suspend,
//!   sees it and polls again instead.
//! * `STARTED` — the process's first turn has begun (its `started` hook ran, or was skipped).
//!   Only token holders read or write it; kept here rather than in the process's body, where a
//!   flag would cost a word per process.
//! * `MOVED` — set with `CLOSED` when the process moved to another group (`relocate.rs`): its
//!   messages go on to the cell it moved to instead of the dead-letter sink. A producer that
//!   pushed into such a mailbox while another thread held the token learns it from the push
//!   ([`AfterPush::Moved`]) and waits until its message has been passed on, so that its next
//!   message, sent straight to the new cell, cannot overtake it.
//!
//! The protocol that guarantees no message is stranded: a producer pushes, *then* looks at the
//! token and takes it if it is free; a token holder that runs out of messages clears the
//! token, *then* looks at the inbox once more and takes the token back if it is not empty.
//! Each party's write and the read after it are `SeqCst` operations (the producer's reserving
//! compare-exchange on the inbox's tail and its load of this word; the holder's read-modify-write
//! of this word and its load of the tail), and C++20's single order of `SeqCst` operations then
//! ensures one of the two always sees the other's write, with no fence on either side
//! (`Mailbox::release` says why). The loom build adds a fence on each side, because loom models
//! `SeqCst` accesses as acquire and release ones. Closing a moved mailbox and draining a closed
//! one do execute a `SeqCst` fence (`Mailbox::close_moved`, `Mailbox::drain_closed`).
//! `src/loom_tests.rs` checks this exhaustively.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, SeqCst};

use super::inbox::{Cursor, Inbox};
use crate::sync::{fence, AtomicUsize};

const SCHEDULED: usize = 0b001;
const CLOSED: usize = 0b010;
const KILL: usize = 0b100;
const SUSPENDED: usize = 0b1000;
const WOKEN: usize = 0b1_0000;
const STARTED: usize = 0b10_0000;
const MOVED: usize = 0b100_0000;

/// What a producer must do after handing a message to [`Mailbox::push`].
#[derive(Debug, PartialEq, Eq)]
#[must_use]
pub(crate) enum AfterPush {
    /// Someone else holds the token and will see the message.
    Nothing,
    /// The caller now holds the token of a live process: put it on a run queue.
    Schedule,
    /// The caller now holds the token of a terminated process: drain it to dead letters with
    /// [`Mailbox::drain_closed`].
    Drain,
    /// The process has moved to another group and another thread holds the token of this,
    /// its old mailbox: the message may still be here. The caller must take the token
    /// ([`Mailbox::try_take`]) and pass on what is queued before it sends anything else.
    Moved,
}

/// What a token holder must do after [`Mailbox::release`].
#[derive(Debug, PartialEq, Eq)]
#[must_use]
pub(crate) enum AfterRelease {
    /// The token is given back; nothing is waiting.
    Idle,
    /// Work arrived while releasing and the caller took the token back: schedule again.
    Reschedule,
}

/// What a token holder must do after [`Mailbox::suspend`].
#[derive(Debug, PartialEq, Eq)]
#[must_use]
pub(crate) enum Suspend {
    /// The future holds the token now; its waker (or a kill request) will reschedule it.
    Parked,
    /// Woken or killed meanwhile: the caller still holds the token.
    Resumed,
}

/// A process's inbox and scheduling token.
///
/// `repr(C)`: the scheduling word, which every push reads, comes first, then the inbox with its
/// producers' words first (see [`Mailbox::PRODUCER_WORDS_END`]).
#[repr(C)]
pub(crate) struct Mailbox<T> {
    state: AtomicUsize,
    inbox: Inbox<T>,
}

impl<T> Mailbox<T> {
    /// The offset just past the words a push touches: the scheduling word and the inbox's
    /// producer words. Whatever lies 64 bytes or more past it is on another cache line, wherever
    /// the mailbox is allocated.
    pub(crate) const PRODUCER_WORDS_END: usize =
        std::mem::offset_of!(Mailbox<T>, inbox) + Inbox::<T>::PRODUCER_WORDS_END;

    /// A mailbox whose token is already held by the creator, so the new process can be put on
    /// a run queue straight away to run its start hook.
    pub(crate) fn new_scheduled() -> Self {
        Mailbox {
            state: AtomicUsize::new(SCHEDULED),
            inbox: Inbox::new(),
        }
    }

    /// A mailbox for a process that moved here from another group: the token is held by the
    /// creator (the mover), and the process has started already, so its `started` hook does
    /// not run again.
    pub(crate) fn new_moved() -> Self {
        Mailbox {
            state: AtomicUsize::new(SCHEDULED | STARTED),
            inbox: Inbox::new(),
        }
    }

    /// The producers' position in the inbox (`inbox::messages_before` counts it).
    pub(crate) fn tail_position(&self) -> usize {
        self.inbox.tail_position()
    }

    /// Whether the process has terminated, or moved on from this mailbox.
    #[inline]
    pub(crate) fn is_closed(&self) -> bool {
        self.state.load(Acquire) & CLOSED != 0
    }

    /// Takes the token if it is free; `true` if the caller now holds it. For the forwarding
    /// path of a moved process, whose old mailbox is never scheduled again.
    pub(crate) fn try_take(&self) -> bool {
        self.state.fetch_or(SCHEDULED, AcqRel) & SCHEDULED == 0
    }

    /// Appends `msg`, then tries to take the token. Callers check [`Mailbox::is_closed`]
    /// first to return messages to their senders; a message that races with termination
    /// comes back as [`AfterPush::Drain`] and goes to the dead letters.
    #[inline]
    pub(crate) fn push(&self, msg: T, meta: u32) -> AfterPush {
        self.inbox.push(msg, meta);
        self.take_token_after_push()
    }

    /// [`Mailbox::push`], running `then` between appending the message and trying to take
    /// the token (priority inheritance, `cell.rs`).
    #[inline]
    pub(crate) fn push_then(&self, msg: T, meta: u32, then: impl FnOnce()) -> AfterPush {
        self.inbox.push(msg, meta);
        then();
        self.take_token_after_push()
    }

    /// Whether a message is queued past what the token holder has read.
    ///
    /// # Safety
    /// The caller must hold the token.
    pub(crate) unsafe fn has_pending(&self) -> bool {
        // SAFETY: the caller holds the token. (I9)
        let position = unsafe { self.inbox.read_position() };
        self.inbox.has_messages_past(position)
    }

    /// A producer's half of the protocol, after appending: takes the token if it is free.
    #[inline(always)]
    fn take_token_after_push(&self) -> AfterPush {
        // An idle-looking process: take the token with a read-modify-write, which is correct
        // on its own whatever the (unordered) hint said.
        if self.state.load(Relaxed) & SCHEDULED == 0 {
            return self.acquire_after(0);
        }
        // The token looks held, so its holder will see the message. A plain load instead of a
        // read-modify-write keeps a busy process's state word from being written on every
        // post. This is the store-buffering pattern: we write the tail, then read the state;
        // the holder in `release` writes the state, then reads the tail, and one of us must see
        // the other's write. Neither side needs a fence: all four accesses are `SeqCst` (here
        // the tail's reserving compare-exchange and this load; in `release` the read-modify-write
        // of the state and the load of the tail), and C++20's rules for the single order S
        // ([atomics.order]/4.1, which Rust follows) then forbid both reads being stale: a read
        // that misses a write precedes that write in S, and each side's write precedes its own
        // read in S, so two stale reads would form a cycle. On x86 the compare-exchange is a locked
        // instruction whatever its ordering and a `SeqCst` load a plain load, so a post to a
        // running process executes no fence at all (it was an `mfence` per post). loom models
        // `SeqCst` loads as acquire loads, so under loom this side keeps the fence, which is
        // stronger and which the models check.
        #[cfg(loom)]
        fence(SeqCst);
        let state = self.state.load(SeqCst);
        if state & (SCHEDULED | MOVED) == SCHEDULED {
            return AfterPush::Nothing;
        }
        if state & SCHEDULED != 0 {
            return AfterPush::Moved;
        }
        self.acquire_after(0)
    }

    /// Asks the process to terminate; the token holder will see `KILL` at its next turn. A
    /// process suspended in an async handler is resumed, so that it acts on the kill (dropping
    /// the pending future) instead of waiting for the future to be woken.
    pub(crate) fn request_kill(&self) -> AfterPush {
        match self.acquire_after(KILL) {
            AfterPush::Nothing if self.resume() => AfterPush::Schedule,
            after => after,
        }
    }

    /// Token holder: `true` exactly once, at the process's first turn (or at its termination,
    /// if it never ran). The token's hand-overs order it like the rest of the body.
    #[inline]
    pub(crate) fn first_turn(&self) -> bool {
        if self.state.load(Relaxed) & STARTED != 0 {
            return false;
        }
        self.state.fetch_or(STARTED, Relaxed);
        true
    }

    /// Token holder, before polling a pending future: forgets earlier wake-ups (this poll
    /// covers them).
    #[inline]
    pub(crate) fn begin_poll(&self) {
        self.state.fetch_and(!WOKEN, AcqRel);
    }

    /// Token holder, after its future returned `Pending`: parks the process with the token
    /// held by the future ([`Suspend::Parked`]: the caller must leave the process alone from
    /// now on), unless it was woken or asked to terminate meanwhile ([`Suspend::Resumed`]: the
    /// caller still holds the token and should run the process again).
    pub(crate) fn suspend(&self) -> Suspend {
        let prev = self.state.fetch_or(SUSPENDED, AcqRel);
        if prev & (WOKEN | KILL) != 0 && self.resume() {
            Suspend::Resumed
        } else {
            Suspend::Parked
        }
    }

    /// The waker of a suspended process's future: returns `true` if the caller took over the
    /// token and must put the process on a run queue. A wake-up while the future is being
    /// polled is remembered for the poller ([`Mailbox::suspend`]); a stale one (the future is
    /// done, the process idle or terminated) does nothing.
    pub(crate) fn wake(&self) -> bool {
        let prev = self.state.fetch_or(WOKEN, AcqRel);
        prev & SUSPENDED != 0 && self.resume()
    }

    /// Clears `SUSPENDED`; `true` for the one caller that saw it set, who now holds the token.
    fn resume(&self) -> bool {
        self.state.fetch_and(!SUSPENDED, AcqRel) & SUSPENDED != 0
    }

    fn acquire_after(&self, extra: usize) -> AfterPush {
        let prev = self.state.fetch_or(SCHEDULED | extra, AcqRel);
        if prev & (SCHEDULED | MOVED) == SCHEDULED | MOVED {
            AfterPush::Moved
        } else if prev & SCHEDULED != 0 {
            AfterPush::Nothing
        } else if prev & CLOSED != 0 {
            AfterPush::Drain
        } else {
            AfterPush::Schedule
        }
    }

    /// Forgets a kill request that was a move request (`relocate.rs`). Token holder only, under
    /// the process's control lock, so a real kill arriving meanwhile sets the bit again after.
    pub(crate) fn clear_kill(&self) {
        self.state.fetch_and(!KILL, AcqRel);
    }

    /// Whether a kill was requested. Token holder only.
    #[inline]
    pub(crate) fn kill_requested(&self) -> bool {
        self.state.load(Acquire) & KILL != 0
    }

    /// Takes the next message (tests; the runtime pops through a [`Mailbox::cursor`]).
    ///
    /// # Safety
    /// The caller must hold the token.
    #[cfg(test)]
    pub(crate) unsafe fn pop(&self) -> Option<T> {
        // SAFETY: holding the token makes the caller the inbox's only consumer. (I9)
        unsafe { self.inbox.pop() }.map(|(msg, _)| msg)
    }

    /// A cursor for the turn's run of pops (see [`Inbox::cursor`]); drop it before
    /// [`Mailbox::release`].
    ///
    /// # Safety
    /// The caller must hold the token for the cursor's whole life.
    #[inline]
    pub(crate) unsafe fn cursor(&self) -> Cursor<'_, T> {
        // SAFETY: holding the token makes the caller the inbox's only consumer. (I9)
        unsafe { self.inbox.cursor() }
    }

    /// Gives the token back, or keeps it if a message or a kill request raced in.
    ///
    /// # Safety
    /// The caller must hold the token.
    pub(crate) unsafe fn release(&self) -> AfterRelease {
        // Read our position while we still own the consumer side; once the token is given
        // back, another thread may become the consumer.
        // SAFETY: the caller holds the token. (I9)
        let position = unsafe { self.inbox.read_position() };
        // SAFETY: the caller holds the token, so this thread is the consumer. (I9)
        let quiet = unsafe { self.inbox.quiet_since_last(position) };
        // The holder's half of the store-buffering pattern with a post (see
        // `take_token_after_push`): we write the state, then read the tail; the post writes the
        // tail, then reads the state; one of us must see the other's write. Both of our
        // accesses are `SeqCst` (the read in `has_messages_past`), and so is the post's
        // reserving compare-exchange, while a post that reads the state after a `SeqCst` fence
        // (the loom build's) is covered as well: by C++20's rules for the single order S
        // ([atomics.order]/4.1-4.3), our read missing the post's tail puts it before the post's
        // compare-exchange (or fence) in S, and the post's read missing our write puts that
        // before our read-modify-write, which precedes our read: a cycle. So no fence here; on
        // x86 the read-modify-write is a locked instruction and the `SeqCst` load a plain load,
        // where the fence was a second locked instruction at the end of every turn. loom
        // models `SeqCst` accesses as acquire and release ones, so under loom the fence stays,
        // which is stronger and which the models check.
        self.state.fetch_and(!SCHEDULED, SeqCst);
        #[cfg(loom)]
        fence(SeqCst);
        // A stale position only causes a spurious (harmless) reschedule or a failed re-take.
        let pending = self.inbox.has_messages_past(position) || self.kill_requested();
        if pending && self.state.fetch_or(SCHEDULED, AcqRel) & SCHEDULED == 0 {
            AfterRelease::Reschedule
        } else {
            if quiet {
                // Idle twice with no block read to its end between: a process that gets a
                // message now and then (a connection between requests) gives its spare
                // block back, where one streamed to keeps it.
                self.inbox.free_spare();
            }
            AfterRelease::Idle
        }
    }

    /// Marks the process terminated: every later `push` returns its message.
    ///
    /// # Safety
    /// The caller must hold the token.
    pub(crate) unsafe fn close(&self) {
        self.state.fetch_or(CLOSED, AcqRel);
    }

    /// Marks the process moved: closed here, its messages passed on by whoever drains.
    ///
    /// # Safety
    /// The caller must hold the token.
    pub(crate) unsafe fn close_moved(&self) {
        self.state.fetch_or(CLOSED | MOVED, AcqRel);
        // The store-buffering pattern again, against `push`: we write the state, fence, then
        // pop; a producer writes the tail, then reads the state, both `SeqCst` (with a fence
        // between them only under loom). By [atomics.order]/4.2 and 4.3 one of us sees the
        // other: either our pops find its message, or it sees `MOVED` and waits until its
        // message has been passed on (`AfterPush::Moved`). Either way, once its post returns,
        // the message is on its way to the new cell, not left behind for a later drain.
        fence(SeqCst);
    }

    /// Takes the next message with its metadata word (the mover passing the queue on).
    ///
    /// # Safety
    /// The caller must hold the token.
    pub(crate) unsafe fn pop_with_meta(&self) -> Option<(T, u32)> {
        // SAFETY: holding the token makes the caller the inbox's only consumer. (I9)
        unsafe { self.inbox.pop() }
    }

    /// For a closed process: hands every queued message to `dead`, then gives the token back,
    /// repeating while producers that raced with `close` keep slipping messages in.
    ///
    /// # Safety
    /// The caller must hold the token, and the mailbox must be closed.
    pub(crate) unsafe fn drain_closed(&self, mut dead: impl FnMut(T, u32)) {
        loop {
            // SAFETY: the caller holds the token (and regains it below before looping). (I9)
            while let Some((msg, meta)) = unsafe { self.inbox.pop() } {
                dead(msg, meta);
            }
            // SAFETY: the caller holds the token. (I9)
            let position = unsafe { self.inbox.read_position() };
            self.state
                .fetch_and(!(SCHEDULED | KILL | SUSPENDED | WOKEN), AcqRel);
            fence(SeqCst);
            if !self.inbox.has_messages_past(position)
                || self.state.fetch_or(SCHEDULED, AcqRel) & SCHEDULED != 0
            {
                return;
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn token_lifecycle() {
        let mb = Mailbox::new_scheduled();
        assert_eq!(mb.push(1, 0), AfterPush::Nothing);
        // SAFETY: this test thread holds the token (I9).
        assert_eq!(unsafe { mb.pop() }, Some(1));
        // SAFETY: this test thread holds the token (I9).
        assert_eq!(unsafe { mb.release() }, AfterRelease::Idle);
        assert_eq!(mb.push(2, 0), AfterPush::Schedule);
        assert_eq!(mb.push(3, 0), AfterPush::Nothing);
        // SAFETY: this test thread holds the token (I9).
        assert_eq!(unsafe { mb.pop() }, Some(2));
        // A message is still queued, so releasing takes the token straight back.
        // SAFETY: this test thread holds the token (I9).
        assert_eq!(unsafe { mb.release() }, AfterRelease::Reschedule);
        // SAFETY: this test thread holds the token (I9).
        assert_eq!(unsafe { mb.pop() }, Some(3));
        // SAFETY: this test thread holds the token (I9).
        assert_eq!(unsafe { mb.release() }, AfterRelease::Idle);
    }

    #[test]
    fn closed_mailbox_returns_messages_and_drains_leftovers() {
        let mb = Mailbox::new_scheduled();
        assert_eq!(mb.push(1, 0), AfterPush::Nothing);
        // SAFETY: this test thread holds the token (I9).
        unsafe { mb.close() };
        assert!(mb.is_closed());
        let mut dead = Vec::new();
        // SAFETY: this test thread holds the token (I9).
        unsafe { mb.drain_closed(|m, _| dead.push(m)) };
        assert_eq!(dead, vec![1]);
        // A producer that missed the close takes the token and must drain.
        assert_eq!(mb.push(2, 0), AfterPush::Drain);
        // SAFETY: this test thread holds the token (I9).
        unsafe { mb.drain_closed(|m, _| dead.push(m)) };
        assert_eq!(dead, vec![1, 2]);
    }

    #[test]
    fn kill_request_takes_an_idle_token() {
        let mb: Mailbox<u8> = Mailbox::new_scheduled();
        // SAFETY: this test thread holds the token (I9).
        assert_eq!(unsafe { mb.release() }, AfterRelease::Idle);
        assert_eq!(mb.request_kill(), AfterPush::Schedule);
        assert!(mb.kill_requested());
        assert_eq!(mb.request_kill(), AfterPush::Nothing);
    }
}
