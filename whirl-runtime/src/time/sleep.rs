//! Waiting in async code: [`sleep`] and [`timeout`].
//!
//! An `async` handler that awaits a [`Sleep`] gives its worker back: the process is parked
//! until the deadline, and a thousand processes sleeping at once cost a thousand timer
//! entries, not a thousand threads. The deadlines are kept by one timer thread for the whole
//! program, started on the first sleep; they work in any executor (tokio, a `block_on`), not
//! only in whirl's processes.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::timer::{TimerHandle, Timers};

/// The timer thread behind every [`Sleep`].
fn timers() -> &'static Timers {
    static TIMERS: OnceLock<Timers> = OnceLock::new();
    TIMERS.get_or_init(Timers::new)
}

/// What a sleep and its timer share.
#[derive(Default)]
struct Alarm {
    rung: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

/// A future that completes at a deadline: see [`sleep`].
#[must_use = "a sleep does nothing unless awaited"]
#[derive(Debug)]
pub struct Sleep {
    deadline: Instant,
    armed: Option<(Arc<AlarmCell>, TimerHandle)>,
}

/// [`Alarm`] behind a `Debug` impl.
struct AlarmCell(Alarm);

impl std::fmt::Debug for AlarmCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Alarm")
            .field("rung", &self.0.rung.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// Waits for `duration` without holding a thread: in an `async` handler, the process is
/// parked and its worker runs other processes meanwhile.
///
/// ```
/// # let rt = whirl::Runtime::new();
/// # use std::time::Duration;
/// # use whirl::prelude::*;
/// # #[whirl::process] struct Napper;
/// # #[derive(whirl::Message)] struct Nap;
/// #[whirl::process]
/// impl Napper {
///     #[handle]
///     async fn nap(&mut self, _: Nap) -> u32 {
///         whirl::time::sleep(Duration::from_millis(5)).await;
///         7
///     }
/// }
/// # let napper = rt.spawn(Napper);
/// assert_eq!(napper.call(Nap).unwrap(), 7);
/// ```
pub fn sleep(duration: Duration) -> Sleep {
    let now = Instant::now();
    sleep_until(
        now.checked_add(duration)
            .unwrap_or(now + Duration::from_secs(86_400 * 365)),
    )
}

/// Waits until `deadline` (see [`sleep`]).
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep {
        deadline,
        armed: None,
    }
}

impl Sleep {
    /// When the sleep completes.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let now = Instant::now();
        if now >= self.deadline {
            return Poll::Ready(());
        }
        match &self.armed {
            Some((alarm, _)) => {
                let mut waker = alarm.0.waker.lock();
                if alarm.0.rung.load(Ordering::Acquire) {
                    return Poll::Ready(());
                }
                match &mut *waker {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    slot => *slot = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
            None => {
                let alarm = Arc::new(AlarmCell(Alarm {
                    rung: AtomicBool::new(false),
                    waker: Mutex::new(Some(cx.waker().clone())),
                }));
                let ring = Arc::downgrade(&alarm);
                let handle = timers().schedule(self.deadline - now, None, move || {
                    if let Some(alarm) = ring.upgrade() {
                        let waker = {
                            let mut waker = alarm.0.waker.lock();
                            alarm.0.rung.store(true, Ordering::Release);
                            waker.take()
                        };
                        if let Some(w) = waker {
                            w.wake();
                        }
                    }
                    false
                });
                self.armed = Some((alarm, handle));
                Poll::Pending
            }
        }
    }
}

impl Drop for Sleep {
    /// A sleep dropped early (a timeout that lost the race, a cancelled handler) cancels its
    /// timer.
    fn drop(&mut self) {
        if let Some((alarm, handle)) = &self.armed {
            if !alarm.0.rung.load(Ordering::Acquire) {
                handle.cancel();
            }
        }
    }
}

/// The error of a [`timeout`] whose deadline passed first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the deadline elapsed before the operation completed")]
#[non_exhaustive]
pub struct Elapsed;

/// Runs `future` for at most `duration`: its output, or [`Elapsed`] (the future is dropped).
///
/// ```
/// use std::time::Duration;
/// # async fn demo() {
/// let slow = whirl::time::sleep(Duration::from_secs(60));
/// let outcome = whirl::time::timeout(Duration::from_millis(5), slow).await;
/// assert!(outcome.is_err());
/// # }
/// ```
pub async fn timeout<F: Future>(duration: Duration, future: F) -> Result<F::Output, Elapsed> {
    let mut future = std::pin::pin!(future);
    let mut deadline = sleep(duration);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(output) = future.as_mut().poll(cx) {
            return Poll::Ready(Ok(output));
        }
        match Pin::new(&mut deadline).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed)),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake};
    use std::time::Duration;

    use super::{timeout, timers};

    /// Wakes by unparking the thread that runs [`block_on`].
    struct Unpark(std::thread::Thread);

    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }

    fn block_on<F: Future>(future: F) -> F::Output {
        let waker = Arc::new(Unpark(std::thread::current())).into();
        let mut cx = Context::from_waker(&waker);
        let mut future = pin!(future);
        loop {
            match future.as_mut().poll(&mut cx) {
                Poll::Ready(output) => return output,
                Poll::Pending => std::thread::park(),
            }
        }
    }

    /// Pending on its first poll (so the timeout arms its timer), ready on the second.
    async fn yield_once() {
        let mut yielded = false;
        std::future::poll_fn(|cx| {
            if yielded {
                Poll::Ready(())
            } else {
                yielded = true;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        })
        .await;
    }

    #[test]
    fn timeouts_that_win_leave_no_timers_behind() {
        let rounds = 20 * super::super::timer::SWEEP_MIN;
        for _ in 0..rounds {
            let outcome = block_on(timeout(Duration::from_secs(3600), yield_once()));
            assert!(outcome.is_ok());
        }
        // Other tests' sleeps share the heap; a few thousand is the sweep's slack.
        let left = timers().pending();
        assert!(
            left <= 3 * super::super::timer::SWEEP_MIN,
            "{left} timers left"
        );
    }
}
