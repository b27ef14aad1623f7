//! What reaches standard error when no `tracing` subscriber is installed: the events a
//! program should not miss (slow turns, restarts, a supervisor giving up), as failures do
//! (`failures.rs`), without a flood: of each kind, the first [`BURST`], then one per
//! [`QUIET`], the next printed saying how many were not. With a subscriber, they are its
//! events only. Handler panics go through the same [`Limiter`] (`runtime/panics.rs`).

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// One kind of line for standard error, rate-limited.
pub(crate) struct Quiet {
    /// What the kind is called, plural (`"slow turns"`), for the count of those skipped.
    what: &'static str,
    limiter: Mutex<Limiter>,
}

impl Quiet {
    pub(crate) const fn new(what: &'static str) -> Quiet {
        Quiet {
            what,
            limiter: Mutex::new(Limiter::new()),
        }
    }

    /// Prints `whirl: <line>` to standard error, unless a `tracing` subscriber is installed
    /// (it has the event) or the limit holds it back.
    pub(crate) fn print(&self, line: impl FnOnce() -> String) {
        if tracing::dispatcher::has_been_set() {
            return;
        }
        if let Print::Yes { skipped } = self.limiter.lock().admit(Instant::now()) {
            if skipped > 0 {
                eprintln!(
                    "whirl: {skipped} {} since the last one printed were not printed",
                    self.what
                );
            }
            eprintln!("whirl: {}", line());
        }
    }
}

/// Lines of one kind printed before the limit applies.
pub(crate) const BURST: u32 = 5;
/// After the burst, at most one line of a kind is printed in this long.
pub(crate) const QUIET: Duration = Duration::from_secs(10);

/// Whether to print a line.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Print {
    /// Print it; `skipped` lines were not printed since the last one that was.
    Yes {
        skipped: u64,
    },
    No,
}

/// The first [`BURST`] lines, then one per [`QUIET`].
pub(crate) struct Limiter {
    printed: u32,
    last: Option<Instant>,
    skipped: u64,
}

impl Limiter {
    pub(crate) const fn new() -> Limiter {
        Limiter {
            printed: 0,
            last: None,
            skipped: 0,
        }
    }

    pub(crate) fn admit(&mut self, now: Instant) -> Print {
        let quiet_enough = self
            .last
            .is_none_or(|last| now.saturating_duration_since(last) >= QUIET);
        if self.printed < BURST || quiet_enough {
            self.printed = self.printed.saturating_add(1);
            self.last = Some(now);
            Print::Yes {
                skipped: std::mem::take(&mut self.skipped),
            }
        } else {
            self.skipped += 1;
            Print::No
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_one_per_quiet_period_with_the_skipped_counted() {
        let mut limiter = Limiter::new();
        let t0 = Instant::now();
        for _ in 0..BURST {
            assert_eq!(limiter.admit(t0), Print::Yes { skipped: 0 });
        }
        for _ in 0..100 {
            assert_eq!(limiter.admit(t0 + Duration::from_secs(1)), Print::No);
        }
        assert_eq!(limiter.admit(t0 + QUIET), Print::Yes { skipped: 100 });
        assert_eq!(limiter.admit(t0 + QUIET), Print::No);
        assert_eq!(limiter.admit(t0 + QUIET + QUIET), Print::Yes { skipped: 1 });
    }
}
