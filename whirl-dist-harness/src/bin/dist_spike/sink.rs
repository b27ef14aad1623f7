//! The sink child of gates 3 and 4 (`--child-sink`): a whirl runtime with one group of one
//! thread behind `QueueLength::max(K)`, and one exported process that spins a fixed time per
//! message, counts, and checks that each sender's posts arrive in order.
//!
//! It prints `READY <node-hex> <local-id>` once the parent is Up, answers each `REPORT` line
//! on its stdin with one `REPORT key=value...` line (its runtime's and its node's counters,
//! once they are at rest), each `TALLY` line with one `TALLY handled=N out_of_order=N
//! busy_us=N` line (its process's own count, asked of it locally, not over the network),
//! prints `OUT_OF_ORDER seq=N after=N` for the first posts its process sees out of order, and
//! shuts down when its stdin closes. With `--chaos` (gate 4) it also prints its node's events
//! and, every [`PROGRESS_EVERY`], `PROGRESS handled=N received=N`.

use std::io::BufRead;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use whirl::admission::QueueLength;
use whirl::prelude::{process, Message, Runtime};
use whirl::request::Sender as _;
use whirl_dist::{Node, NodeConfig, NodeEvent, Remote, Request};

use crate::nodes::{wait_event, SETUP_DEADLINE};
use crate::settings::{flag_number, flag_value, flag_window};

/// How often the sink prints `PROGRESS` in gate 4.
pub const PROGRESS_EVERY: Duration = Duration::from_millis(10);

/// How many `OUT_OF_ORDER` lines the sink prints at most.
pub const OUT_OF_ORDER_LINES: u64 = 10;

/// What gate 3 posts.
#[derive(Message, Serialize, Deserialize, Debug)]
pub struct Load {
    pub seq: u64,
}

impl Remote for Load {
    const TAG: &'static str = "dist_spike.Load/1";
}

/// Asks the sink what it counted itself: (handled, out of order, microseconds from the first
/// message handled to the end of the last).
#[derive(Message, Serialize, Deserialize, Debug)]
pub struct Tally;

impl Remote for Tally {
    const TAG: &'static str = "dist_spike.Tally/1";
}

impl Request for Tally {
    type Reply = (u64, u64, u64);
}

/// The sink's process: spins `work` per message, counts, and checks the sender's order.
#[process]
pub struct Sink {
    work: Duration,
    handled: u64,
    out_of_order: u64,
    last_seq: Option<u64>,
    first: Option<Instant>,
    last: Option<Instant>,
}

#[process]
impl Sink {
    #[handle]
    fn load(&mut self, Load { seq }: Load) {
        let started = Instant::now();
        self.first.get_or_insert(started);
        let until = started + self.work;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
        if let Some(last) = self.last_seq.filter(|&last| seq <= last) {
            self.out_of_order += 1;
            // Said at once (gate 4 reads it even from a sink killed later); the first few.
            if self.out_of_order <= OUT_OF_ORDER_LINES {
                println!("OUT_OF_ORDER seq={seq} after={last}");
            }
        }
        self.last_seq = Some(seq);
        self.handled += 1;
        self.last = Some(Instant::now());
    }

    #[handle]
    fn tally(&mut self, _: Tally) -> (u64, u64, u64) {
        let busy = match (self.first, self.last) {
            (Some(first), Some(last)) => {
                u64::try_from(last.duration_since(first).as_micros()).unwrap_or(u64::MAX)
            }
            _ => 0,
        };
        (self.handled, self.out_of_order, busy)
    }
}

pub fn sink_main(args: &[String]) -> Result<ExitCode, String> {
    let connect = flag_value(args, "--connect").ok_or("--child-sink needs --connect")?;
    let cluster = flag_value(args, "--cluster").ok_or("--child-sink needs --cluster")?;
    let lease = Duration::from_millis(flag_number(args, "--lease-ms", 1000)?);
    let work = Duration::from_micros(flag_number(args, "--work-us", 10)?);
    let queue_max = flag_number(args, "--queue-max", 1_000)?;
    let chaos = args.iter().any(|a| a == "--chaos");
    let runtime = Runtime::builder()
        .threads(1)
        .build()
        .map_err(|e| format!("sink cannot start its runtime: {e}"))?;
    let group = runtime
        .group("sink")
        .threads(1)
        .predicate(QueueLength::max(queue_max))
        .build()
        .map_err(|e| format!("sink cannot build its group: {e}"))?;
    let sink = runtime.spawner().group(&group).spawn(Sink {
        work,
        handled: 0,
        out_of_order: 0,
        last_seq: None,
        first: None,
        last: None,
    });
    let mut config = NodeConfig::new(cluster)
        .insecure_plaintext("the dist_spike gate measures the failure detector on loopback")
        .listen(Vec::<String>::new())
        .connect([connect])
        .lease(lease)
        .reconnect_max(Duration::from_millis(500));
    if let Some(window) = flag_window(args)? {
        config = config.window(window);
    }
    let node = Node::start(config).map_err(|e| format!("sink cannot start its node: {e}"))?;
    let pid = node
        .export(&sink)
        .accept::<Load>()
        .answer::<Tally>()
        .build()
        .map_err(|e| format!("sink cannot export its process: {e}"))?;
    // READY only once the parent is Up here: its mailbox subscriber (declared before its
    // token) is then known, so the first acknowledgements and bounces have a route.
    let events = node.events();
    wait_event(
        &events,
        Instant::now() + SETUP_DEADLINE,
        |e| matches!(e, NodeEvent::Up(_)),
        |_| {},
    )
    .ok_or("the sink never saw the parent Up")?;
    if chaos {
        thread::spawn(move || {
            for event in events {
                match event {
                    NodeEvent::Up(id) => println!("EVENT UP {id}"),
                    NodeEvent::Down { node, .. } => println!("EVENT DOWN {node}"),
                    NodeEvent::ResurrectionRefused(id) => println!("EVENT REFUSED {id}"),
                    other => println!("EVENT OTHER {other:?}"),
                }
            }
        });
    } else {
        drop(events);
    }
    println!("READY {} {}", pid.node(), pid.local());
    let stop = AtomicBool::new(false);
    thread::scope(|scope| {
        if chaos {
            // The runtime's count first, then the node's: `handled <= received` in every line.
            // Progress stops at the first `REPORT`: a line read after it could count the
            // `TALLY` ask that follows it, and the parent compares the last line with the
            // report. A reading taken before the stop and printed after it is still older
            // than the report.
            scope.spawn(|| loop {
                let handled = runtime.counts().handled;
                let received = node.counts().received;
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                println!("PROGRESS handled={handled} received={received}");
                thread::sleep(PROGRESS_EVERY);
            });
        }
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            match line.trim() {
                "REPORT" => {
                    stop.store(true, Ordering::SeqCst);
                    println!("{}", sink_report(&node, &runtime));
                }
                // Asked of the process here, not over the network (the link may be cut); the
                // ask is counted by the runtime, so after the last REPORT.
                "TALLY" => match sink.request(Tally).timeout(Duration::from_secs(5)).call() {
                    Ok((handled, out_of_order, busy_us)) => println!(
                        "TALLY handled={handled} out_of_order={out_of_order} busy_us={busy_us}"
                    ),
                    Err(e) => println!("TALLY failed: {e:?}"),
                },
                _ => {}
            }
        }
        stop.store(true, Ordering::SeqCst);
    });
    let shutdown = node.shutdown();
    let _report = runtime.shutdown_timeout(Duration::from_secs(5));
    println!("BYE");
    match shutdown {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => Err(format!("sink shutdown: {e}")),
    }
}

/// One `REPORT` line: the runtime's and the node's counters, read once they are at rest (the
/// node's counters unchanged around a reading of the runtime's, the runtime quiescent, every
/// frame received delivered or bounced), or after 5 s with `settled=0`.
pub fn sink_report(node: &Node, runtime: &Runtime) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let before = node.counts();
        let rt = runtime.counts();
        let dist = node.counts();
        let settled =
            before == dist && rt.is_quiescent() && dist.received == dist.delivered + dist.bounced;
        if settled || Instant::now() >= deadline {
            return format!(
                "REPORT settled={} posted={} handled={} rejected={} dead_lettered={} queued={} \
                 received={} delivered={} bounced={} malformed={} from_quarantined={} \
                 from_unknown={} control_overflow={} bounce_overflow={}",
                u8::from(settled),
                rt.posted,
                rt.handled,
                rt.rejected,
                rt.dead_lettered,
                rt.queued(),
                dist.received,
                dist.delivered,
                dist.bounced,
                dist.malformed,
                dist.from_quarantined,
                dist.from_unknown,
                dist.control_overflow,
                dist.bounce_overflow
            );
        }
        thread::sleep(Duration::from_millis(2));
    }
}
