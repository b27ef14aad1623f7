//! The live processes, listed for observers: the top of the process table in one order
//! ([`Kernel::processes`]) and one process in detail ([`Kernel::process_info`]), what
//! `Runtime::processes` and `Runtime::process_info` return. The figures and their cost are
//! defined in `control/processes.rs`.
//!
//! The walk reads each process's counters through `Runnable::row` in chunks under the
//! registry's shard locks (`registry.rs`), keeps only the first `limit` rows in a heap, and
//! fills in names and group only for the rows it keeps: a million processes cost a million
//! reads of a few atomics, not a million rows.

use crate::control::{FailureLog, ProcessDetail, ProcessInfo, ProcessQuery, TopN};
use crate::lifecycle::ProcessId;

use super::shared::Kernel;

impl Kernel {
    /// The first `query.limit` live processes in `query.sort` order.
    pub(crate) fn processes(&self, query: &ProcessQuery) -> Vec<ProcessInfo> {
        let mut top = TopN::new(query.sort, query.limit);
        self.registry.visit(|process| {
            if query
                .group
                .as_deref()
                .is_some_and(|g| g != process.group_name())
            {
                return;
            }
            let Some(mut row) = process.row() else {
                return;
            };
            if top.wants(&row) {
                row.group = process.group_name().to_owned();
                top.offer(row);
            }
        });
        let mut rows = top.into_sorted();
        let mut names = self.names.by_holder();
        for row in &mut rows {
            if let Some(held) = names.remove(&row.id) {
                row.names = held;
            }
        }
        rows
    }

    /// Process `id` in detail, if it is alive.
    pub(crate) fn process_info(&self, id: ProcessId) -> Option<ProcessDetail> {
        let process = self.registry.get(id)?;
        let mut info = process.row()?;
        info.group = process.group_name().to_owned();
        let relations = process.relations();
        drop(process);
        info.names = self.names.by_holder().remove(&id).unwrap_or_default();
        let links = relations
            .monitors
            .iter()
            .filter(|m| relations.monitored_by.contains(m))
            .copied()
            .collect();
        let recent_failures = self
            .extension::<FailureLog>()
            .of(id, relations.supervision.as_ref());
        Some(ProcessDetail {
            info,
            monitors: relations.monitors,
            monitored_by: relations.monitored_by,
            other_watchers: relations.other_watchers,
            links,
            supervision: relations.supervision,
            recent_failures,
        })
    }
}
