//! Why a request got no answer: [`Unanswered`], and the context in which the runtime drops
//! requests for a known reason.
//!
//! A reply handle dropped unanswered tells its caller why. The handle cannot see why it is
//! dropped, so the runtime says it around the places where it drops requests for a reason
//! ([`unanswered_because`]: dead letters of a terminated process, a shutdown), and a handle
//! dropped while its thread unwinds from a handler's panic knows the handler failed.

use std::cell::Cell;

/// Why a delivered request got no answer (`CallError::NoReply`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum Unanswered {
    /// The handler failed while handling the request: it returned an error or panicked. The
    /// process's supervisor, monitors and the failure hook see the failure.
    #[error("the handler failed")]
    HandlerFailed,
    /// The process terminated (it stopped, was killed, or failed on an earlier message)
    /// before it handled the request, which went to the dead-letter sink.
    #[error("the process terminated before handling the request")]
    Terminated,
    /// The runtime shut down before the process handled the request, which went to the
    /// dead-letter sink.
    #[error("the runtime shut down before the request was handled")]
    ShutDown,
    /// The reply handle was dropped unanswered: by the handler (it did not answer, or handed
    /// the handle on to someone who dropped it), or by whoever kept the dead letter.
    #[error("the reply handle was dropped without an answer")]
    Dropped,
}

thread_local! {
    /// Why requests dropped on this thread now go unanswered, while the runtime drops them
    /// for a known reason.
    static UNANSWERED: Cell<Option<Unanswered>> = const { Cell::new(None) };
}

/// Runs `f`, in which reply handles dropped unanswered tell their callers `why`.
pub(crate) fn unanswered_because<T>(why: Unanswered, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Unanswered>);
    impl Drop for Restore {
        fn drop(&mut self) {
            UNANSWERED.with(|u| u.set(self.0));
        }
    }
    let _restore = Restore(UNANSWERED.with(|u| u.replace(Some(why))));
    f()
}

/// Why a reply handle dropped here and now goes unanswered: what the runtime said, else a
/// handler failure if the thread is unwinding, else a plain drop.
pub(crate) fn unanswered_now() -> Unanswered {
    UNANSWERED
        .with(Cell::get)
        .unwrap_or(if std::thread::panicking() {
            Unanswered::HandlerFailed
        } else {
            Unanswered::Dropped
        })
}
