//! Time, injectable: everything in the runtime that depends on time reads a [`Clock`], so tests
//! of restart intensity, token buckets and response-time controllers run on a [`ManualClock`]
//! instead of sleeping and hoping.
//!
//! * [`Clock`], [`SystemClock`], [`ManualClock`] (`clock.rs`): monotonic time as a trait.
//! * [`CoarseClock`] (`coarse.rs`): time read from memory, cheap enough for every post; the
//!   runtime's shared instance also stamps messages with their enqueue millisecond.
//! * Timers (`timer.rs`): one thread per runtime firing callbacks at deadlines; a handler gets a
//!   [`TimerHandle`] to cancel one.
//! * [`sleep`](fn@sleep), [`timeout`] (`sleep.rs`): waiting in async code (an `async` handler)
//!   without holding a thread.
//!
//! Layer 0: uses nothing else in the crate but `isolation` (a timer handle may be posted).

mod clock;
mod coarse;
mod sleep;
mod timer;

pub use clock::{Clock, ManualClock, SystemClock};
pub use coarse::CoarseClock;
pub(crate) use coarse::{shared_clock, shared_millis, shared_millis_wide};
pub use sleep::{sleep, sleep_until, timeout, Elapsed, Sleep};
pub use timer::TimerHandle;
pub(crate) use timer::Timers;
