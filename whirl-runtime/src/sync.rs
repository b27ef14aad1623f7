//! The synchronisation primitives the lock-free parts of the runtime are written against.
//!
//! Under `--cfg loom` they are loom's model-checked versions, so the inbox, the scheduling
//! state machine and the park/unpark protocol are explored exhaustively by the tests in
//! `tests/loom_*.rs`; otherwise they are the std ones at zero cost.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicUsize};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicUsize};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex};

/// Waits a little while another thread finishes a step it has already started.
#[inline]
pub(crate) fn spin_wait(backoff: &crossbeam_utils::Backoff) {
    #[cfg(loom)]
    {
        let _ = backoff;
        loom::thread::yield_now();
    }
    #[cfg(not(loom))]
    backoff.snooze();
}

/// `UnsafeCell` with loom's closure-based API, so loom can see every access.
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(
    #[cfg(loom)] loom::cell::UnsafeCell<T>,
    #[cfg(not(loom))] std::cell::UnsafeCell<T>,
);

impl<T> UnsafeCell<T> {
    pub(crate) fn new(value: T) -> Self {
        #[cfg(loom)]
        return Self(loom::cell::UnsafeCell::new(value));
        #[cfg(not(loom))]
        return Self(std::cell::UnsafeCell::new(value));
    }

    /// Runs `f` with a mutable pointer to the contents; the caller upholds exclusivity.
    #[inline]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        #[cfg(loom)]
        return self.0.with_mut(f);
        #[cfg(not(loom))]
        return f(self.0.get());
    }
}

/// Locks a mutex, ignoring poisoning: the runtime's own critical sections never panic.
pub(crate) fn lock<T>(m: &Mutex<T>) -> crate::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

#[cfg(loom)]
pub(crate) use loom::sync::MutexGuard;
#[cfg(not(loom))]
pub(crate) use std::sync::MutexGuard;
