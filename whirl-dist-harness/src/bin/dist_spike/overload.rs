//! Gate 3: overload loses nothing. The parent posts to the sink at several times its
//! capacity, with a bounce handler; once everything has settled, every post must be accounted
//! for, summed over both nodes: `posts = refused at the sender + bounced back + handled +
//! dead-lettered + in doubt`, with nothing lost and nothing in doubt. The sink's runtime must
//! count as rejected exactly what its node bounced, and the sink's process must have seen the
//! posts in order.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use whirl::request::Sender as _;
use whirl_dist::{DistCounts, Node, NodeConfig, NodeEvent, RemoteAddr, RemotePostError};

use crate::figures::{describe_counts, rate, Row};
use crate::nodes::{free_loopback_port, random_cluster, wait_event, SETUP_DEADLINE};
use crate::settings::Overload;
use crate::sink::{Load, Tally};
use crate::sink_proc::{Bounces, SinkProc, SinkReport};

/// How long the sink and the parent wait for everything sent to settle after the last post.
const SETTLE_DEADLINE: Duration = Duration::from_secs(60);

/// How long the parent waits for more bounces once the sink has taken every frame sent.
const STUCK_AFTER: Duration = Duration::from_secs(3);

/// Posts between two looks at the pacing schedule.
const PACE_BATCH: u64 = 1_000;

pub fn gate3(lease: Duration, overload: &Overload) -> Result<Row, String> {
    let name = "gate 3 (overload): nothing lost over both nodes";
    println!();
    println!(
        "== gate 3 (overload): {} posts at {}x the sink's capacity ({} µs of work per message, \
         QueueLength::max({})) ==",
        overload.posts,
        overload.factor,
        overload.work.as_micros(),
        overload.queue_max
    );
    let cluster = random_cluster()?;
    let port = free_loopback_port()?;
    let mut config = NodeConfig::new(&cluster)
        .insecure_plaintext("the dist_spike gate measures the failure detector on loopback")
        .listen([format!("tcp/127.0.0.1:{port}")])
        .lease(lease);
    if let Some(window) = overload.window {
        config = config.window(window);
    }
    let parent =
        Node::start(config).map_err(|e| format!("parent cannot start its node: {e:#?}"))?;
    let events = parent.events();
    let mut sink = SinkProc::spawn(
        &format!("tcp/127.0.0.1:{port}"),
        &cluster,
        lease,
        overload,
        false,
    )?;
    let outcome = overload_run(&parent, &events, &mut sink, overload);
    sink.finish(Duration::from_secs(10));
    let _ = parent.shutdown();
    let (passed, figures) = match outcome {
        Ok(outcome) => outcome,
        Err(why) => {
            println!("gate 3 (overload): FAIL  {why}");
            (false, why)
        }
    };
    Ok(Row {
        name: name.into(),
        trials: 1,
        passed: u64::from(passed),
        figures,
    })
}

/// Posts, lets everything settle, and checks the accounting; returns the verdict and the
/// figures for the summary.
pub fn overload_run(
    parent: &Node,
    events: &Receiver<NodeEvent>,
    sink: &mut SinkProc,
    overload: &Overload,
) -> Result<(bool, String), String> {
    let pid = sink.ready()?;
    wait_event(
        events,
        Instant::now() + SETUP_DEADLINE,
        |e| *e == NodeEvent::Up(pid.node()),
        |_| {},
    )
    .ok_or("the parent never saw the sink Up")?;

    let bounces = Arc::new(Bounces::default());
    let seen = Arc::clone(&bounces);
    let loads = parent
        .remote::<Load>(pid)
        .on_bounce(move |u| seen.record(u.reason));
    let posted = post_paced(&loads, overload);
    let settled = settle(parent, sink, &bounces)?;
    let returned = bounces.total();
    let by_reason = format!("{:?}", bounces.by_reason.lock());
    // The sink process's own count, asked after the report (so outside the counts above).
    let tally = parent
        .remote::<Tally>(pid)
        .request(Tally)
        .timeout(SETUP_DEADLINE)
        .call()
        .map_err(|e| format!("{e:?}"));
    drop(loads);
    let run = Run {
        overload,
        posted,
        settled,
        returned,
        not_rejected: bounces.not_rejected(),
        by_reason,
        tally,
    };
    Ok(run.verdict())
}

/// What the parent's posts returned, and how long posting took.
struct Posted {
    sent: u64,
    rejected: u64,
    terminated: u64,
    other: u64,
    took: Duration,
}

impl Posted {
    /// Posts refused at the sender.
    fn refused(&self) -> u64 {
        self.rejected + self.terminated + self.other
    }
}

/// Posts `overload.posts` messages, paced at `overload.factor` times the sink's capacity.
fn post_paced(loads: &RemoteAddr<Load>, overload: &Overload) -> Posted {
    let target = overload.capacity.saturating_mul(overload.factor) as f64;
    let (mut sent, mut rejected, mut terminated, mut other) = (0u64, 0u64, 0u64, 0u64);
    let started = Instant::now();
    for seq in 0..overload.posts {
        if seq % PACE_BATCH == 0 {
            let due = started + Duration::from_secs_f64(seq as f64 / target);
            if let Some(ahead) = due.checked_duration_since(Instant::now()) {
                thread::sleep(ahead);
            }
        }
        match loads.post(Load { seq }) {
            Ok(()) => sent += 1,
            Err(RemotePostError::Rejected(_)) => rejected += 1,
            Err(RemotePostError::Terminated(_)) => terminated += 1,
            Err(e) => {
                if other == 0 {
                    eprintln!("  post {seq} failed: {e:?}");
                }
                other += 1;
            }
        }
    }
    let posted = Posted {
        sent,
        rejected,
        terminated,
        other,
        took: started.elapsed(),
    };
    println!(
        "  posted {} in {:.3} s ({:.0}/s, target {target:.0}/s): {sent} sent, {} refused at \
         the sender ({rejected} rejected, {terminated} terminated, {other} other)",
        overload.posts,
        posted.took.as_secs_f64(),
        rate(overload.posts, posted.took),
        posted.refused()
    );
    posted
}

/// The sink's report and the parent's counters once everything settled (or the wait gave
/// up), and how long after the last post.
struct Settled {
    report: SinkReport,
    sender: DistCounts,
    settled: bool,
    took: Duration,
}

/// Settle: every frame sent was received by the sink and delivered or bounced, every bounce
/// came back to the handler, and the sink's runtime is quiescent. Gives up at the deadline,
/// or earlier once the sink has taken everything and no bounce has come back for a while
/// (a bounce the sink counted but never sent would otherwise keep it waiting to the end).
fn settle(parent: &Node, sink: &mut SinkProc, bounces: &Bounces) -> Result<Settled, String> {
    let settle_started = Instant::now();
    let deadline = settle_started + SETTLE_DEADLINE;
    let mut last_returned = (u64::MAX, Instant::now());
    let (report, sender, settled) = loop {
        let report = sink.report(deadline + Duration::from_secs(10))?;
        let sender = parent.counts();
        let sink_done = report.settled && report.received == sender.sent;
        let settled = sink_done
            && report.bounced == sender.returned + report.bounce_overflow
            && sender.returned == bounces.total();
        if sender.returned != last_returned.0 {
            last_returned = (sender.returned, Instant::now());
        }
        let stuck = sink_done && last_returned.1.elapsed() >= STUCK_AFTER;
        if settled || stuck || Instant::now() >= deadline {
            break (report, sender, settled);
        }
        thread::sleep(Duration::from_millis(20));
    };
    Ok(Settled {
        report,
        sender,
        settled,
        took: settle_started.elapsed(),
    })
}

/// Everything a gate 3 run measured, to be judged.
struct Run<'a> {
    overload: &'a Overload,
    posted: Posted,
    settled: Settled,
    /// Bounces the handler saw.
    returned: u64,
    /// Bounces for other reasons than `Rejected`.
    not_rejected: u64,
    by_reason: String,
    /// The sink process's own (handled, out of order, µs busy), or why it could not be asked.
    tally: Result<(u64, u64, u64), String>,
}

impl Run<'_> {
    /// Posts not accounted for over both nodes.
    fn lost(&self) -> i128 {
        let (report, sender) = (&self.settled.report, &self.settled.sender);
        let accounted = i128::from(self.posted.refused())
            + i128::from(self.returned)
            + i128::from(report.handled)
            + i128::from(report.dead_lettered)
            + i128::from(report.bounce_overflow)
            + i128::from(sender.in_doubt);
        i128::from(self.overload.posts) - accounted
    }

    /// What went wrong, and the rate the sink's process handled at (0 without its tally).
    fn problems(&self) -> (Vec<String>, f64) {
        let (report, sender) = (&self.settled.report, &self.settled.sender);
        let (sent, refused, returned) = (self.posted.sent, self.posted.refused(), self.returned);
        let mut problems = Vec::new();
        if !self.settled.settled {
            problems.push(format!(
                "not settled after {} ms (sink settled: {}, sink received {} of {} sent, sink \
                 bounced {}, sender returned {}, bounce handler saw {returned})",
                self.settled.took.as_millis(),
                report.settled,
                report.received,
                sender.sent,
                report.bounced,
                sender.returned
            ));
        }
        let lost = self.lost();
        if lost != 0 {
            problems.push(format!("{lost} posts unaccounted for"));
        }
        if sender.in_doubt != 0 {
            problems.push(format!("{} posts in doubt", sender.in_doubt));
        }
        if report.rejected != report.bounced {
            problems.push(format!(
                "the sink's runtime rejected {} but its node bounced {}",
                report.rejected, report.bounced
            ));
        }
        if report.posted != report.delivered + report.rejected {
            problems.push(format!(
                "the sink's runtime was offered {} but its node delivered {} and the runtime \
                 rejected {}",
                report.posted, report.delivered, report.rejected
            ));
        }
        if self.not_rejected != 0 {
            problems.push(format!(
                "bounces for other reasons than Rejected: {}",
                self.by_reason
            ));
        }
        if sender.sent != sent || sender.refused != refused {
            problems.push(format!(
                "the sender's counters disagree with its posts: sent {} (posts Ok {sent}), refused {} \
                 (posts Err {refused})",
                sender.sent, sender.refused
            ));
        }
        if sender.returned_unrouted != 0 {
            problems.push(format!(
                "{} bounces found no handler",
                sender.returned_unrouted
            ));
        }
        if report.control_overflow + report.malformed + report.from_quarantined != 0 {
            problems.push(format!(
                "sink: control_overflow {}, malformed {}, from_quarantined {}",
                report.control_overflow, report.malformed, report.from_quarantined
            ));
        }
        if refused + returned == 0 {
            problems.push("the sink was never overloaded (nothing refused or bounced)".into());
        }
        let handled_rate = match &self.tally {
            Ok((handled, out_of_order, busy_us)) => {
                if *handled != report.handled {
                    problems.push(format!(
                        "the sink process counted {handled} handled, its runtime {}",
                        report.handled
                    ));
                }
                if *out_of_order != 0 {
                    problems.push(format!("{out_of_order} posts handled out of order"));
                }
                rate(*handled, Duration::from_micros(*busy_us))
            }
            Err(e) => {
                problems.push(format!("the sink's tally could not be asked: {e}"));
                0.0
            }
        };
        (problems, handled_rate)
    }

    /// Prints the run's figures and problems; returns the verdict and the figures for the
    /// summary.
    fn verdict(&self) -> (bool, String) {
        let (report, sender) = (&self.settled.report, &self.settled.sender);
        let (problems, handled_rate) = self.problems();
        let offered_rate = rate(self.overload.posts, self.posted.took);
        let by_reason = &self.by_reason;
        println!(
            "  {} {} ms after the last post; sender: {}",
            if self.settled.settled {
                "settled"
            } else {
                "gave up"
            },
            self.settled.took.as_millis(),
            describe_counts(sender)
        );
        println!(
            "  sink runtime: posted={} handled={} rejected={} dead_lettered={} queued={}; sink node: \
             received={} delivered={} bounced={}; bounces back at the sender: {by_reason}",
            report.posted,
            report.handled,
            report.rejected,
            report.dead_lettered,
            report.queued,
            report.received,
            report.delivered,
            report.bounced
        );
        match &self.tally {
            Ok((handled, out_of_order, busy_us)) => println!(
                "  sink process: handled {handled} in {:.3} s of work ({handled_rate:.0}/s), {out_of_order} \
                 out of order; offered/handled rate = {:.1}x, sent/handled = {:.1}x",
                *busy_us as f64 / 1e6,
                offered_rate / handled_rate.max(1.0),
                rate(self.posted.sent, self.posted.took) / handled_rate.max(1.0)
            ),
            Err(e) => println!("  sink process: no tally ({e})"),
        }
        for problem in &problems {
            println!("  problem: {problem}");
        }
        let passed = problems.is_empty();
        let figures = format!(
            "posts={} refused_at_sender={} bounced={} handled={} dead_lettered={} \
             in_doubt={} lost={} offered_rate={offered_rate:.0}/s handled_rate={handled_rate:.0}/s",
            self.overload.posts,
            self.posted.refused(),
            self.returned,
            report.handled,
            report.dead_lettered + report.bounce_overflow,
            sender.in_doubt,
            self.lost()
        );
        println!(
            "gate 3 (overload): {figures} {}",
            if passed { "PASS" } else { "FAIL" }
        );
        (passed, figures)
    }
}
