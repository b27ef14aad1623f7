//! Watching a process from code that is not a process: [`Addr::watch`] and its [`Watch`]
//! handle.
//!
//! A process learns of another's end through `Ctx::monitor` and a `Down` message. Code outside
//! the runtime (a distribution layer telling remote nodes, a registry withdrawing a name, a
//! test) has no mailbox; it registers a callback instead. The callback is a watcher like a
//! monitoring process: held weakly by the watched process, called once with the `Down`
//! notice, at once if the process has already terminated. The [`Watch`] handle keeps it alive;
//! dropping the handle cancels it.
//!
//! Layer 3: uses `lifecycle` and the process cell.

use std::fmt;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use super::model::{Process, ProcessCell, Watcher};
use super::Addr;
use crate::lifecycle::Down;

type Callback = Box<dyn FnOnce(Down) + Send>;

/// Removes a watcher from the watched process, if that process still exists.
type Unregister = Box<dyn Fn(&Weak<dyn Watcher>) + Send + Sync>;

/// A callback waiting for a process's end.
struct CallbackWatcher {
    callback: Mutex<Option<Callback>>,
}

impl Watcher for CallbackWatcher {
    fn notify_down(self: Arc<Self>, notice: Down) {
        // Taken out before the call: the callback may drop the `Watch`.
        let callback = self.callback.lock().take();
        if let Some(callback) = callback {
            callback(notice);
        }
    }
}

/// Keeps a callback registered by [`Addr::watch`]; dropping it (or [`Watch::cancel`]) cancels
/// the callback if it has not run yet.
#[must_use = "dropping the Watch cancels the callback"]
pub struct Watch {
    watcher: Arc<CallbackWatcher>,
    unregister: Unregister,
}

impl Watch {
    /// Cancels the callback; returns whether it had not run yet.
    pub fn cancel(self) -> bool {
        self.watcher.callback.lock().take().is_some()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.watcher.callback.lock().take();
        let weak: Weak<dyn Watcher> =
            Arc::downgrade(&(Arc::clone(&self.watcher) as Arc<dyn Watcher>));
        (self.unregister)(&weak);
    }
}

impl fmt::Debug for Watch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watch")
            .field("pending", &self.watcher.callback.lock().is_some())
            .finish()
    }
}

impl<P: Process> Addr<P> {
    /// Calls `callback` once with the process's [`Down`] notice when it terminates (at once,
    /// on this thread, if it already has). For code outside processes; a process monitors
    /// with `Ctx::monitor` and gets a message instead.
    ///
    /// The callback runs on the thread that ends the process (a worker, usually), so it must
    /// be short and must not block. Keep the returned [`Watch`]: dropping it cancels the
    /// callback.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use whirl::prelude::*;
    ///
    /// #[derive(Message)]
    /// struct Run;
    ///
    /// #[process]
    /// struct Job;
    /// #[process]
    /// impl Job {
    ///     #[handle]
    ///     fn run(&mut self, _: Run) -> Result<(), Failure> {
    ///         Err(Failure::new("out of disk"))
    ///     }
    /// }
    ///
    /// let runtime = Runtime::new();
    /// let job = runtime.spawn(Job);
    /// let (tx, rx) = mpsc::channel();
    /// let _watch = job.watch(move |down| {
    ///     let _ = tx.send(down.reason.to_string());
    /// });
    /// job.post(Run).unwrap();
    /// assert_eq!(rx.recv().unwrap(), "failed: out of disk");
    /// ```
    pub fn watch(&self, callback: impl FnOnce(Down) + Send + 'static) -> Watch {
        let watcher = Arc::new(CallbackWatcher {
            callback: Mutex::new(Some(Box::new(callback))),
        });
        let as_dyn: Arc<dyn Watcher> = Arc::clone(&watcher) as Arc<dyn Watcher>;
        let cell: Weak<ProcessCell<P>> = Arc::downgrade(self.cell());
        let unregister = Box::new(move |w: &Weak<dyn Watcher>| {
            if let Some(cell) = cell.upgrade() {
                cell.remove_watcher(w);
            }
        });
        self.cell().add_watcher(Arc::downgrade(&as_dyn));
        Watch {
            watcher,
            unregister,
        }
    }
}
