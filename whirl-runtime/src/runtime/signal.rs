//! Shutting down on SIGINT or SIGTERM, and reloading on SIGHUP: the calls a long-running
//! service needs.
//!
//! [`wait_for_signal`] blocks the calling thread (usually `main`) until the process receives
//! SIGINT (Ctrl-C) or SIGTERM (what `kill`, systemd and container runtimes send), and says
//! which. [`Runtime::shutdown_on_signal`](crate::Runtime::shutdown_on_signal) waits and then
//! shuts the runtime down gracefully within a deadline.
//!
//! A service that also reloads its configuration on SIGHUP, as daemons conventionally do
//! (nginx, sshd), installs [`ServiceSignals`] once, at start, and calls
//! [`ServiceSignals::wait`] in a loop: each call returns the next [`ServiceSignal`], a
//! [`Reload`](ServiceSignal::Reload) for SIGHUP or a [`Shutdown`](ServiceSignal::Shutdown)
//! naming SIGINT or SIGTERM. Installed early, the handlers catch a SIGHUP sent at any time
//! after, which would otherwise terminate the process (SIGHUP's default action).
//!
//! Handlers are installed with `signal-hook`, whose handlers only write to a pipe; nothing
//! runs inside the signal handler. Signals of one kind that arrive before the waiting thread
//! looks are counted once (two SIGHUPs in quick succession may be one reload), as with every
//! Unix signal.

use std::fmt;
use std::io;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
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

/// What a signal asks of a service ([`ServiceSignals::wait`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServiceSignal {
    /// SIGHUP: read the configuration again (and whatever else the service reloads: its
    /// certificates, its log files), and go on serving.
    Reload,
    /// SIGINT or SIGTERM: stop, gracefully.
    Shutdown(ShutdownSignal),
}

impl fmt::Display for ServiceSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServiceSignal::Reload => f.write_str("SIGHUP"),
            ServiceSignal::Shutdown(signal) => signal.fmt(f),
        }
    }
}

/// Handlers for SIGINT, SIGTERM and SIGHUP, installed for as long as this value lives: a
/// service's signals, waited for one after another (see the [module docs](crate::signal)).
///
/// ```no_run
/// use whirl::signal::{ServiceSignal, ServiceSignals};
///
/// let mut signals = ServiceSignals::install()?;
/// // ... start serving ...
/// let stop = loop {
///     match signals.wait() {
///         ServiceSignal::Reload => { /* read the configuration again */ }
///         ServiceSignal::Shutdown(signal) => break signal,
///         _ => {}
///     }
/// };
/// println!("{stop}: shutting down");
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct ServiceSignals {
    signals: Signals,
}

impl ServiceSignals {
    /// Installs the handlers. From now on SIGINT, SIGTERM and SIGHUP no longer take their
    /// default action (terminating the process): they wait for [`ServiceSignals::wait`].
    ///
    /// # Errors
    ///
    /// If the handlers cannot be installed (for example, the pipe they write to cannot be
    /// created).
    pub fn install() -> io::Result<ServiceSignals> {
        Ok(ServiceSignals {
            signals: Signals::new([SIGINT, SIGTERM, SIGHUP])?,
        })
    }

    /// Blocks until the next signal (or returns one that arrived since the last call), and
    /// says what it asks.
    pub fn wait(&mut self) -> ServiceSignal {
        loop {
            if let Some(signal) = self.signals.forever().next() {
                return match signal {
                    SIGHUP => ServiceSignal::Reload,
                    SIGTERM => ServiceSignal::Shutdown(ShutdownSignal::Terminate),
                    _ => ServiceSignal::Shutdown(ShutdownSignal::Interrupt),
                };
            }
        }
    }
}

impl fmt::Debug for ServiceSignals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceSignals").finish_non_exhaustive()
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

    /// Waits until `signals` returns `expected`, skipping what other tests of this binary
    /// raise meanwhile (a SIGTERM of the test above reaches every handler installed).
    fn wait_for(signals: &mut ServiceSignals, expected: ServiceSignal) {
        for _ in 0..16 {
            if signals.wait() == expected {
                return;
            }
        }
        panic!("{expected} never arrived");
    }

    #[test]
    fn a_sighup_asks_for_a_reload_and_the_process_lives_on_to_see_a_sigterm() {
        let mut signals = ServiceSignals::install().expect("handlers installed");
        signal_hook::low_level::raise(SIGHUP).expect("raise SIGHUP");
        wait_for(&mut signals, ServiceSignal::Reload);
        // A second SIGHUP is another reload: the handler stays installed between waits.
        signal_hook::low_level::raise(SIGHUP).expect("raise SIGHUP again");
        wait_for(&mut signals, ServiceSignal::Reload);
        signal_hook::low_level::raise(SIGTERM).expect("raise SIGTERM");
        let stop = ServiceSignal::Shutdown(ShutdownSignal::Terminate);
        wait_for(&mut signals, stop);
        assert_eq!(ServiceSignal::Reload.to_string(), "SIGHUP");
        assert_eq!(stop.to_string(), "SIGTERM");
    }
}
