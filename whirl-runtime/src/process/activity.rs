//! What a process tells observers about itself (`Runtime::processes`,
//! `Runtime::process_info`): its counters, read from any thread; who it monitors and who
//! monitors it; its supervisor; and its failure, logged as it terminates. The counters are
//! written by the turn (`turn.rs`), once per turn; the rest lives in the cell's control block,
//! off the message path.

use std::time::SystemTime;

use super::model::{Process, ProcessCell};
use crate::control::{FailureLog, FailureRecord, ProcessInfo, Relations, Supervision};
use crate::lifecycle::{ExitReason, ProcessId};
use crate::time::shared_millis_wide;

use super::inbox::messages_before;
use super::trace::Envelope;

impl<P: Process> ProcessCell<P> {
    /// The token holder, at the end of a turn that took `handled` messages and left the inbox
    /// at `position`.
    #[inline]
    pub(super) fn turn_done(&self, handled: usize, position: usize) {
        self.activity
            .turn_done(shared_millis_wide(), handled, position);
    }

    /// Messages posted to the process and not yet taken by a finished turn (read from any
    /// thread; it lags by the turn in progress, if any). A terminated process has nothing
    /// waiting: a producer finds out by posting.
    pub(crate) fn queued(&self) -> u64 {
        if self.mailbox.is_closed() {
            return 0;
        }
        self.waiting_after(messages_before::<Envelope<P::Message>>(
            self.activity.taken_at(),
        ))
    }

    /// Messages posted beyond the first `taken`.
    fn waiting_after(&self, taken: u64) -> u64 {
        messages_before::<Envelope<P::Message>>(self.mailbox.tail_position()).saturating_sub(taken)
    }

    /// The process's row of the process table, without its names.
    pub(super) fn row(&self) -> ProcessInfo {
        let reading = self.activity.read(shared_millis_wide());
        let taken = messages_before::<Envelope<P::Message>>(reading.taken_at);
        let failures = self
            .control_if_any()
            .and_then(|c| c.lock().supervision.as_ref().map(|s| s.failures))
            .unwrap_or(0);
        ProcessInfo {
            id: self.id,
            names: Vec::new(),
            type_name: std::any::type_name::<P>(),
            group: String::new(),
            queue_length: self.waiting_after(taken),
            turns: reading.turns,
            handled: taken,
            failures,
            idle: reading.idle,
            messages_per_second: reading.messages_per_second,
        }
    }

    /// This process now monitors `id` (before the watcher is registered: a notice delivered
    /// at once forgets it again).
    pub(crate) fn note_monitoring(&self, id: ProcessId) {
        self.control().lock().monitoring.push(id);
    }

    /// This process no longer monitors `id` (one registration: demonitored, or told of its
    /// end).
    pub(crate) fn forget_monitoring(&self, id: ProcessId) {
        self.edit_monitoring(|monitoring| {
            if let Some(at) = monitoring.iter().position(|m| *m == id) {
                monitoring.remove(at);
            }
        });
    }

    /// This process no longer monitors `id` at all (`Ctx::demonitor` removes every
    /// registration).
    pub(crate) fn forget_all_monitoring(&self, id: ProcessId) {
        self.edit_monitoring(|monitoring| monitoring.retain(|m| *m != id));
    }

    /// Edits the list of monitored processes where the process is now (it took the list with
    /// it if it moved to another group: `relocate.rs`).
    fn edit_monitoring(&self, edit: impl Fn(&mut Vec<ProcessId>)) {
        let Some(control) = self.control_if_any() else {
            return;
        };
        let mut control = control.lock();
        if control.moved_to.is_none() {
            return edit(&mut control.monitoring);
        }
        drop(control);
        // In a loop: it may have moved many times.
        let Some(mut next) = self.moved_to() else {
            return;
        };
        while let Some(after) = next.moved_to() {
            next = after;
        }
        if let Some(control) = next.control_if_any() {
            edit(&mut control.lock().monitoring);
        }
    }

    /// Who this process watches and who watches it, and its supervisor.
    pub(super) fn relations(&self) -> Relations {
        let Some(control) = self.control_if_any() else {
            return Relations::default();
        };
        let (monitoring, watchers, supervision) = {
            let control = control.lock();
            (
                control.monitoring.clone(),
                control.watchers.clone(),
                control.supervision.as_deref().cloned(),
            )
        };
        let mut relations = Relations {
            supervision,
            ..Relations::default()
        };
        for id in monitoring {
            if !relations.monitors.contains(&id) {
                relations.monitors.push(id);
            }
        }
        // Upgraded outside the lock: dropping the last strong reference may run a process's
        // `Drop`.
        for watcher in watchers.iter().filter_map(|w| w.upgrade()) {
            match watcher.watcher_id() {
                Some(id) if !relations.monitored_by.contains(&id) => {
                    relations.monitored_by.push(id);
                }
                Some(_) => {}
                None => relations.other_watchers += 1,
            }
        }
        relations
    }

    /// Records where this process sits in a supervision tree.
    pub(super) fn set_supervision(&self, supervision: Supervision) {
        self.control().lock().supervision = Some(Box::new(supervision));
    }

    /// Logs this process's failure in the runtime's log of recent failures (`reason` is a
    /// failure), with its supervisor if it has one.
    pub(super) fn log_failure(&self, reason: &ExitReason) {
        let child_of = self.control_if_any().and_then(|c| {
            c.lock()
                .supervision
                .as_ref()
                .map(|s| (s.supervisor, s.child.clone()))
        });
        let record = FailureRecord {
            // Stamped by the log, which reads the wall clock only when it is read.
            at: SystemTime::UNIX_EPOCH,
            process: self.id,
            type_name: std::any::type_name::<P>(),
            group: self.group.name.clone(),
            reason: reason.to_string(),
            child_of,
        };
        self.group.kernel.extension::<FailureLog>().push(record);
    }
}
