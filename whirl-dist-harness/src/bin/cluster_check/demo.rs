//! The parent: node A, the two children, and what the steps share; its first step (the
//! cluster up) and its last (everything stopped, reported and summed up).

use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use whirl::prelude::*;
use whirl_dist::{Node, NodeEvent, NodeId, Pid, RemoteExit};

use crate::account::{endpoint, start_account, start_node, Account};
use crate::accounting::{node_report, Ledger, NodeReport};
use crate::child_proc::ChildProc;
use crate::flow::{FlowReport, Load, Target};
use crate::settings::{Args, SETUP_DEADLINE};
use crate::util::{free_ports, from_json, short};

/// Node A (this process), the two children, and what the steps share.
pub struct Demo {
    pub started: Instant,
    pub rate: u64,
    pub phase: Duration,
    pub node: Arc<Node>,
    pub runtime: Runtime,
    /// A's account (kept so its address outlives every step).
    pub a_account: (Addr<Account>, Pid),
    /// A's membership events, with the time each arrived.
    pub events: Receiver<(Instant, NodeEvent)>,
    pub b: ChildProc,
    pub c: ChildProc,
    /// A's running flows.
    pub loads: Vec<Load>,
    /// Flows that ended, with their final counts (A's and C's).
    pub flows: Vec<FlowReport>,
    /// A's flows stopped before the kill, kept to post to a dead node, with their settled
    /// balances.
    pub stopped: Vec<(Target, Option<i64>)>,
    /// Reports of nodes that are gone (B's, from just before its kill).
    pub gone: Vec<NodeReport>,
    /// Fires when A's monitor of B's account does.
    pub b_monitor: Receiver<(Instant, RemoteExit)>,
}

impl Demo {
    /// Step 1: node A, the children B and C, a full mesh, every account registered, and a
    /// monitor on B's account.
    pub fn start(args: &Args) -> Result<Demo, String> {
        let started = Instant::now();
        let lease = Duration::from_millis(args.lease_ms);
        let id = NodeId::random().map_err(|e| format!("no entropy for a cluster name: {e}"))?;
        let cluster = format!("demo-{}", &id.to_string()[..12]);
        let ports = free_ports()?;
        let runtime = Runtime::new();
        crate::util::make_certs(&cluster, &["a", "b", "c"])?;
        let node = Arc::new(start_node(&cluster, "a", ports[0], &[], lease)?);
        let (events_tx, events) = mpsc::channel();
        let node_events = node.events();
        thread::spawn(move || {
            for event in node_events {
                if events_tx.send((Instant::now(), event)).is_err() {
                    break;
                }
            }
        });
        let a_account = start_account(&runtime, &node, "a")?;
        println!(
            "cluster_check: three whirl nodes as OS processes on 127.0.0.1 (cluster {cluster}, \
             lease {} ms)",
            lease.as_millis()
        );
        // B connects to A; C to A and B: every pair is linked once.
        let mut b = ChildProc::spawn("b", &cluster, ports[1], &[endpoint(ports[0])], args)?;
        let mut c = ChildProc::spawn(
            "c",
            &cluster,
            ports[2],
            &[endpoint(ports[0]), endpoint(ports[1])],
            args,
        )?;
        let deadline = started + SETUP_DEADLINE;
        b.ready(deadline)?;
        c.ready(deadline)?;
        let up = [b.id, c.id];
        while !up.iter().all(|id| node.members().contains(id)) {
            if Instant::now() >= deadline {
                return Err(format!(
                    "node A did not see B and C Up within {SETUP_DEADLINE:?}"
                ));
            }
            thread::sleep(Duration::from_millis(5));
        }
        let mesh = started.elapsed();
        for (label, id, port, pid) in [
            ("A", node.id(), ports[0], std::process::id()),
            ("B", b.id, ports[1], b.child.id()),
            ("C", c.id, ports[2], c.child.id()),
        ] {
            println!(
                "  node {label}: {}  {}  OS pid {pid}",
                short(id),
                endpoint(port)
            );
        }
        println!(
            "mesh: A, B and C each see the other two Up, {} ms after the start",
            mesh.as_millis()
        );
        let (mon_tx, b_monitor) = mpsc::channel();
        node.monitor_with(b.account, move |reason| {
            let _ = mon_tx.send((Instant::now(), reason));
        });
        Ok(Demo {
            started,
            rate: args.rate,
            phase: Duration::from_millis(args.phase_ms),
            node,
            runtime,
            a_account,
            events,
            b,
            c,
            loads: Vec::new(),
            flows: Vec::new(),
            stopped: Vec::new(),
            gone: Vec::new(),
            b_monitor,
        })
    }

    /// Step 6: stop the remaining flows, take the survivors' reports, shut everything down,
    /// and sum up. Returns the ledger and the problems found.
    pub fn finish(mut self) -> Result<(Ledger, Vec<String>), String> {
        let certs = crate::util::certs_dir(self.node.cluster());
        for load in std::mem::take(&mut self.loads) {
            let (_, report) = load.stop(&self.node)?;
            self.flows.push(report);
        }
        let stopped: FlowReport = from_json("flow", &self.c.request("STOP account-a", "STOPPED")?)?;
        self.flows.push(stopped);
        for (target, balance) in std::mem::take(&mut self.stopped) {
            self.flows.push(target.report("A", balance));
        }
        let mut nodes = vec![node_report("A", &self.node, &self.runtime)];
        nodes.extend(self.gone.iter().cloned());
        nodes.push(from_json("report", &self.c.request("REPORT", "REPORT")?)?);

        let mut problems = Vec::new();
        if let Err(e) = self.c.finish(Duration::from_secs(10)) {
            problems.push(e);
        }
        let Demo { node, runtime, .. } = self;
        match Arc::try_unwrap(node) {
            Ok(node) => {
                if let Err(e) = node.shutdown() {
                    problems.push(format!("node A's shutdown: {e}"));
                }
            }
            Err(_) => problems.push("node A is still shared at shutdown".to_owned()),
        }
        let _report = runtime.shutdown_timeout(Duration::from_secs(2));
        if let Err(e) = std::fs::remove_dir_all(&certs) {
            problems.push(format!("cannot remove {certs:?}: {e}"));
        }

        println!("flows (counted at their senders):");
        for f in &self.flows {
            println!(
                "  {} → {:<9} posted {:>6}  refused {:>4} (window full {}, node down {}, other \
                 {})  bounced {:>4} {:?}  moved {}  balance {} / accepted {} cents",
                f.from,
                f.to,
                f.posted,
                f.refused(),
                f.refused_full,
                f.refused_down,
                f.refused_other,
                f.bounced,
                f.bounce_reasons,
                f.moves,
                f.balance.map_or("-".to_owned(), |b| b.to_string()),
                f.accepted_cents
            );
        }
        println!("nodes (B: its report just before the kill):");
        for n in &nodes {
            println!(
                "  {}  deposits handled {:>6}  runtime: posted {} handled {} rejected {} \
                 dead-lettered {} moved {} queued {}  dist: sent {} refused {} received {} \
                 delivered {} bounced {} returned {} in doubt {}{}",
                n.label,
                n.deposits_handled,
                n.rt_posted,
                n.rt_handled,
                n.rt_rejected,
                n.rt_dead_lettered,
                n.rt_moved,
                n.rt_queued,
                n.sent,
                n.refused,
                n.received,
                n.delivered,
                n.bounced,
                n.returned,
                n.in_doubt,
                if n.at_rest { "" } else { "  NOT AT REST" }
            );
            if !n.at_rest {
                problems.push(format!("node {}'s counters did not come to rest", n.label));
            }
            let anomalies = n.control_overflow + n.malformed + n.from_quarantined;
            if anomalies != 0 {
                problems.push(format!(
                    "node {}: control overflow {}, malformed {}, from quarantined {}",
                    n.label, n.control_overflow, n.malformed, n.from_quarantined
                ));
            }
        }
        for f in &self.flows {
            if f.balance.is_some_and(|b| b != f.accepted_cents) {
                problems.push(format!(
                    "{} → {}: balance differs from the deposits accepted",
                    f.from, f.to
                ));
            }
        }
        Ok((Ledger::sum(&self.flows, &nodes), problems))
    }
}
