//! The tokio runtime a whirl runtime owns (feature `tokio`), so that `async` handlers can await
//! futures of tokio-based libraries (HTTP clients, database drivers, gRPC).
//!
//! Such futures register their sockets and timers with "the current tokio runtime", a
//! thread-local context. Whirl's workers are not tokio workers and never become ones: while a
//! worker polls an async handler, it *enters* this runtime's context (a thread-local set and
//! reset around the poll), so the futures find a reactor and a timer wheel; the reactor and the
//! timers are driven by this runtime's own threads, which run no whirl code. When a socket is
//! ready, the tokio thread wakes the handler's waker, which puts the process back on its
//! group's run queue.
//!
//! The runtime is built on the first poll of an async handler (a program without async
//! handlers starts no thread) and shut down in the background when the whirl runtime shuts
//! down.

use std::sync::OnceLock;

use parking_lot::Mutex;

/// The threads the owned runtime gets: enough to drive I/O and timers, which is all it does.
const TOKIO_THREADS: usize = 1;

/// A whirl runtime's tokio runtime, started on first use.
#[derive(Default)]
pub(crate) struct TokioBridge {
    /// Set once, when the runtime is built (or fails to be): the fast path of every poll.
    handle: OnceLock<Option<tokio::runtime::Handle>>,
    /// The runtime itself, owned until shutdown.
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
}

impl TokioBridge {
    /// The runtime's handle, building the runtime if needed; `None` if it cannot be built (the
    /// error is logged once; futures that need tokio then fail when polled, saying so).
    pub(crate) fn handle(&self) -> Option<&tokio::runtime::Handle> {
        self.handle
            .get_or_init(|| {
                let built = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(TOKIO_THREADS)
                    .thread_name("whirl-tokio")
                    .enable_all()
                    .build();
                match built {
                    Ok(runtime) => {
                        let handle = runtime.handle().clone();
                        *self.runtime.lock() = Some(runtime);
                        Some(handle)
                    }
                    Err(e) => {
                        tracing::error!("cannot start the tokio runtime for async handlers: {e}");
                        None
                    }
                }
            })
            .as_ref()
    }

    /// Enters the runtime's context for as long as the guard lives (around one poll).
    #[inline]
    pub(crate) fn enter(&self) -> Option<tokio::runtime::EnterGuard<'_>> {
        self.handle().map(tokio::runtime::Handle::enter)
    }

    /// Stops the runtime without waiting for its threads (safe to call from anywhere,
    /// including inside another tokio runtime). Futures polled later find it shut down.
    pub(crate) fn shut_down(&self) {
        if let Some(runtime) = self.runtime.lock().take() {
            runtime.shutdown_background();
        }
    }
}
