//! How a gate 4 trial is judged: what the parent's posts returned and when each side saw the
//! cut, what the parent saw once at rest, and the identities that must hold, at the parent
//! whatever the cut, over both nodes after a partition, at the parent alone after a kill.

use std::time::{Duration, Instant};

use whirl_dist::DistCounts;

use crate::figures::{describe_counts, ms};
use crate::proxy::PartitionMode;
use crate::settings::ChaosMode;
use crate::sink_proc::{Progress, SinkReport};

/// What the parent's posts returned.
#[derive(Default)]
pub struct PostOutcomes {
    pub ok: u64,
    pub rejected: u64,
    pub terminated: u64,
    pub other: u64,
    /// Posts made once the parent had seen the sink Down that were not refused Terminated.
    pub after_down_not_terminated: u64,
}

impl PostOutcomes {
    pub fn refused(&self) -> u64 {
        self.rejected + self.terminated + self.other
    }
}

/// The posts of a trial and the cut among them.
pub struct Traffic {
    pub out: PostOutcomes,
    /// The post the cut came before.
    pub cut_after: u64,
    pub cut_at: Instant,
    /// The post before which the parent saw the sink Down, and when, if during the posts.
    pub down: Option<(u64, Instant)>,
    /// How many times the parent saw the sink Up again.
    pub ups_again: u64,
    pub posting: Duration,
}

/// When each side saw the other Down, from the cut.
pub struct Downs {
    pub parent_down: Duration,
    /// Partition only: a killed sink sees nothing.
    pub sink_down: Option<Duration>,
    /// How many times the sink saw the parent Up again.
    pub sink_ups_again: u64,
}

/// What a trial saw at the parent, once at rest, and the sink's last `PROGRESS`.
pub struct Seen {
    pub trial: u64,
    pub posts: u64,
    /// The credit window.
    pub window: u64,
    pub traffic: Traffic,
    pub downs: Downs,
    pub sender: DistCounts,
    pub at_rest: bool,
    /// Bounces the handler saw.
    pub returned: u64,
    /// Bounces for other reasons than `Rejected`.
    pub not_rejected: u64,
    pub by_reason: String,
    pub progress: Progress,
}

impl Seen {
    /// What must hold whatever the cut.
    pub fn common_problems(&self, problems: &mut Vec<String>) {
        let (sender, out, progress) = (&self.sender, &self.traffic.out, &self.progress);
        let (returned, window) = (self.returned, self.window);
        if !self.at_rest {
            problems.push(format!(
                "the parent's counters were not at rest 10 s after Down (returned {}, the \
                 bounce handler saw {returned})",
                sender.returned
            ));
        }
        if let Some((seq, _)) = self.traffic.down {
            if seq < self.traffic.cut_after {
                problems.push(format!(
                    "the parent saw the sink Down at post {seq}, before the cut"
                ));
            }
        }
        let (ups_again, sink_ups_again) = (self.traffic.ups_again, self.downs.sink_ups_again);
        if ups_again + sink_ups_again > 0 {
            problems.push(format!(
                "Up again after the cut: the sink at the parent {ups_again} times, the parent at \
                 the sink {sink_ups_again} times"
            ));
        }
        if out.after_down_not_terminated > 0 {
            problems.push(format!(
                "{} posts made after the parent saw the sink Down were not refused Terminated",
                out.after_down_not_terminated
            ));
        }
        if sender.sent != out.ok || sender.refused != out.refused() {
            problems.push(format!(
                "the sender's counters disagree with its posts: sent {} (posts Ok {}), refused {} \
                 (posts Err {})",
                sender.sent,
                out.ok,
                sender.refused,
                out.refused()
            ));
        }
        if sender.in_doubt > sender.sent || sender.in_doubt > window {
            problems.push(format!(
                "{} in doubt, more than the {} sent or the credit window of {window}",
                sender.in_doubt, sender.sent
            ));
        }
        if sender.returned_unrouted != 0 {
            problems.push(format!(
                "{} bounces found no handler",
                sender.returned_unrouted
            ));
        }
        if self.not_rejected != 0 {
            problems.push(format!(
                "bounces for other reasons than Rejected: {}",
                self.by_reason
            ));
        }
        if progress.lines == 0 {
            problems.push("the sink printed no PROGRESS line".into());
        }
        if progress.out_of_order != 0 {
            problems.push(format!(
                "the sink printed {} OUT_OF_ORDER lines (posts handled out of order)",
                progress.out_of_order
            ));
        }
        if progress.handled > progress.received || progress.received > sender.sent {
            problems.push(format!(
                "the sink's last PROGRESS line has handled {} and received {}, not within the \
                 {} sent",
                progress.handled, progress.received, sender.sent
            ));
        }
    }

    /// The trial's line: the cut, the Downs, the posts and the parent's counters.
    pub fn print(&self, mode: ChaosMode) {
        let (trial, posts, out) = (self.trial, self.posts, &self.traffic.out);
        let cut_after = self.traffic.cut_after;
        let cut = match mode {
            ChaosMode::Partition(PartitionMode::Drop) => "proxy cut (drop)",
            ChaosMode::Partition(PartitionMode::Blackhole) => "proxy cut (blackhole)",
            ChaosMode::Kill => "sink killed (SIGKILL)",
        };
        println!(
            "  trial {trial}: {cut} after post {cut_after}; Down seen by the parent after {} ms \
             ({}){}; {posts} posts in {:.3} s: {} Ok, {} rejected, {} terminated, {} other; \
             sender: {}",
            ms(self.downs.parent_down),
            match self.traffic.down {
                Some((seq, _)) => format!("at post {seq}"),
                None => "after the last post".into(),
            },
            match self.downs.sink_down {
                Some(d) => format!(", by the sink after {} ms", ms(d)),
                None => String::new(),
            },
            self.traffic.posting.as_secs_f64(),
            out.ok,
            out.rejected,
            out.terminated,
            out.other,
            describe_counts(&self.sender)
        );
    }

    /// A partition: the sink lives on, so the accounting is exact over both nodes. Returns
    /// the posts lost and the frames that never arrived.
    pub fn judge_partition(
        &self,
        report: &SinkReport,
        tally: &Result<(u64, u64, u64), String>,
        problems: &mut Vec<String>,
    ) -> (i128, i128) {
        let (trial, returned, progress) = (self.trial, self.returned, &self.progress);
        let posted = i128::from(self.posts);
        let refused = i128::from(self.traffic.out.refused());
        let sent = i128::from(self.sender.sent);
        let back = i128::from(returned);
        let in_doubt = i128::from(self.sender.in_doubt);
        let handled = i128::from(report.handled);
        let dead = i128::from(report.dead_lettered);
        let not_returned = i128::from(report.bounced) - back;
        let never_arrived = sent - i128::from(report.received);
        let lost = posted - (refused + back + handled + dead + not_returned + never_arrived);
        if !report.settled {
            problems.push("the sink's counters did not come to rest within 5 s".into());
        }
        if never_arrived < 0 {
            problems.push(format!(
                "the sink received {} frames, more than the {sent} sent",
                report.received
            ));
        }
        if never_arrived > in_doubt {
            problems.push(format!(
                "{never_arrived} frames never arrived, more than the {in_doubt} in doubt"
            ));
        }
        if not_returned < 0 {
            problems.push(format!(
                "the parent got {returned} bounces back, the sink bounced {}",
                report.bounced
            ));
        }
        sink_problems(report, problems);
        let process = tally_problems(report, tally, problems);
        if progress.handled > report.handled {
            problems.push(format!(
                "the sink's last PROGRESS line has handled {}, its final report {}",
                progress.handled, report.handled
            ));
        }
        if report.control_overflow + report.malformed + report.from_quarantined != 0 {
            problems.push(format!(
                "sink: control_overflow {}, malformed {}, from_quarantined {}",
                report.control_overflow, report.malformed, report.from_quarantined
            ));
        }
        if lost != 0 {
            problems.push(format!("{lost} posts unaccounted for over both nodes"));
        }
        println!(
            "    sink runtime: posted={} handled={} rejected={} dead_lettered={} \
             queued={}; sink node: received={} delivered={} bounced={} \
             bounce_overflow={} from_unknown={}; sink process: {process} (last of {} \
             PROGRESS lines: handled={}); bounces back at the sender: {}",
            report.posted,
            report.handled,
            report.rejected,
            report.dead_lettered,
            report.queued,
            report.received,
            report.delivered,
            report.bounced,
            report.bounce_overflow,
            report.from_unknown,
            progress.lines,
            progress.handled,
            self.by_reason
        );
        for problem in problems.iter() {
            println!("    problem: {problem}");
        }
        println!(
            "  trial {trial}: {}  posts={posted} = refused_at_sender={refused} + \
             returned={back} + handled={handled} + dead_lettered={dead} + \
             bounced_not_returned={not_returned} + never_arrived={never_arrived}, \
             lost={lost}; never_arrived={never_arrived} <= in_doubt={in_doubt} \
             (arrived, not acknowledged: {})",
            if problems.is_empty() { "PASS" } else { "FAIL" },
            in_doubt - never_arrived
        );
        (lost, never_arrived)
    }

    /// A kill: the sink's counters died with it, so the accounting is the parent's own: every
    /// post refused, returned, acknowledged, or in doubt. Returns the posts lost at the parent.
    pub fn judge_kill(&self, problems: &mut Vec<String>) -> i128 {
        let (trial, progress) = (self.trial, &self.progress);
        let posted = i128::from(self.posts);
        let refused = i128::from(self.traffic.out.refused());
        let sent = i128::from(self.sender.sent);
        let back = i128::from(self.returned);
        let in_doubt = i128::from(self.sender.in_doubt);
        let acknowledged = sent - in_doubt;
        let acked_not_returned = acknowledged - back;
        let lost = posted - (refused + back + acked_not_returned + in_doubt);
        if lost != 0 {
            problems.push(format!("{lost} posts unaccounted for at the parent"));
        }
        println!(
            "    sink before the kill: last of {} PROGRESS lines: handled={} received={}, \
             {} OUT_OF_ORDER lines; what it handled after that line is unknown (at most \
             {} more); bounces back at the sender: {}",
            progress.lines,
            progress.handled,
            progress.received,
            progress.out_of_order,
            sent - i128::from(progress.handled),
            self.by_reason
        );
        for problem in problems.iter() {
            println!("    problem: {problem}");
        }
        println!(
            "  trial {trial}: {}  posts={posted} = refused_at_sender={refused} + \
             returned={back} + acked_not_returned={acked_not_returned} + \
             in_doubt={in_doubt}, lost_at_parent={lost}; sent={sent} = \
             acknowledged={acknowledged} + in_doubt={in_doubt}; last PROGRESS \
             handled={} <= received={} <= sent={sent}",
            if problems.is_empty() { "PASS" } else { "FAIL" },
            progress.handled,
            progress.received
        );
        lost
    }
}

/// The sink's own identities, from its final report.
fn sink_problems(report: &SinkReport, problems: &mut Vec<String>) {
    if report.received != report.delivered + report.bounced {
        problems.push(format!(
            "the sink received {} frames but delivered {} and bounced {}",
            report.received, report.delivered, report.bounced
        ));
    }
    if report.delivered != report.handled + report.dead_lettered + report.queued {
        problems.push(format!(
            "the sink's node delivered {} but its runtime handled {}, dead-lettered \
             {} and has {} queued",
            report.delivered, report.handled, report.dead_lettered, report.queued
        ));
    }
    if report.queued != 0 {
        problems.push(format!("{} still queued at the sink", report.queued));
    }
    if report.rejected != report.bounced {
        problems.push(format!(
            "the sink's runtime rejected {} but its node bounced {}",
            report.rejected, report.bounced
        ));
    }
    if report.posted != report.delivered + report.rejected {
        problems.push(format!(
            "the sink's runtime was offered {} but its node delivered {} and the \
             runtime rejected {}",
            report.posted, report.delivered, report.rejected
        ));
    }
}

/// Checks the sink process's own count against its runtime's; returns how to print it.
fn tally_problems(
    report: &SinkReport,
    tally: &Result<(u64, u64, u64), String>,
    problems: &mut Vec<String>,
) -> String {
    match tally {
        Ok((handled, out_of_order, _)) => {
            if *handled != report.handled {
                problems.push(format!(
                    "the sink process counted {handled} handled, its runtime {}",
                    report.handled
                ));
            }
            if *out_of_order != 0 {
                problems.push(format!("{out_of_order} posts handled out of order"));
            }
            format!("handled={handled} out_of_order={out_of_order}")
        }
        Err(e) => {
            problems.push(format!("the sink's tally could not be asked: {e}"));
            "no tally".into()
        }
    }
}
