//! The runtime's controller thread: samples every group that has
//! [concurrency controllers](crate::control) at each controller's period, and applies what
//! they decide.
//!
//! It starts with the first group built with a controller and stops at shutdown. A
//! controller that panics is logged and dropped from its group; the others keep running. It
//! knows the groups it watches only as [`Controlled`]: what a group does with its controllers
//! is `controllers.rs`.

use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// Longest the thread sleeps without looking for new groups or a stop request.
const MAX_NAP: Duration = Duration::from_secs(1);

/// A group with controllers, as the controller thread sees it.
pub(crate) trait Controlled: Send + Sync + 'static {
    /// Runs the controllers that are due at `now`; returns when the next one is.
    fn run_controllers(self: Arc<Self>, now: Instant) -> Option<Instant>;
}

#[derive(Default)]
struct State {
    stop: bool,
    handle: Option<JoinHandle<()>>,
}

/// The runtime's handle on its controller thread.
#[derive(Default)]
pub(crate) struct ControlThread {
    state: Mutex<State>,
    wake: Condvar,
    /// The groups with controllers; a dropped group drops out.
    watched: Mutex<Vec<Weak<dyn Controlled>>>,
}

impl ControlThread {
    /// Samples `group` from now on, starting the thread if it is not running.
    pub(crate) fn watch(self: &Arc<Self>, group: Weak<dyn Controlled>) {
        self.watched.lock().push(group);
        let mut state = self.state.lock();
        if state.handle.is_some() || state.stop {
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
            if let Some(due) = group.run_controllers(now) {
                next = next.min(due);
            }
        }
        let mut state = control.state.lock();
        if state.stop {
            return;
        }
        let _ = control.wake.wait_until(&mut state, next);
        if state.stop {
            return;
        }
    }
}
