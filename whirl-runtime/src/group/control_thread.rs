//! The runtime's controller thread: the periodic work of every group that has some — the
//! [concurrency controllers](crate::control), sampled at each controller's period, their
//! decisions applied; and the slow-turn watchdog (`watchdog.rs`), which reads the workers'
//! probes every half threshold.
//!
//! It starts with the first group built with a controller or a slow-turn threshold (so with
//! the default group, unless its threshold is turned off) and stops at shutdown. It sleeps
//! until the earliest deadline any of its groups gives, and is woken early when a group is
//! added. A controller that panics is logged and dropped from its group; the others keep
//! running. It knows the groups it watches only as [`Controlled`]: what a group does on a tick
//! is `controllers.rs`.

use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// Longest the thread sleeps without looking for new groups or a stop request.
const MAX_NAP: Duration = Duration::from_secs(1);

/// A group with periodic work, as the controller thread sees it.
pub(crate) trait Controlled: Send + Sync + 'static {
    /// Does what is due at `now` (the watchdog's look, the controllers' samples); returns
    /// when the next thing is.
    fn tick(self: Arc<Self>, now: Instant) -> Option<Instant>;
}

#[derive(Default)]
struct State {
    stop: bool,
    /// A group was added since the thread last listed them.
    added: bool,
    handle: Option<JoinHandle<()>>,
}

/// The runtime's handle on its controller thread.
#[derive(Default)]
pub(crate) struct ControlThread {
    state: Mutex<State>,
    wake: Condvar,
    /// The groups with periodic work; a dropped group drops out.
    watched: Mutex<Vec<Weak<dyn Controlled>>>,
}

impl ControlThread {
    /// Ticks `group` from now on, starting the thread if it is not running, waking it if it
    /// is (a new group's first deadline may be earlier than the one it sleeps until).
    pub(crate) fn watch(self: &Arc<Self>, group: Weak<dyn Controlled>) {
        self.watched.lock().push(group);
        let mut state = self.state.lock();
        if state.stop {
            return;
        }
        if state.handle.is_some() {
            state.added = true;
            drop(state);
            self.wake.notify_all();
            return;
        }
        let control = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name("whirl-controller".into())
            .spawn(move || control_loop(control));
        match spawned {
            Ok(handle) => state.handle = Some(handle),
            Err(e) => tracing::error!("cannot start the controller thread: {e}"),
        }
    }

    /// Stops the thread and waits for it (it never runs user code for long: a controller's
    /// `adjust`).
    pub(crate) fn stop(&self) {
        let handle = {
            let mut state = self.state.lock();
            state.stop = true;
            state.handle.take()
        };
        self.wake.notify_all();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}

fn control_loop(control: Weak<ControlThread>) {
    loop {
        let Some(control) = control.upgrade() else {
            return;
        };
        let now = Instant::now();
        let mut next = now + MAX_NAP;
        let groups: Vec<Arc<dyn Controlled>> = {
            let mut watched = control.watched.lock();
            watched.retain(|g| g.strong_count() > 0);
            watched.iter().filter_map(Weak::upgrade).collect()
        };
        for group in groups {
            if let Some(due) = group.tick(now) {
                next = next.min(due);
            }
        }
        let mut state = control.state.lock();
        if state.stop {
            return;
        }
        // Checked under the lock `watch` sets it under: a group added after the listing above
        // is either seen here or wakes the wait.
        if !std::mem::take(&mut state.added) {
            let _ = control.wake.wait_until(&mut state, next);
        }
        if state.stop {
            return;
        }
    }
}
