//! A process's inbox: an unbounded, lock-free, multi-producer single-consumer FIFO queue.
//!
//! Messages are stored by value (the process's own message enum, never boxed) in a linked list
//! of blocks. Blocks grow: a process's first block holds [`FIRST_CAP`] messages, each next one
//! about twice as many, up to [`MAX_CAP`], or fewer for large messages ([`max_cap`]: at most
//! [`BLOCK_BYTES`] of slots); the capacity is a function of the lap, see [`lap_cap`]. A
//! process that received a few messages keeps a small block while idle; a stream of messages is stored in large blocks, each allocated (or reused)
//! once per full block. The design follows the segmented queues of crossbeam and
//! tokio, specialised for one consumer:
//!
//! * Indexes run in laps of [`LAP`] positions, one lap per block whatever its capacity:
//!   position `k` of a lap is slot `k` of its block.
//! * Producers reserve a slot by advancing `tail_index` with a CAS. The producer that reserves
//!   the last slot of a block moves the index, in the same CAS, to the lap's [`INSTALLING`]
//!   position, which tells other producers to wait; it links the next block, moves the index to
//!   the next lap, then writes its slot.
//! * The consumer owns `head` outright (it is only touched by whoever holds the process's
//!   scheduling token, see `mailbox.rs`), reads slots in order and waits for a reserved slot's
//!   `written` flag in the rare case it catches a producer between reserve and write.
//! * A block is only touched by a producer after it reserved a slot in it, so once the
//!   consumer has read every slot of a block nobody can reach it any more: the consumer
//!   recycles it as the inbox's one spare block, which keeps steady-state traffic free of
//!   allocator calls.
//! * An inbox that never received a message owns no block at all, which keeps idle processes
//!   small.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};

use crossbeam_utils::Backoff;

use crate::sync::{spin_wait, AtomicBool, AtomicPtr, AtomicUsize, UnsafeCell};

/// Index positions per block: one more than the largest block's slots; the last one marks
/// "next block being installed". Tiny under loom so that short model runs cross block
/// boundaries.
const LAP: usize = if cfg!(loom) { 4 } else { 32 };
/// How many slots ahead of the one it wrote a producer asks for the cache line it will write
/// (see [`prefetch_for_write`]).
const PREFETCH_AHEAD: usize = 4;
/// The position in a lap that says a producer is installing the next block.
const INSTALLING: usize = LAP - 1;
/// Messages in the largest block.
pub(crate) const MAX_CAP: usize = LAP - 1;
/// Messages in a process's first block. Small, because a process keeps its last block while
/// idle (`bench`'s spawn row: bytes per idle process).
pub(crate) const FIRST_CAP: usize = if cfg!(loom) { 1 } else { 2 };

/// Bytes of slots past which a block holds fewer than [`MAX_CAP`] messages: a process keeps
/// its last block while idle, and a connection's processes, whose messages are a few hundred
/// bytes, would otherwise keep several kilobytes each between two requests.
const BLOCK_BYTES: usize = 2048;

/// Messages in a full-size block of `T`: [`MAX_CAP`], or fewer for large messages (at most
/// [`BLOCK_BYTES`] of slots, never fewer than [`FIRST_CAP`]).
const fn max_cap<T>() -> usize {
    let by_size = match BLOCK_BYTES.checked_div(std::mem::size_of::<Slot<T>>()) {
        Some(slots) => slots,
        None => MAX_CAP,
    };
    if by_size < FIRST_CAP {
        FIRST_CAP
    } else if by_size > MAX_CAP {
        MAX_CAP
    } else {
        by_size
    }
}

/// The capacity of the block of the lap that `index` is in: [`FIRST_CAP`] for the first lap,
/// then about twice as many per lap, up to [`max_cap`]. A function of the index (and the
/// message type) alone, so producers and the consumer agree on it without reading the block.
const fn lap_cap<T>(index: usize) -> usize {
    let max = max_cap::<T>();
    let lap = index / LAP;
    if lap >= 8 {
        return max;
    }
    let cap = ((FIRST_CAP + 1) << lap) - 1;
    if cap < max {
        cap
    } else {
        max
    }
}

/// Messages of type `T` stored before position `index` (a tail or a consumer's position):
/// the slots of the laps before its own, plus its offset in its lap (a lap's `INSTALLING`
/// position counts the whole block).
pub(crate) const fn messages_before<T>(index: usize) -> u64 {
    let lap = index / LAP;
    let mut total = 0;
    let mut l = 0;
    while l < lap && l < 8 {
        total += lap_cap::<T>(l * LAP) as u64;
        l += 1;
    }
    if lap > 8 {
        total += (lap - 8) as u64 * max_cap::<T>() as u64;
    }
    let offset = index % LAP;
    let cap = lap_cap::<T>(index);
    total + if offset < cap { offset } else { cap } as u64
}

struct Slot<T> {
    value: UnsafeCell<MaybeUninit<T>>,
    /// A word of metadata per message (see `mailbox::Meta`); it fits in the padding next to
    /// `written` for 8-byte-aligned messages, so it costs no memory there.
    meta: UnsafeCell<u32>,
    written: AtomicBool,
}

/// A block: this header, then `cap` slots, in one allocation sized for its capacity. The
/// queue only handles blocks through raw pointers to the header ([`Block`]); [`Block::slot`]
/// finds a slot by offset, so no reference ever covers memory past the allocation.
struct Block<T> {
    next: AtomicPtr<Block<T>>,
    cap: usize,
    _slots: PhantomData<Slot<T>>,
}

impl<T> Block<T> {
    /// The allocation of a block of `cap` slots, and where its slots start.
    fn layout(cap: usize) -> (Layout, usize) {
        let header = Layout::new::<Block<T>>();
        let (layout, offset) = Layout::array::<Slot<T>>(cap)
            .and_then(|slots| header.extend(slots))
            .expect("a block of at most MAX_CAP slots fits in memory");
        (layout.pad_to_align(), offset)
    }

    /// A new empty block of `cap` slots (`1..=MAX_CAP`), owned by the caller.
    fn alloc(cap: usize) -> *mut Block<T> {
        debug_assert!((1..=MAX_CAP).contains(&cap));
        let (layout, _) = Self::layout(cap);
        // SAFETY: the layout has a non-zero size (the header alone has two words). (I11)
        let block = unsafe { alloc(layout) }.cast::<Block<T>>();
        if block.is_null() {
            handle_alloc_error(layout);
        }
        // SAFETY: `block` is a fresh allocation of `layout`, which holds the header and `cap`
        // slots; each is written once, before anyone else can see the block. (I11)
        unsafe {
            block.write(Block {
                next: AtomicPtr::new(ptr::null_mut()),
                cap,
                _slots: PhantomData,
            });
            for i in 0..cap {
                Self::slot_ptr(block, i).write(Slot {
                    value: UnsafeCell::new(MaybeUninit::uninit()),
                    meta: UnsafeCell::new(0),
                    written: AtomicBool::new(false),
                });
            }
        }
        block
    }

    /// Frees a block allocated by [`Block::alloc`]. Values left in its slots are not dropped.
    ///
    /// # Safety
    /// The caller owns `block`, which nobody can reach any more. (I11)
    unsafe fn free(block: *mut Block<T>) {
        // SAFETY: per the contract, `block` is a live allocation of `layout((*block).cap)`.
        // (I11)
        unsafe {
            let cap = (*block).cap;
            for i in 0..cap {
                ptr::drop_in_place(Self::slot_ptr(block, i));
            }
            let (layout, _) = Self::layout(cap);
            ptr::drop_in_place(block);
            dealloc(block.cast(), layout);
        }
    }

    /// Slot `i` of `block`.
    ///
    /// # Safety
    /// `block` is live and `i < (*block).cap`. (I11)
    unsafe fn slot_ptr(block: *mut Block<T>, i: usize) -> *mut Slot<T> {
        let (_, offset) = Self::layout(0);
        // SAFETY: the slots start `offset` bytes into the allocation and `i` is below the
        // block's capacity, so the result stays inside it. (I11)
        unsafe { block.cast::<u8>().add(offset).cast::<Slot<T>>().add(i) }
    }

    /// Slot `i` of `block`, borrowed.
    ///
    /// # Safety
    /// As [`Block::slot_ptr`], and the block outlives the borrow. (I11)
    unsafe fn slot<'a>(block: *mut Block<T>, i: usize) -> &'a Slot<T> {
        // SAFETY: forwarded contract; the slot was initialised by `alloc`. (I11)
        unsafe { &*Self::slot_ptr(block, i) }
    }

    /// Makes a fully consumed block reusable. Only called by the consumer on a block no
    /// producer can reach any more.
    ///
    /// # Safety
    /// The caller owns `block`. (I11)
    unsafe fn reset(block: *mut Block<T>) {
        // SAFETY: the caller owns the live block; its slots are below its capacity. (I11)
        unsafe {
            (*block).next.store(ptr::null_mut(), Relaxed);
            for i in 0..(*block).cap {
                Self::slot(block, i).written.store(false, Relaxed);
            }
        }
    }
}

/// Asks the CPU for the cache line at `p`, in a state that allows writing, ahead of a write.
/// `p` may dangle by then: nothing is read or written through it.
///
/// Why: the slots a producer writes were last read by the consumer, on another core (a
/// block is recycled once consumed, and a consumer that keeps up reads each slot just after
/// it is written). Each first store to such a line waits for the line to come back, and the
/// producer's next compare-exchange on the tail waits for that store: perf put three
/// quarters of `push` on that compare-exchange. Asking for the line a few slots early
/// overlaps the transfer with the producer's other work: a stream from one thread to one
/// process went from 0.55-0.71 s to 0.39-0.47 s per 10 M messages (`bench-compare --one
/// whirl counting`, alternating runs), level with two OS threads on a crossbeam channel.
#[inline(always)]
fn prefetch_for_write<T>(p: *const T) {
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    // SAFETY: a prefetch is a hint: it never faults and reads or writes nothing, whatever the
    // address. (I11)
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0};
        _mm_prefetch::<_MM_HINT_ET0>(p.cast::<i8>());
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
    let _ = p;
}

struct Head<T> {
    index: usize,
    block: *mut Block<T>,
    /// `index` when the consumer last gave the inbox up (see [`Inbox::quiet_since_last`]).
    released_at: usize,
}

/// The inbox. See the module docs for the protocol.
///
/// `repr(C)` keeps the declaration order: the words every producer writes (`tail_index`,
/// `tail_block`) come first and the consumer's `head` last, which the process cell's layout
/// relies on (see [`Inbox::PRODUCER_WORDS_END`]).
#[repr(C)]
pub(crate) struct Inbox<T> {
    tail_index: AtomicUsize,
    tail_block: AtomicPtr<Block<T>>,
    /// Set once, by the producer that allocates the very first block; tells the consumer
    /// where the list starts.
    first_block: AtomicPtr<Block<T>>,
    /// A consumed full-size block ([`max_cap`] slots) kept for the next producer that needs one.
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
    /// The offset just past the words that producers write on every push. `first_block` and
    /// `spare` change once per block at most.
    pub(crate) const PRODUCER_WORDS_END: usize =
        std::mem::offset_of!(Inbox<T>, tail_block) + std::mem::size_of::<AtomicPtr<Block<T>>>();

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
                released_at: 0,
            }),
        }
    }

    /// A block of `cap` slots for the next lap: the spare if it is a full-size one and `cap`
    /// is full size, a new one otherwise.
    fn take_block(&self, cap: usize) -> *mut Block<T> {
        if cap == max_cap::<T>() {
            // The swap gives this thread sole ownership of the spare, which `recycle` only
            // ever fills with a full-size block.
            let spare = self.spare.swap(ptr::null_mut(), Acquire);
            if !spare.is_null() {
                return spare;
            }
        }
        Block::alloc(cap)
    }

    /// Appends a message with its metadata word. Never blocks on the consumer; may briefly
    /// wait for another producer that is linking a new block.
    pub(crate) fn push(&self, value: T, meta: u32) {
        let backoff = Backoff::new();
        let mut tail = self.tail_index.load(Acquire);
        let mut block = self.tail_block.load(Acquire);
        // A block allocated but not (yet) published, owned by this producer.
        let mut next_block: *mut Block<T> = ptr::null_mut();

        loop {
            let offset = tail % LAP;
            if offset == INSTALLING {
                // Another producer is installing the next block.
                spin_wait(&backoff);
                tail = self.tail_index.load(Acquire);
                block = self.tail_block.load(Acquire);
                continue;
            }
            if block.is_null() {
                let new = self.block_of(&mut next_block, lap_cap::<T>(tail));
                match self
                    .tail_block
                    .compare_exchange(ptr::null_mut(), new, Release, Acquire)
                {
                    Ok(_) => {
                        self.first_block.store(new, Release);
                        block = new;
                    }
                    Err(_) => {
                        // Not published: keep it for this producer's next attempt.
                        next_block = new;
                        // Index first, then block: a block read before the index may belong to
                        // an earlier lap, and the CAS on the index would not catch the mismatch.
                        // (Found by `loom_post_vs_run_never_strands_a_message`.)
                        tail = self.tail_index.load(Acquire);
                        block = self.tail_block.load(Acquire);
                        continue;
                    }
                }
            }

            // Nothing is read from `block` before the CAS succeeds: it may belong to another
            // lap (the CAS then fails) and be freed meanwhile.
            let cap = lap_cap::<T>(tail);
            debug_assert!(
                offset < cap,
                "the index skips from a block's last slot to INSTALLING"
            );
            let last = offset + 1 == cap;
            if last {
                // Kept across retries; the next lap's capacity depends on which lap this is.
                let next_cap = lap_cap::<T>(tail + LAP);
                let next = self.block_of(&mut next_block, next_cap);
                // The slots the prefetch below never reaches, ahead of the first writes there.
                for i in [0, PREFETCH_AHEAD - 1] {
                    if i < next_cap {
                        // SAFETY: `next` is this producer's own unpublished block of `next_cap`
                        // slots. (I11)
                        prefetch_for_write(unsafe { Block::slot_ptr(next, i) });
                    }
                }
                next_block = next;
            }
            // Reserving the last slot also moves the index to the lap's INSTALLING position.
            let reserved = if last {
                tail - offset + INSTALLING
            } else {
                tail + 1
            };
            // `SeqCst`: the post's half of the store-buffering pattern with the token holder
            // (`Mailbox::take_token_after_push` says why it needs no fence).
            match self
                .tail_index
                .compare_exchange_weak(tail, reserved, SeqCst, Acquire)
            {
                Ok(_) => {
                    if last {
                        let next = std::mem::replace(&mut next_block, ptr::null_mut());
                        self.tail_block.store(next, Release);
                        // From INSTALLING to the first position of the next lap.
                        self.tail_index.fetch_add(1, Release);
                        // SAFETY: the successful CAS reserved a slot in `block`, so the consumer
                        // cannot recycle it before that slot is written below. (I11)
                        unsafe { (*block).next.store(next, Release) };
                    }
                    // SAFETY: as above, `block` is live and the slot at `offset` (below its
                    // capacity) is reserved for this producer alone until `written` is set.
                    // (I11)
                    let ahead = unsafe {
                        let slot = Block::slot(block, offset);
                        slot.value.with_mut(|p| p.write(MaybeUninit::new(value)));
                        slot.meta.with_mut(|p| p.write(meta));
                        // Found before `written` is set (until then the block cannot be
                        // recycled, so the slot further on is inside a live allocation), asked
                        // for after (the hint then never delays the message).
                        let ahead = (offset + PREFETCH_AHEAD < cap)
                            .then(|| Block::slot_ptr(block, offset + PREFETCH_AHEAD));
                        slot.written.store(true, Release);
                        ahead
                    };
                    if let Some(ahead) = ahead {
                        prefetch_for_write(ahead);
                    }
                    if !next_block.is_null() {
                        self.recycle(next_block);
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

    /// The producers' position: every message pushed so far is before it (see
    /// [`messages_before`]). Safe to call from any thread.
    pub(crate) fn tail_position(&self) -> usize {
        self.tail_index.load(Relaxed)
    }

    /// Whether any message was pushed beyond `position`. Safe to call from any thread.
    ///
    /// `SeqCst`: the token holder's read in the store-buffering pattern of
    /// `Mailbox::release` (on x86 and AArch64 the same instruction as an acquire load).
    pub(crate) fn has_messages_past(&self, position: usize) -> bool {
        position != self.tail_index.load(SeqCst)
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

    /// Keeps a block the caller owns (fully consumed, or never published) as the spare if it
    /// is full size, freeing the previous spare; frees it otherwise. (I11)
    fn recycle(&self, block: *mut Block<T>) {
        // SAFETY: the caller owns `block` exclusively. (I11)
        if unsafe { (*block).cap } != max_cap::<T>() {
            // SAFETY: as above. (I11)
            unsafe { Block::free(block) };
            return;
        }
        // SAFETY: as above. (I11)
        unsafe { Block::reset(block) };
        let previous = self.spare.swap(block, AcqRel);
        if !previous.is_null() {
            // SAFETY: the swap transferred ownership of the previous spare to us. (I11)
            unsafe { Block::free(previous) };
        }
    }

    /// Whether the consumer, about to give the inbox up at `position` (its
    /// [`read_position`](Inbox::read_position)), read no block to its end since it last gave
    /// it up: nothing is streamed to it, and its spare block only holds memory. Notes
    /// `position` for the next call.
    ///
    /// # Safety
    /// The caller must be the inbox's single consumer. (I11)
    pub(crate) unsafe fn quiet_since_last(&self, position: usize) -> bool {
        // SAFETY: the caller is the only consumer, so nobody touches `head` concurrently. (I11)
        let last = self
            .head
            .with_mut(|h| unsafe { std::mem::replace(&mut (*h).released_at, position) });
        last / LAP == position / LAP
    }

    /// Frees the spare block, if there is one: an idle process keeps only the block its next
    /// message goes in. Safe to call from any thread.
    pub(crate) fn free_spare(&self) {
        if self.spare.load(Relaxed).is_null() {
            return;
        }
        let spare = self.spare.swap(ptr::null_mut(), Acquire);
        if !spare.is_null() {
            // SAFETY: the swap transferred ownership of the spare to us. (I11)
            unsafe { Block::free(spare) };
        }
    }

    /// A block of exactly `cap` slots, owned by the caller: `held` if it has that capacity
    /// (and `held` is emptied), a new or spare one otherwise (and a mismatched `held` is
    /// discarded).
    fn block_of(&self, held: &mut *mut Block<T>, cap: usize) -> *mut Block<T> {
        let block = std::mem::replace(held, ptr::null_mut());
        if !block.is_null() {
            // SAFETY: `held` blocks are owned by this producer and unpublished. (I11)
            if unsafe { (*block).cap } == cap {
                return block;
            }
            self.recycle(block);
        }
        self.take_block(cap)
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

    /// The consumer's position (see [`messages_before`]).
    pub(crate) fn position(&self) -> usize {
        self.index
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
            let slot = Block::slot(block, offset);
            let backoff = Backoff::new();
            while !slot.written.load(Acquire) {
                spin_wait(&backoff);
            }
            let value = slot.value.with_mut(|p| p.read().assume_init());
            let meta = slot.meta.with_mut(|p| p.read());
            if offset + 1 == lap_cap::<T>(self.index) {
                // The producer of the last slot linked the next block before writing it. (I11)
                self.block = (*block).next.load(Acquire);
                // The first position of the next lap.
                self.index += LAP - offset;
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
                unsafe { Block::free(block) };
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
        for i in 0..(MAX_CAP * 5 + 3) {
            q.push(i, i as u32 * 3);
        }
        for i in 0..(MAX_CAP * 5 + 3) {
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

    /// The positions count messages exactly, across laps of every capacity.
    #[test]
    fn positions_count_messages() {
        let q = Inbox::new();
        let n = MAX_CAP * 12 + 5;
        for i in 0..n {
            assert_eq!(messages_before::<usize>(q.tail_position()), i as u64);
            q.push(i, 0);
        }
        assert_eq!(messages_before::<usize>(q.tail_position()), n as u64);
        // SAFETY: this test thread is the only consumer (I11).
        let mut cursor = unsafe { q.cursor() };
        for taken in 0..n {
            assert_eq!(messages_before::<usize>(cursor.position()), taken as u64);
            assert_eq!(cursor.pop().map(|(v, _)| v), Some(taken));
        }
        assert_eq!(messages_before::<usize>(cursor.position()), n as u64);
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
        for _ in 0..(MAX_CAP * 2 + 1) {
            q.push(Arc::clone(&token), 0);
        }
        // SAFETY: this test thread is the only consumer (I11).
        let _ = unsafe { q.pop() };
        drop(q);
        assert_eq!(Arc::strong_count(&token), 1);
    }

    #[test]
    fn blocks_grow_from_small_to_full_size() {
        let caps: Vec<usize> = (0..6).map(|lap| lap_cap::<usize>(lap * LAP)).collect();
        assert_eq!(caps, vec![2, 5, 11, 23, 31, 31]);
        // Every position of a lap below its capacity has the lap's capacity.
        assert_eq!(lap_cap::<usize>(LAP + 4), 5);
        let q = Inbox::new();
        q.push(0u64, 0);
        let first = q.tail_block.load(Relaxed);
        // SAFETY: the block is live (the queue owns it) and only read here. (I11)
        assert_eq!(unsafe { (*first).cap }, FIRST_CAP);
        // Fill laps 0..=4 and part of 5, reading everything back in order.
        let total = 2 + 5 + 11 + 23 + 31 + 10;
        for i in 1..total {
            q.push(i as u64, 0);
        }
        for i in 0..total {
            // SAFETY: this test thread is the only consumer (I11).
            assert_eq!(unsafe { q.pop() }, Some((i as u64, 0)));
        }
        let last = q.tail_block.load(Relaxed);
        // SAFETY: as above. (I11)
        assert_eq!(unsafe { (*last).cap }, MAX_CAP);
        // The consumed full-size block of lap 4 is the spare; the smaller ones were freed.
        let spare = q.spare.load(Relaxed);
        assert!(!spare.is_null());
        // SAFETY: as above. (I11)
        assert_eq!(unsafe { (*spare).cap }, MAX_CAP);
    }

    #[test]
    fn large_messages_get_blocks_of_bounded_bytes() {
        type Big = [u64; 40];
        let max = max_cap::<Big>();
        assert!(max < MAX_CAP && max * std::mem::size_of::<Slot<Big>>() <= BLOCK_BYTES);
        let caps: Vec<usize> = (0..5).map(|lap| lap_cap::<Big>(lap * LAP)).collect();
        assert_eq!(caps, vec![2, 5, max, max, max]);
        let q = Inbox::new();
        let n = 2 + 5 + max * 6 + 1;
        for i in 0..n {
            q.push([i as u64; 40], i as u32);
        }
        // Every message is counted once, whatever the block sizes.
        assert_eq!(messages_before::<Big>(q.tail_position()), n as u64);
        for i in 0..n {
            // SAFETY: this test thread is the only consumer (I11).
            assert_eq!(unsafe { q.pop() }, Some(([i as u64; 40], i as u32)));
        }
        // SAFETY: as above. (I11)
        assert_eq!(
            messages_before::<Big>(unsafe { q.read_position() }),
            n as u64
        );
        let spare = q.spare.load(Relaxed);
        assert!(!spare.is_null());
        // SAFETY: the spare is owned by the queue and only read here. (I11)
        assert_eq!(unsafe { (*spare).cap }, max);
    }

    #[test]
    fn a_consumer_idle_twice_in_one_block_gives_its_spare_back() {
        let q = Inbox::new();
        let mut next = 0u64;
        let mut exchange = |q: &Inbox<u64>, count: usize| {
            for _ in 0..count {
                q.push(next, 0);
                // SAFETY: this test thread is the only consumer (I11).
                assert_eq!(unsafe { q.pop() }, Some((next, 0)));
                next += 1;
            }
        };
        // Through laps 0..=4: the consumed full block of lap 4 is the spare.
        exchange(&q, 2 + 5 + 11 + 23 + 31 + 1);
        assert!(!q.spare.load(Relaxed).is_null());
        // SAFETY: as above. (I11)
        let position = unsafe { q.read_position() };
        // SAFETY: as above. (I11)
        assert!(
            !unsafe { q.quiet_since_last(position) },
            "a block was read since"
        );
        exchange(&q, 3);
        // SAFETY: as above. (I11)
        let position = unsafe { q.read_position() };
        // SAFETY: as above. (I11)
        assert!(
            unsafe { q.quiet_since_last(position) },
            "same block as last time"
        );
        q.free_spare();
        assert!(q.spare.load(Relaxed).is_null());
        // A stream after that allocates again, and reads back in order.
        exchange(&q, 3 * MAX_CAP);
        assert!(!q.spare.load(Relaxed).is_null());
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
