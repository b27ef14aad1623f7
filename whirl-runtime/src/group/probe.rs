//! What a worker is running right now: which process, which message, since when.
//!
//! Each worker slot has a [`TurnProbe`]. The worker writes it with relaxed stores as a turn
//! begins, before each message or hook, and as the turn ends; anyone may read it. Shutdown
//! reads the probes to report processes whose handler does not return (id, message type, for
//! how long), and the slow-turn watchdog (`watchdog.rs`) reads them to report turns that hold
//! a worker longer than their group's threshold. The reading is a snapshot: the three words are
//! written separately, so a reader may see the process of one message with the start time of
//! the next; each word on its own is always one the worker wrote.
//!
//! A reading names its turn ([`Running::turn`]): the process and the millisecond the turn
//! began. No counter is needed to tell turns apart, so `begin` stays three stores: two turns on
//! one worker share both only if the same process began twice within one tick of the coarse
//! clock, and then the first ended within the tick it began in — it was never slow. A torn
//! reading (the new process with the previous turn's start) names a turn that exists for an
//! instant only; the watchdog acts on a turn only once two of its readings, a period apart,
//! agree on it.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64};
use std::time::Duration;

use crate::lifecycle::ProcessId;
use crate::time::shared_millis;

/// The name of a message type, as a function (`std::any::type_name::<M>`): one word, so it can
/// be published with a single atomic store.
pub(crate) type TypeNameFn = fn() -> &'static str;

/// What one worker is running. See the [module docs](self).
#[derive(Default)]
pub(crate) struct TurnProbe {
    /// The process's id plus one; 0 between turns.
    process: AtomicU64,
    /// A [`TypeNameFn`] cast to a pointer: the message type being handled, or the process's
    /// whole message type when its handlers do not say (hand-written processes, hooks).
    message: AtomicPtr<()>,
    /// When the current turn began, on the shared coarse millisecond clock.
    since_millis: AtomicU32,
}

/// A reading of a [`TurnProbe`] taken while a process was running.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Running {
    pub(crate) process: ProcessId,
    /// Which turn of the slot this is: the process and the (coarse) millisecond the turn
    /// began. See the [module docs](self).
    pub(crate) turn: (ProcessId, u32),
    /// The type of the message being handled (or the process's message type, see
    /// `TurnProbe::message`).
    pub(crate) message: Option<&'static str>,
    pub(crate) for_how_long: Duration,
}

impl TurnProbe {
    /// A turn of `process` begins; `messages` names its message type until a handler says
    /// which one it handles ([`TurnProbe::handling`]; hand-written processes never do).
    #[inline]
    pub(crate) fn begin(&self, process: ProcessId, messages: TypeNameFn) {
        self.message.store(messages as *mut (), Relaxed);
        self.since_millis.store(shared_millis(), Relaxed);
        self.process.store(process.0 + 1, Relaxed);
    }

    /// The turn's process handles a message of the type `name` returns. One store: the time
    /// kept is the turn's start (a stuck handler is the turn's last message, and a turn's
    /// earlier messages take microseconds).
    #[inline]
    pub(crate) fn handling(&self, name: TypeNameFn) {
        self.message.store(name as *mut (), Relaxed);
    }

    /// The turn is over.
    #[inline]
    pub(crate) fn end(&self) {
        self.process.store(0, Relaxed);
    }

    /// What is running now, if anything.
    pub(crate) fn read(&self) -> Option<Running> {
        let process = self.process.load(Relaxed).checked_sub(1)?;
        let message = self.message.load(Relaxed);
        let since = self.since_millis.load(Relaxed);
        let message = (!message.is_null()).then(|| {
            // SAFETY: the only non-null values ever stored in `message` are `TypeNameFn`s cast
            // to pointers (`handling`), and a function pointer survives the round trip through
            // a data pointer on every platform Rust supports with `std` (same size, no tag). (I12)
            let name: TypeNameFn = unsafe { std::mem::transmute::<*mut (), TypeNameFn>(message) };
            name()
        });
        Some(Running {
            process: ProcessId(process),
            turn: (ProcessId(process), since),
            message,
            for_how_long: Duration::from_millis(u64::from(shared_millis().wrapping_sub(since))),
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_probe_reports_what_runs_and_nothing_between_turns() {
        let probe = TurnProbe::default();
        assert!(probe.read().is_none());
        probe.begin(ProcessId(7), std::any::type_name::<u8>);
        let running = probe.read().expect("a turn is running");
        assert_eq!(running.process, ProcessId(7));
        assert_eq!(running.message, Some("u8"));
        probe.handling(std::any::type_name::<Vec<u8>>);
        let later = probe.read().expect("the same turn is running");
        assert_eq!(later.message, Some("alloc::vec::Vec<u8>"));
        // A new message is the same turn.
        assert_eq!(later.turn, running.turn);
        probe.end();
        assert!(probe.read().is_none());
    }

    #[test]
    fn turns_of_different_processes_are_told_apart() {
        let probe = TurnProbe::default();
        probe.begin(ProcessId(1), std::any::type_name::<u8>);
        let first = probe.read().map(|r| r.turn);
        probe.end();
        probe.begin(ProcessId(2), std::any::type_name::<u8>);
        let second = probe.read().map(|r| r.turn);
        assert!(first.is_some() && second.is_some());
        assert_ne!(first, second);
    }
}
