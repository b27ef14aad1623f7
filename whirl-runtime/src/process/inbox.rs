//! A process's inbox: an unbounded, lock-free, multi-producer single-consumer FIFO queue.
//!
//! Messages are stored by value (the process's own message enum, never boxed) in a linked list
//! of fixed-size blocks, so storage is amortised over [`BLOCK_CAP`] messages. The design
//! follows the segmented queues of crossbeam and tokio, specialised for one consumer:
//!
//! * Producers reserve a slot by advancing `tail_index` with a CAS. The producer that reserves
//!   the last slot of a block first links the next block (the index then briefly sits on the
//!   `BLOCK_CAP` offset, which tells other producers to wait), then writes its slot.
//! * The consumer owns `head` outright (it is only touched by whoever holds the process's
//!   scheduling token, see `mailbox.rs`), reads slots in order and waits for a reserved slot's
//!   `written` flag in the rare case it catches a producer between reserve and write.
//! * A block is only touched by a producer after it reserved a slot in it, so once the
//!   consumer has read every slot of a block nobody can reach it any more: the consumer
//!   recycles it as the inbox's one spare block, which keeps steady-state traffic free of
//!   allocator calls.
//! * An inbox that never received a message owns no block at all, which keeps idle processes
//!   small.

use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};

use crossbeam_utils::Backoff;

use crate::sync::{spin_wait, AtomicBool, AtomicPtr, AtomicUsize, UnsafeCell};

/// Index positions per block: one more than the slots, the extra one marks "next block being
/// installed". Tiny under loom so that short model runs cross block boundaries.
const LAP: usize = if cfg!(loom) { 3 } else { 8 };
/// Messages per block. Small, because a process keeps its last block while idle.
pub(crate) const BLOCK_CAP: usize = LAP - 1;

struct Slot<T> {
    value: UnsafeCell<MaybeUninit<T>>,
    /// A word of metadata per message (see `mailbox::Meta`); it fits in the padding next to
    /// `written` for 8-byte-aligned messages, so it costs no memory there.
    meta: UnsafeCell<u32>,
    written: AtomicBool,
}

struct Block<T> {
    next: AtomicPtr<Block<T>>,
    slots: [Slot<T>; BLOCK_CAP],
}

impl<T> Block<T> {
    fn new() -> Box<Self> {
        Box::new(Block {
            next: AtomicPtr::new(ptr::null_mut()),
            slots: std::array::from_fn(|_| Slot {
                value: UnsafeCell::new(MaybeUninit::uninit()),
                meta: UnsafeCell::new(0),
                written: AtomicBool::new(false),
            }),
        })
    }

    /// Makes a fully consumed block reusable. Only called by the consumer on a block no
    /// producer can reach any more.
    fn reset(&self) {
        self.next.store(ptr::null_mut(), Relaxed);
        for slot in &self.slots {
            slot.written.store(false, Relaxed);
        }
    }
}

struct Head<T> {
    index: usize,
    block: *mut Block<T>,
}

/// The inbox. See the module docs for the protocol.
pub(crate) struct Inbox<T> {
    tail_index: AtomicUsize,
    tail_block: AtomicPtr<Block<T>>,
    /// Set once, by the producer that allocates the very first block; tells the consumer
    /// where the list starts.
    first_block: AtomicPtr<Block<T>>,
    /// A consumed block kept for the next producer that needs one.
    spare: AtomicPtr<Block<T>>,
    head: UnsafeCell<Head<T>>,
}

// SAFETY: values of `T` are moved in by producers and out by the single consumer, so the
// queue is `Send`/`Sync` exactly when `T: Send`. The raw pointers are owned by the queue. (I11)
unsafe impl<T: Send> Send for Inbox<T> {}
// SAFETY: see above; shared access is mediated by the atomics and the single-consumer
// contract of `pop`. (I11)
unsafe impl<T: Send> Sync for Inbox<T> {}

impl<T> Inbox<T> {
    /// An empty inbox. Allocates nothing.
    pub(crate) fn new() -> Self {
        Inbox {
            tail_index: AtomicUsize::new(0),
            tail_block: AtomicPtr::new(ptr::null_mut()),
            first_block: AtomicPtr::new(ptr::null_mut()),
            spare: AtomicPtr::new(ptr::null_mut()),
            head: UnsafeCell::new(Head {
                index: 0,
                block: ptr::null_mut(),
            }),
        }
    }

    fn take_block(&self) -> Box<Block<T>> {
        let spare = self.spare.swap(ptr::null_mut(), Acquire);
        if spare.is_null() {
            Block::new()
        } else {
            // SAFETY: a non-null `spare` was put there by `Box::into_raw` in `recycle`, and the
            // swap gave this thread sole ownership of it. (I11)
            unsafe { Box::from_raw(spare) }
        }
    }

    /// Appends a message with its metadata word. Never blocks on the consumer; may briefly
    /// wait for another producer that is linking a new block.
    pub(crate) fn push(&self, value: T, meta: u32) {
        let backoff = Backoff::new();
        let mut tail = self.tail_index.load(Acquire);
        let mut block = self.tail_block.load(Acquire);
        let mut next_block: Option<Box<Block<T>>> = None;

        loop {
            let offset = tail % LAP;
            if offset == BLOCK_CAP {
                // Another producer is installing the next block.
                spin_wait(&backoff);
                tail = self.tail_index.load(Acquire);
                block = self.tail_block.load(Acquire);
                continue;
            }
            if offset + 1 == BLOCK_CAP && next_block.is_none() {
                next_block = Some(self.take_block());
            }
            if block.is_null() {
                let new = Box::into_raw(next_block.take().unwrap_or_else(|| self.take_block()));
                match self
                    .tail_block
                    .compare_exchange(ptr::null_mut(), new, Release, Acquire)
                {
                    Ok(_) => {
                        self.first_block.store(new, Release);
                        block = new;
                    }
                    Err(_) => {
                        // SAFETY: `new` came from `Box::into_raw` just above and was not published.
                        // (I11)
                        next_block = Some(unsafe { Box::from_raw(new) });
                        // Index first, then block: a block read before the index may belong to
                        // an earlier lap, and the CAS on the index would not catch the mismatch.
                        // (Found by `loom_post_vs_run_never_strands_a_message`.)
                        tail = self.tail_index.load(Acquire);
                        block = self.tail_block.load(Acquire);
                        continue;
                    }
                }
            }

            match self
                .tail_index
                .compare_exchange_weak(tail, tail + 1, AcqRel, Acquire)
            {
                Ok(_) => {
                    if offset + 1 == BLOCK_CAP {
                        let next = match next_block.take() {
                            Some(b) => Box::into_raw(b),
                            None => Box::into_raw(self.take_block()),
                        };
                        self.tail_block.store(next, Release);
                        self.tail_index.fetch_add(1, Release);
                        // SAFETY: the successful CAS reserved a slot in `block`, so the consumer
                        // (I11)
                        // cannot recycle it before that slot is written below. (I11)
                        unsafe { (*block).next.store(next, Release) };
                    }
                    // SAFETY: as above, `block` is live and the slot at `offset` is reserved
                    // for this producer alone until `written` is set. (I11)
                    unsafe {
                        let slot = (*block).slots.get_unchecked(offset);
                        slot.value.with_mut(|p| p.write(MaybeUninit::new(value)));
                        slot.meta.with_mut(|p| p.write(meta));
                        slot.written.store(true, Release);
                    }
                    if let Some(unused) = next_block {
                        self.recycle(Box::into_raw(unused));
                    }
                    return;
                }
                Err(current) => {
                    tail = current;
                    block = self.tail_block.load(Acquire);
                    backoff.spin();
                }
            }
        }
    }

    /// Whether the consumer would find nothing. Only meaningful to the consumer.
    ///
    /// # Safety
    /// The caller must be the inbox's single consumer (hold the process's scheduling token). (I11)
    #[cfg(test)]
    pub(crate) unsafe fn is_empty(&self) -> bool {
        // SAFETY: forwarded contract. (I11)
        let position = unsafe { self.read_position() };
        !self.has_messages_past(position)
    }

    /// The consumer's position, to be compared later with [`Inbox::has_messages_past`] from a
    /// thread that may no longer be the consumer.
    ///
    /// # Safety
    /// The caller must be the inbox's single consumer. (I11)
    pub(crate) unsafe fn read_position(&self) -> usize {
        // SAFETY: the caller is the only consumer, so nobody writes `head` concurrently. (I11)
        self.head.with_mut(|h| unsafe { (*h).index })
    }

    /// Whether any message was pushed beyond `position`. Safe to call from any thread.
    pub(crate) fn has_messages_past(&self, position: usize) -> bool {
        position != self.tail_index.load(Acquire)
    }

    /// Removes the oldest message.
    ///
    /// # Safety
    /// The caller must be the inbox's single consumer: no two calls of `pop`, `cursor` or
    /// `is_empty` may overlap. The runtime guarantees it through the process's scheduling
    /// token (`mailbox.rs`). (I11)
    pub(crate) unsafe fn pop(&self) -> Option<(T, u32)> {
        // SAFETY: forwarded contract. (I11)
        unsafe { self.cursor() }.pop()
    }

    /// A consuming cursor for a run of pops, which writes the consumer's position back only
    /// when dropped.
    ///
    /// Why: the consumer's position lives on the same cache line as the tail that producers
    /// update and the scheduling state they read. Writing it on every pop (and re-reading the
    /// tail) bounced that line between the consumer's core and the producers' on every
    /// message. A cursor writes it once per turn and re-reads the tail only when it has
    /// caught up with the last tail it saw.
    ///
    /// # Safety
    /// The caller must be the inbox's single consumer for the cursor's whole life. (I11)
    pub(crate) unsafe fn cursor(&self) -> Cursor<'_, T> {
        // SAFETY: single consumer, per this function's contract. (I11)
        let (index, block) = self.head.with_mut(|h| unsafe { ((*h).index, (*h).block) });
        Cursor {
            inbox: self,
            index,
            block,
            known_tail: index,
            refreshes: 0,
        }
    }

    /// Keeps `block` as the spare, freeing the previous spare if there was one. (I11)
    fn recycle(&self, block: *mut Block<T>) {
        // SAFETY: the caller owns `block` exclusively (fully consumed, or never published). (I11)
        unsafe { (*block).reset() };
        let previous = self.spare.swap(block, AcqRel);
        if !previous.is_null() {
            // SAFETY: the swap transferred ownership of the previous spare to us. (I11)
            drop(unsafe { Box::from_raw(previous) });
        }
    }
}

/// The consumer's side of an inbox for a run of pops; see [`Inbox::cursor`].
pub(crate) struct Cursor<'a, T> {
    inbox: &'a Inbox<T>,
    index: usize,
    block: *mut Block<T>,
    /// The tail as last read: every slot below it is reserved (maybe not yet written).
    known_tail: usize,
    /// How many times the tail was re-read.
    refreshes: u32,
}

impl<T> Cursor<'_, T> {
    /// Whether a message is waiting (re-reads the tail if the cursor has caught up).
    pub(crate) fn has_messages(&mut self) -> bool {
        // `>=`: a tail read while a block was being linked can sit one below the first index
        // of the next lap, which the cursor reaches after the last slot of the block.
        if self.index >= self.known_tail {
            self.known_tail = self.inbox.tail_index.load(Acquire);
            self.refreshes = self.refreshes.wrapping_add(1);
        }
        self.index < self.known_tail
    }

    /// A counter that changes each time the cursor re-reads the tail, i.e. each time it
    /// touches the cache line that senders write. Cheap checks of other state on that line
    /// can ride along.
    pub(crate) fn refreshes(&self) -> u32 {
        self.refreshes
    }

    /// Removes the oldest message, with its metadata word.
    pub(crate) fn pop(&mut self) -> Option<(T, u32)> {
        if !self.has_messages() {
            return None;
        }
        if self.block.is_null() {
            // The first block is linked into `tail_block` before `first_block` is set, and a
            // second producer may fill a slot in between: wait for the allocating producer to
            // finish publishing. (Found by `loom_post_vs_run_never_strands_a_message`.)
            let backoff = Backoff::new();
            loop {
                self.block = self.inbox.first_block.load(Acquire);
                if !self.block.is_null() {
                    break;
                }
                spin_wait(&backoff);
            }
        }
        let offset = self.index % LAP;
        let block = self.block;
        // SAFETY: `block` is the live head block: it is only recycled below, by this consumer,
        // (I11)
        // after its last slot has been read. The slot at `offset` was reserved by a producer
        // (the tail moved past it); we wait for its write to complete before reading.
        unsafe {
            let slot = (*block).slots.get_unchecked(offset);
            let backoff = Backoff::new();
            while !slot.written.load(Acquire) {
                spin_wait(&backoff);
            }
            let value = slot.value.with_mut(|p| p.read().assume_init());
            let meta = slot.meta.with_mut(|p| p.read());
            if offset + 1 == BLOCK_CAP {
                // The producer of the last slot linked the next block before writing it. (I11)
                self.block = (*block).next.load(Acquire);
                self.index += 2;
                self.inbox.recycle(block);
            } else {
                self.index += 1;
            }
            Some((value, meta))
        }
    }
}

impl<T> Drop for Cursor<'_, T> {
    fn drop(&mut self) {
        let (index, block) = (self.index, self.block);
        self.inbox.head.with_mut(|h| {
            // SAFETY: the cursor's creator is the single consumer for the cursor's life. (I11)
            unsafe {
                (*h).index = index;
                (*h).block = block;
            }
        });
    }
}

impl<T> Drop for Inbox<T> {
    fn drop(&mut self) {
        // SAFETY: `&mut self` makes this the only consumer. (I11)
        while unsafe { self.pop() }.is_some() {}
        let head = self.head.with_mut(|h| {
            // SAFETY: exclusive access through `&mut self`. (I11)
            unsafe { (*h).block }
        });
        for block in [head, self.spare.swap(ptr::null_mut(), Acquire)] {
            if !block.is_null() {
                // SAFETY: after draining, the head block and the spare are the only blocks
                // left, both owned by the queue and distinct. (I11)
                drop(unsafe { Box::from_raw(block) });
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn fifo_across_blocks() {
        let q = Inbox::new();
        for i in 0..(BLOCK_CAP * 5 + 3) {
            q.push(i, i as u32 * 3);
        }
        for i in 0..(BLOCK_CAP * 5 + 3) {
            // SAFETY: this test thread is the only consumer (I11).
            assert_eq!(
                unsafe { q.pop() },
                Some((i, i as u32 * 3)),
                "value and metadata"
            );
        }
        // SAFETY: this test thread is the only consumer (I11).
        assert_eq!(unsafe { q.pop() }, None);
        // SAFETY: this test thread is the only consumer (I11).
        assert!(unsafe { q.is_empty() });
    }

    #[test]
    fn interleaved_push_pop_reuses_blocks() {
        let q = Inbox::new();
        for round in 0..50 {
            q.push(round, 0);
            // SAFETY: this test thread is the only consumer (I11).
            assert_eq!(unsafe { q.pop() }, Some((round, 0)));
        }
        // SAFETY: this test thread is the only consumer (I11).
        assert_eq!(unsafe { q.pop() }, None);
    }

    #[test]
    fn drop_releases_unread_messages() {
        let token = Arc::new(());
        let q = Inbox::new();
        for _ in 0..(BLOCK_CAP * 2 + 1) {
            q.push(Arc::clone(&token), 0);
        }
        // SAFETY: this test thread is the only consumer (I11).
        let _ = unsafe { q.pop() };
        drop(q);
        assert_eq!(Arc::strong_count(&token), 1);
    }

    #[test]
    fn empty_inbox_allocates_nothing() {
        let q: Inbox<u64> = Inbox::new();
        assert!(q.tail_block.load(Relaxed).is_null());
        // SAFETY: this test thread is the only consumer (I11).
        assert!(unsafe { q.is_empty() });
    }

    #[test]
    fn concurrent_producers_keep_per_sender_order() {
        let q = Arc::new(Inbox::new());
        let per_sender = if cfg!(miri) { 40 } else { 20_000 };
        let senders: Vec<_> = (0..3usize)
            .map(|s| {
                let q = Arc::clone(&q);
                std::thread::spawn(move || {
                    for i in 0..per_sender {
                        q.push((s, i), 0);
                    }
                })
            })
            .collect();
        let mut next = [0usize; 3];
        let mut received = 0;
        while received < 3 * per_sender {
            // SAFETY: this test thread is the only consumer (I11).
            if let Some(((s, i), _)) = unsafe { q.pop() } {
                assert_eq!(i, next[s], "sender {s} out of order");
                next[s] += 1;
                received += 1;
            } else {
                std::thread::yield_now();
            }
        }
        for s in senders {
            s.join().unwrap();
        }
        // SAFETY: this test thread is the only consumer (I11).
        assert_eq!(unsafe { q.pop() }, None);
    }
}
