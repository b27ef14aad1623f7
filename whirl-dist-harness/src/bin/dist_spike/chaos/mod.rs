//! Gate 4: chaos under traffic. The parent posts to the sink at its capacity and, after about
//! a third of the posts, cuts the link (a partition through the proxy, or SIGKILL of the sink)
//! while the traffic flows; every post must still be accounted for (see the binary's
//! documentation for the identities checked in each mode).

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use whirl::request::Sender as _;
use whirl_dist::{DistCounts, Node, NodeConfig, NodeEvent, NodeId, RemoteAddr, RemotePostError};

use crate::child::{parse_child_line, ChildLine};
use crate::figures::{describe, span, Row};
use crate::nodes::{free_loopback_port, random_cluster, wait_event, SETUP_DEADLINE};
use crate::proxy::{PartitionMode, Proxy};
use crate::settings::{Chaos, ChaosMode, Overload};
use crate::sink::Load;
use crate::sink_proc::{Bounces, SinkProc};

mod judge;

use judge::{Downs, PostOutcomes, Seen, Traffic};

/// Posts between two looks at gate 4's pacing schedule (finer than gate 3's: the parent looks
/// for the sink's Down between two posts).
const CHAOS_PACE_BATCH: u64 = 100;

/// How long the parent's counters must stay unchanged to count as at rest.
const REST_FOR: Duration = Duration::from_millis(100);

/// One gate 4 trial's figures.
pub struct ChaosOutcome {
    passed: bool,
    /// From the cut to the parent's Down.
    parent_down: Duration,
    /// From the cut to the sink's Down (partition only: a killed sink sees nothing).
    sink_down: Option<Duration>,
    in_doubt: u64,
    /// Frames sent that never reached the sink (partition only: unknown after a kill).
    never_arrived: Option<i128>,
    /// Posts unaccounted for: over both nodes (partition), at the parent (kill).
    lost: i128,
}

pub fn gate4(
    lease: Duration,
    overload: &Overload,
    chaos: &Chaos,
    mode: ChaosMode,
) -> Result<Row, String> {
    let name = match mode {
        ChaosMode::Partition(PartitionMode::Drop) => "gate 4 (drop under traffic): nothing lost",
        ChaosMode::Partition(PartitionMode::Blackhole) => {
            "gate 4 (blackhole under traffic): nothing lost"
        }
        ChaosMode::Kill => "gate 4 (kill -9 under traffic): parent loses nothing",
    };
    println!();
    println!(
        "== {name}: {} trials of {} posts paced at {}/s ({} µs of work per message, \
         QueueLength::max({})), cut after about post {} ==",
        chaos.trials,
        chaos.posts,
        overload.capacity,
        overload.work.as_micros(),
        overload.queue_max,
        chaos.posts / 3
    );
    let gate = Gate4 {
        lease,
        overload,
        chaos,
        mode,
    };
    let started = Instant::now();
    let mut passed = 0;
    let (mut parent_downs, mut sink_downs) = (Vec::new(), Vec::new());
    let (mut in_doubt, mut never_arrived, mut lost) = (Vec::new(), Vec::new(), Vec::new());
    for trial in 1..=chaos.trials {
        match gate.trial(trial) {
            Ok(outcome) => {
                passed += u64::from(outcome.passed);
                parent_downs.push(outcome.parent_down);
                sink_downs.extend(outcome.sink_down);
                in_doubt.push(outcome.in_doubt);
                never_arrived.extend(outcome.never_arrived);
                lost.push(outcome.lost);
            }
            Err(why) => println!("  trial {trial}: FAIL  {why}"),
        }
    }
    let figures = match mode {
        ChaosMode::Partition(_) => format!(
            "lost {}; in doubt {}, never arrived {}; parent Down: {}; sink Down: {}",
            span(&lost),
            span(&in_doubt),
            span(&never_arrived),
            describe(&mut parent_downs),
            describe(&mut sink_downs)
        ),
        ChaosMode::Kill => format!(
            "lost at the parent {}; in doubt {}; parent Down: {}",
            span(&lost),
            span(&in_doubt),
            describe(&mut parent_downs)
        ),
    };
    println!(
        "  {} trials in {:.1} s: {passed} passed; {figures}",
        chaos.trials,
        started.elapsed().as_secs_f64()
    );
    Ok(Row {
        name: name.into(),
        trials: chaos.trials,
        passed,
        figures,
    })
}

/// One mode of gate 4.
pub struct Gate4<'a> {
    lease: Duration,
    overload: &'a Overload,
    chaos: &'a Chaos,
    mode: ChaosMode,
}

impl Gate4<'_> {
    /// A trial with its own parent node, proxy (partition) and sink; all stopped at the end,
    /// whatever happened.
    fn trial(&self, trial: u64) -> Result<ChaosOutcome, String> {
        let cluster = random_cluster()?;
        let port = free_loopback_port()?;
        let mut config = NodeConfig::new(&cluster)
            .insecure_plaintext("the dist_spike gate measures the failure detector on loopback")
            .listen([format!("tcp/127.0.0.1:{port}")])
            .lease(self.lease);
        if let Some(window) = self.overload.window {
            config = config.window(window);
        }
        let parent =
            Node::start(config).map_err(|e| format!("parent cannot start its node: {e:#?}"))?;
        let events = parent.events();
        let proxy = match self.mode {
            ChaosMode::Partition(_) => Some(Proxy::start(port)?),
            ChaosMode::Kill => None,
        };
        let connect = format!("tcp/127.0.0.1:{}", proxy.as_ref().map_or(port, |p| p.port));
        let outcome = SinkProc::spawn(&connect, &cluster, self.lease, self.overload, true)
            .and_then(|mut sink| {
                let outcome = self.run(trial, &parent, &events, &mut sink, proxy.as_ref());
                // Kills the sink if it does not shut down (a killed one has exited already).
                sink.finish(Duration::from_secs(5));
                outcome
            });
        if let Some(proxy) = &proxy {
            proxy.stop();
        }
        let _ = parent.shutdown();
        outcome
    }

    /// Posts, cuts, waits for Down and for rest, and checks the accounting.
    fn run(
        &self,
        trial: u64,
        parent: &Node,
        events: &Receiver<NodeEvent>,
        sink: &mut SinkProc,
        proxy: Option<&Proxy>,
    ) -> Result<ChaosOutcome, String> {
        let pid = sink.ready()?;
        let sink_id = pid.node();
        wait_event(
            events,
            Instant::now() + SETUP_DEADLINE,
            |e| *e == NodeEvent::Up(sink_id),
            |_| {},
        )
        .ok_or("the parent never saw the sink Up")?;

        // Post at the sink's capacity; cut after a third. Once the parent has seen the sink
        // Down, it posts the rest unpaced: each must be refused Terminated at once.
        let bounces = Arc::new(Bounces::default());
        let seen = Arc::clone(&bounces);
        let loads = parent
            .remote::<Load>(pid)
            .on_bounce(move |u| seen.record(u.reason));
        let mut traffic = self.post_and_cut(&loads, events, sink, proxy, sink_id)?;
        let downs = self.wait_downs(events, sink, &mut traffic, sink_id, parent.id())?;
        let (sender, at_rest) = rest(parent, &bounces);
        let returned = bounces.total();
        let by_reason = format!("{:?}", bounces.by_reason.lock());
        drop(loads);

        // The sink: its report once at rest (partition), or its last PROGRESS (kill).
        let mut problems = Vec::new();
        let report = match self.mode {
            ChaosMode::Partition(_) => {
                let report = sink.report(Instant::now() + Duration::from_secs(15))?;
                // The process's own count, asked after the report (so outside its counts).
                let tally = sink.tally(Instant::now() + Duration::from_secs(10));
                Some((report, tally))
            }
            ChaosMode::Kill => {
                let _ = sink.child.wait();
                if !sink.drain(Instant::now() + Duration::from_secs(5)) {
                    problems.push("the killed sink's stdout did not end within 5 s".to_string());
                }
                None
            }
        };
        let seen = Seen {
            trial,
            posts: self.chaos.posts,
            window: self
                .overload
                .window
                .unwrap_or(NodeConfig::DEFAULT_WINDOW)
                .max(1) as u64,
            traffic,
            downs,
            sender,
            at_rest,
            returned,
            not_rejected: bounces.not_rejected(),
            by_reason,
            progress: sink.progress(),
        };
        seen.common_problems(&mut problems);
        seen.print(self.mode);
        let (lost, never_arrived) = match &report {
            Some((report, tally)) => {
                let (lost, never_arrived) = seen.judge_partition(report, tally, &mut problems);
                (lost, Some(never_arrived))
            }
            None => (seen.judge_kill(&mut problems), None),
        };
        Ok(ChaosOutcome {
            passed: problems.is_empty(),
            parent_down: seen.downs.parent_down,
            sink_down: seen.downs.sink_down,
            in_doubt: seen.sender.in_doubt,
            never_arrived,
            lost,
        })
    }

    /// Posts at the sink's capacity and cuts the link after about a third of the posts;
    /// once the parent has seen the sink Down, posts the rest unpaced.
    fn post_and_cut(
        &self,
        loads: &RemoteAddr<Load>,
        events: &Receiver<NodeEvent>,
        sink: &mut SinkProc,
        proxy: Option<&Proxy>,
        sink_id: NodeId,
    ) -> Result<Traffic, String> {
        let posts = self.chaos.posts;
        // About a third, at a random point of a pacing batch (not always right after a burst).
        let cut_after =
            (posts / 3 + getrandom::u64().unwrap_or(0) % CHAOS_PACE_BATCH).min(posts - 1);
        let rate = self.overload.capacity as f64;
        let mut out = PostOutcomes::default();
        let mut cut_at = None;
        let mut down: Option<(u64, Instant)> = None;
        let mut ups_again = 0u64;
        let started = Instant::now();
        for seq in 0..posts {
            if seq == cut_after {
                cut_at = Some(Instant::now());
                match (self.mode, proxy) {
                    (ChaosMode::Partition(mode), Some(proxy)) => proxy.partition(mode),
                    (ChaosMode::Partition(_), None) => return Err("no proxy to cut".into()),
                    (ChaosMode::Kill, _) => sink
                        .child
                        .kill()
                        .map_err(|e| format!("kill -9 of the sink: {e}"))?,
                }
            }
            if down.is_none() {
                if seq % CHAOS_PACE_BATCH == 0 {
                    let due = started + Duration::from_secs_f64(seq as f64 / rate);
                    if let Some(ahead) = due.checked_duration_since(Instant::now()) {
                        thread::sleep(ahead);
                    }
                }
                while let Ok(event) = events.try_recv() {
                    match event {
                        NodeEvent::Down { node, .. } if node == sink_id => {
                            down.get_or_insert((seq, Instant::now()));
                        }
                        NodeEvent::Up(node) if node == sink_id => ups_again += 1,
                        _ => {}
                    }
                }
            }
            let result = loads.post(Load { seq });
            if down.is_some() && !matches!(result, Err(RemotePostError::Terminated(_))) {
                out.after_down_not_terminated += 1;
            }
            match result {
                Ok(()) => out.ok += 1,
                Err(RemotePostError::Rejected(_)) => out.rejected += 1,
                Err(RemotePostError::Terminated(_)) => out.terminated += 1,
                Err(e) => {
                    if out.other == 0 {
                        eprintln!("  post {seq} failed: {e:?}");
                    }
                    out.other += 1;
                }
            }
        }
        Ok(Traffic {
            posting: started.elapsed(),
            cut_at: cut_at.ok_or("the posts ended before the cut")?,
            out,
            cut_after,
            down,
            ups_again,
        })
    }

    /// Waits until both sides have seen Down (a killed sink sees nothing).
    fn wait_downs(
        &self,
        events: &Receiver<NodeEvent>,
        sink: &SinkProc,
        traffic: &mut Traffic,
        sink_id: NodeId,
        parent_id: NodeId,
    ) -> Result<Downs, String> {
        let cut_at = traffic.cut_at;
        let detect = cut_at + self.lease * 3 + Duration::from_secs(10);
        let down_at = match traffic.down {
            Some((_, at)) => at,
            None => wait_event(
                events,
                detect,
                |e| matches!(e, NodeEvent::Down { node, .. } if *node == sink_id),
                |e| {
                    if e == NodeEvent::Up(sink_id) {
                        traffic.ups_again += 1;
                    }
                },
            )
            .ok_or_else(|| {
                format!(
                    "the parent did not see the sink Down within {} ms of the cut",
                    detect.duration_since(cut_at).as_millis()
                )
            })?,
        };
        let parent_down = down_at.saturating_duration_since(cut_at);
        let mut sink_ups_again = 0u64;
        let sink_down = match self.mode {
            ChaosMode::Kill => None,
            ChaosMode::Partition(_) => {
                let at = loop {
                    let (at, line) = sink.next_line_at(detect, "EVENT").map_err(|e| {
                        format!("{e} (waiting for the sink to see the parent Down)")
                    })?;
                    match parse_child_line(&line) {
                        ChildLine::Down(id) if id == parent_id => break at,
                        ChildLine::Up(id) if id == parent_id => sink_ups_again += 1,
                        _ => eprintln!("  sink said: {line}"),
                    }
                };
                Some(at.saturating_duration_since(cut_at))
            }
        };
        Ok(Downs {
            parent_down,
            sink_down,
            sink_ups_again,
        })
    }
}

/// The parent at rest: its counters unchanged for a while, every bounce it counted handed to
/// the handler. Returns its counters, and whether they came to rest within 10 s.
fn rest(parent: &Node, bounces: &Bounces) -> (DistCounts, bool) {
    let rest_deadline = Instant::now() + Duration::from_secs(10);
    let mut sender = parent.counts();
    let mut since = Instant::now();
    let at_rest = loop {
        thread::sleep(Duration::from_millis(10));
        let now = parent.counts();
        if now != sender {
            sender = now;
            since = Instant::now();
        }
        if since.elapsed() >= REST_FOR && sender.returned == bounces.total() {
            break true;
        }
        if Instant::now() >= rest_deadline {
            break false;
        }
    };
    (sender, at_rest)
}
