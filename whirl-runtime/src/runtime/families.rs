//! The figures of a group that both metric exports publish (`metrics.rs` through the
//! `metrics` facade, `prometheus.rs` through `prometheus-client`): one table of names, help
//! texts and how each is read from a [`GroupStats`] snapshot, so the two cannot drift apart.

use crate::control::GroupStats;

/// A count of a group, since it was built.
pub(super) type Count = fn(&GroupStats) -> u64;

/// A figure of a group now.
pub(super) type Level = fn(&GroupStats) -> f64;

/// The group counters, by name without `_total`, with their help.
pub(super) const GROUP_COUNTERS: [(&str, &str, Count); 8] = [
    (
        "whirl_group_posted",
        "Messages offered to a process of the group: admitted or rejected.",
        |g| g.counts.posted,
    ),
    (
        "whirl_group_admitted",
        "Messages the group's predicate admitted.",
        |g| g.counts.posted.saturating_sub(g.counts.rejected),
    ),
    (
        "whirl_group_rejected",
        "Messages the group's predicate handed back to their senders.",
        |g| g.counts.rejected,
    ),
    (
        "whirl_group_handled",
        "Messages a handler of the group finished with.",
        |g| g.counts.handled,
    ),
    (
        "whirl_group_dead_lettered",
        "Messages left to terminated processes, given to the dead-letter sink.",
        |g| g.counts.dead_lettered,
    ),
    (
        "whirl_group_spawned",
        "Processes spawned in the group.",
        |g| g.counts.spawned,
    ),
    (
        "whirl_group_terminated",
        "Processes of the group terminated.",
        |g| g.counts.terminated,
    ),
    (
        "whirl_group_slow_turns",
        "Turns that held a worker longer than the group's slow-turn threshold.",
        |g| g.slow_turns,
    ),
];

/// The group gauges, by name, with their help.
pub(super) const GROUP_GAUGES: [(&str, &str, Level); 7] = [
    (
        "whirl_group_queue_length",
        "Messages queued in the group now.",
        |g| g.queue_length as f64,
    ),
    (
        "whirl_group_threads",
        "Worker threads of the group now.",
        |g| g.threads as f64,
    ),
    (
        "whirl_group_threads_min",
        "The fewest worker threads the group may have.",
        |g| g.thread_range.0 as f64,
    ),
    (
        "whirl_group_threads_max",
        "The most worker threads the group may have.",
        |g| g.thread_range.1 as f64,
    ),
    (
        "whirl_group_blocked_workers",
        "Workers of the group in a slow turn now.",
        |g| g.blocked_workers as f64,
    ),
    (
        "whirl_group_budget",
        "Messages a process of the group handles per turn.",
        |g| g.budget as f64,
    ),
    (
        "whirl_group_admission_active",
        "1 while the group's predicate decides admissions, else 0.",
        |g| f64::from(u8::from(g.admission_active)),
    ),
];
