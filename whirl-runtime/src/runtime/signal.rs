//! Shutting down on SIGINT or SIGTERM: the one call a long-running service needs.
//!
//! [`wait_for_signal`] blocks the calling thread (usually `main`) until the process receives
//! SIGINT (Ctrl-C) or SIGTERM (what `kill`, systemd and container runtimes send), and says
//! which. [`Runtime::shutdown_on_signal`](crate::Runtime::shutdown_on_signal) waits and then
//! shuts the runtime down gracefully within a deadline. Handlers are installed with
//! `signal-hook`, whose handlers only write to a pipe; nothing runs inside the signal handler.

use std::fmt;
use std::io;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// A termination signal the process received.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ShutdownSignal {
    /// SIGINT: Ctrl-C in a terminal.
    Interrupt,
    /// SIGTERM: a polite request to stop (`kill`, systemd, container runtimes).
    Terminate,
}

impl fmt::Display for ShutdownSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShutdownSignal::Interrupt => "SIGINT",
            ShutdownSignal::Terminate => "SIGTERM",
        })
    }
}

/// Blocks until the process receives SIGINT or SIGTERM, and returns which.
///
/// The handlers stay installed after it returns, so a second signal during shutdown does not
/// kill the process half-way through draining (send SIGKILL for that).
///
/// # Errors
///
/// If the handlers cannot be installed (for example, the pipe they write to cannot be
/// created).
pub fn wait_for_signal() -> io::Result<ShutdownSignal> {
    Ok(wait_on(Signals::new([SIGINT, SIGTERM])?))
}

/// Waits on handlers already installed.
fn wait_on(mut signals: Signals) -> ShutdownSignal {
    loop {
        if let Some(signal) = signals.forever().next() {
            return match signal {
                SIGTERM => ShutdownSignal::Terminate,
                _ => ShutdownSignal::Interrupt,
            };
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_signal_sent_to_the_process_is_returned() {
        // Installed before the signal is raised, so the default action (terminating the test
        // binary) never applies.
        let signals = Signals::new([SIGINT, SIGTERM]).expect("handlers installed");
        let waiter = std::thread::spawn(move || wait_on(signals));
        signal_hook::low_level::raise(SIGTERM).expect("raise SIGTERM");
        assert_eq!(
            waiter.join().expect("waiter thread"),
            ShutdownSignal::Terminate
        );
    }
}
