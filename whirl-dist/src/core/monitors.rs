//! Watches across nodes: monitors and links, and the frames that place, remove and end them.
//!
//! The watching node records the watch ([`crate::watches`]) and sends `Monitor` to the
//! watched process's node, which records who watches it, or answers `Down` at once when the
//! process is not there. When the process ends, its watchers get `Down`; a link also fails the
//! local process when the remote one fails (`Exit`), and the remote one when the local one
//! fails. A watch on a node that is lost ends with [`RemoteExit::NoConnection`] (see
//! [`membership`](super::membership)).

use std::sync::Arc;

use super::Core;
use crate::watches::{MonitorRef, Notify, Theirs};
use crate::wire::{self, Header, RemoteExit};
use crate::{NodeId, Pid};

impl Core {
    /// Watches `pid`; `notify` runs once when it ends (or cannot be reached).
    pub(crate) fn monitor(self: &Arc<Self>, pid: Pid, link: bool, notify: Notify) -> MonitorRef {
        let mref = self.watches.lock().watch(pid, notify);
        let monitor = MonitorRef { pid, mref };
        // Inserted before the check: a Down racing with this either finds the watch or is
        // seen here as quarantine. A node this one cannot send to (Down, or never seen Up)
        // cannot be watched: the monitor fires at once, as Erlang's does for an unreachable
        // node.
        if pid.node() != self.id && self.link_to(pid.node()).is_none() {
            self.end_mine(mref, RemoteExit::NoConnection);
            return monitor;
        }
        let header = Header::Monitor {
            target: pid.local(),
            mref,
            link,
        };
        self.send_control(pid.node(), wire::encode_raw(self.id, &header, &[]));
        monitor
    }

    /// Stops a watch; `false` if it had already ended.
    pub(crate) fn demonitor(self: &Arc<Self>, monitor: MonitorRef) -> bool {
        if self.watches.lock().take_mine(monitor.mref).is_none() {
            return false;
        }
        self.link_watches.lock().remove(&monitor.mref);
        let header = Header::Demonitor { mref: monitor.mref };
        self.send_control(monitor.pid.node(), wire::encode_raw(self.id, &header, &[]));
        true
    }

    /// Links local process `local` with `pid`: each fails when the other fails.
    pub(crate) fn link<P: whirl::Process>(self: &Arc<Self>, local: &whirl::Addr<P>, pid: Pid) {
        let victim = local.clone();
        let monitor = self.monitor(
            pid,
            true,
            Box::new(move |exit: RemoteExit| {
                if exit.is_failure() {
                    victim.exit(whirl::ExitReason::Failed(whirl::Failure::new(format!(
                        "linked process {pid} ended: {exit}"
                    ))));
                }
            }),
        );
        let core = Arc::downgrade(self);
        let watch = local.watch(move |down| {
            let Some(core) = core.upgrade() else { return };
            core.link_watches.lock().remove(&monitor.mref);
            if down.reason.is_failure() && core.watches.lock().take_mine(monitor.mref).is_some() {
                let header = Header::Exit {
                    mref: monitor.mref,
                    reason: RemoteExit::of(&down.reason),
                };
                core.send_control(pid.node(), wire::encode_raw(core.id, &header, &[]));
            }
        });
        self.link_watches.lock().insert(monitor.mref, watch);
    }

    /// Ends this node's watch `mref` with `exit`, if it is still there.
    pub(super) fn end_mine(&self, mref: u64, exit: RemoteExit) {
        let mine = self.watches.lock().take_mine(mref);
        self.link_watches.lock().remove(&mref);
        if let Some((_, notify)) = mine {
            notify(exit);
        }
    }

    pub(super) fn on_monitor(self: &Arc<Self>, from: NodeId, target: u64, mref: u64, link: bool) {
        let added = {
            // The export is checked under the watch lock: `process_ended` withdraws the
            // export before it takes this lock, so a watch added here is always told.
            // A process moving now is watched here until it runs elsewhere (its move then
            // tells the watcher where, `finish_moving`).
            let mut watches = self.watches.lock();
            (self.exports.read().contains_key(&target) || self.moves.lock().is_moving(target))
                && watches.add_theirs(
                    target,
                    Theirs {
                        node: from,
                        mref,
                        link,
                    },
                )
        };
        if added {
            return;
        }
        // A process that moved away: the watcher follows it (and monitors it where it runs).
        let header = match self.moves.lock().moved_to(target) {
            Some(to) => Header::Moved {
                mref,
                node: to.node().as_u128(),
                local: to.local(),
            },
            None => Header::Down {
                mref,
                reason: RemoteExit::NoProcess,
            },
        };
        self.send_control(from, wire::encode_raw(self.id, &header, &[]));
    }

    pub(super) fn on_exit(&self, from: NodeId, mref: u64, reason: RemoteExit) {
        let target = {
            let mut watches = self.watches.lock();
            let target = watches.link_target(from, mref);
            if target.is_some() {
                watches.remove_theirs(from, mref);
            }
            target
        };
        if let Some(local) = target {
            self.kill(local, format!("linked process on {from} ended: {reason}"));
        }
    }

    pub(super) fn kill(&self, local: u64, why: String) {
        let export = self.exports.read().get(&local).cloned();
        if let Some(export) = export {
            (export.kill)(whirl::ExitReason::Failed(whirl::Failure::new(why)));
        }
    }

    /// `from` stopped its watch `mref` on a process of this node.
    pub(super) fn on_demonitor(&self, from: NodeId, mref: u64) {
        self.watches.lock().remove_theirs(from, mref);
    }
}
