//! Runnable whirl programs: see `src/bin/`.

use whirl::control::MessageCounts;

/// The accounting line the demos print at the end: every posted message is handled, rejected,
/// dead-lettered or still queued.
pub fn accounting_line(counts: &MessageCounts) -> String {
    format!(
        "accounting: posted {} = handled {} + rejected {} + dead letters {} + queued {}",
        counts.posted,
        counts.handled,
        counts.rejected,
        counts.dead_lettered,
        counts.queued()
    )
}
