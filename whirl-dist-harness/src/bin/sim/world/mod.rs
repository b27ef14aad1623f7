//! One simulated cluster: nodes on a [`SimNet`], each with a stepped whirl runtime, driven
//! one event at a time by a seeded random choice, with the invariants checked after every
//! step.
//!
//! **Targets.** Each node runs a `Sink` (exported, never moves) and starts one `Mover`
//! (exported, movable). Both record every `Mark { origin, seq }` they handle, with the node
//! whose runtime ran the turn. The workload posts marks from every node to every target but
//! its own sink (to a mover always through its first pid, so the senders follow its moves),
//! each (origin, target) pair numbering its marks from 1. Each mover is registered under a
//! name (`mover-<i>`); with `--by-name`, half the marks to a mover are posted to the pid the
//! origin's registry holds for that name now, the others through its first pid, so one
//! sender uses both ways.
//!
//! **Steps.** The clock moves 0 to 2 ms, then one of: a post; one network delivery (any
//! link's next event that Zenoh could deliver next); one turn of one node's runtime; one
//! node's writers and deferred work; one node's tick (acknowledgements, deadlines); starting a
//! migration of a mover to another node (it then advances between steps, as the steps answer
//! it; one in three with a time limit of 1 to 30 ms); a step of the other workloads
//! (`workloads.rs`: a monitor, a link, a churned name, a spawn); or a fault: a partition
//! between two nodes, a heal, a pause of a node, or a node killed. In half the runs a hot
//! deploy starts mid-run: a node joins, every mover on one node moves to it, and that node
//! then shuts down. After the last step the cluster is run to rest without faults and the
//! accounting is checked.
//!
//! **Invariants.** After every step: per-sender FIFO (a target handles the marks of one
//! origin in increasing order, never one twice, never one not posted); one live copy (a mover
//! handles marks only on the node it was last moved to, or, while a move is under way, on its
//! source or its target); one holder per name (never two registrations of a mover's name at
//! once, counted on the network's tokens); Down is final (a node never sees Up a peer it saw
//! Down); no mark a node took from a peer it had seen Down is handled; and the workloads' own
//! (`workloads.rs`). At rest, for every origin still alive whose marks could not have died in
//! a moved queue: every mark it had accepted was handled, bounced back, counted in doubt, or
//! was queued in a node that was killed or shut down before handling it; and no more were
//! handled or returned than accepted.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use whirl::prelude::*;
use whirl::Addr;
use whirl_dist::sim::{self, SimNet, SimTransport};
use whirl_dist::{Node, NodeEvent, Pid, RemoteAddr};

use crate::targets::{mark_addr, Handled, Mark, Mover, RECORD, RETURNED, RUNNING_ON};
use crate::workloads::{Churn, Links, Monitors, Spawns, View};

mod invariants;
mod node_lifecycle;

/// Where a mover is, as far as the simulator knows.
struct MoverAt {
    /// Its first pid: every sender posts to it through this one.
    first: Pid,
    /// The node it was last moved to, and its address there.
    node: usize,
    addr: Option<Addr<Mover>>,
    /// A move under way: from, to, the migration.
    moving: Option<(usize, usize, sim::Migration)>,
    /// Its queue may have died in a move, or it died with its node: marks to it are not
    /// judged by the accounting.
    lost: bool,
}

/// A hot deploy: a new node joined, every mover on `old` moves to it, then `old` shuts down.
struct Deploy {
    old: usize,
    new: usize,
    stopped: bool,
}

/// How a run is shaped.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub nodes: usize,
    pub steps: usize,
    /// Faults per 1,000 steps.
    pub faults: u32,
    /// Whether movers are moved (a step in 40 starts a migration).
    pub migrations: bool,
    /// Whether half the marks to a mover are posted to the pid its name has now.
    pub by_name: bool,
    /// A node whose protocol state the trace shows each time it changes.
    pub watch: Option<usize>,
    /// Whether faults include partitions (and heals); kills and pauses always.
    pub partitions: bool,
}

/// A violated invariant: what, and at which step.
#[derive(Debug)]
pub struct Violation {
    pub step: usize,
    pub what: String,
}

/// What a run did.
#[derive(Debug, Default)]
pub struct Outcome {
    pub steps: usize,
    pub posts: u64,
    pub accepted: u64,
    pub handled: u64,
    pub faults: u64,
    pub deliveries: u64,
    /// A hash of the whole trace: two runs of one seed must agree.
    pub trace_hash: u64,
    pub violation: Option<Violation>,
    /// The trace (every step), kept when asked for.
    pub trace: Vec<String>,
}

struct SimNode {
    endpoint: Arc<SimTransport>,
    /// Paused until this step: it runs nothing and takes nothing from the network (a
    /// stop-the-world pause shorter than its lease: its peers still see it Up).
    paused_until: usize,
    runtime: Option<Runtime>,
    node: Option<Node>,
    events: crossbeam_channel::Receiver<NodeEvent>,
    /// Peers seen Down here.
    downs: BTreeSet<whirl_dist::NodeId>,
    /// The peers it has seen Up.
    ups: BTreeSet<whirl_dist::NodeId>,
    sink: Pid,
}

/// A cluster being simulated.
pub struct World {
    shape: Shape,
    rng: u64,
    net: SimNet,
    nodes: Vec<SimNode>,
    /// `to[o][t]`: node o's address of target t (sinks, then movers).
    to: Vec<Vec<Option<RemoteAddr<Mark>>>>,
    movers: Vec<MoverAt>,
    /// Each node's id, for the trace.
    ids: Vec<whirl_dist::NodeId>,
    /// Next mark number per (origin, target).
    next_seq: BTreeMap<(usize, usize), u64>,
    accepted: BTreeMap<usize, u64>,
    /// Every accepted mark: (origin, target, seq).
    accepted_marks: BTreeSet<(usize, usize, u64)>,
    /// Last mark handled per (target, origin).
    last: BTreeMap<(usize, usize), u64>,
    handled: Handled,
    seen_handled: usize,
    /// Marks delivered into a killed node's runtime and not handled there.
    died_unhandled: u64,
    keep_trace: bool,
    /// The watched node's protocol state as the trace last showed it.
    watched: String,
    /// Marks a node took from a peer it had seen Down (none of them may be handled):
    /// (node, origin, target, seq).
    after_down: BTreeSet<(usize, usize, usize, u64)>,
    monitors: Monitors,
    links: Links,
    churn: Churn,
    spawns: Spawns,
    /// Per node: how many processes its factory made.
    made: Vec<Arc<Mutex<u64>>>,
    /// The step a hot deploy starts at, in runs that have one; the deploy under way.
    deploy_at: Option<usize>,
    deploy: Option<Deploy>,
    outcome: Outcome,
}

impl World {
    pub fn new(seed: u64, shape: Shape, keep_trace: bool) -> World {
        let net = SimNet::new(seed);
        let handled: Handled = Arc::new(Mutex::new(Vec::new()));
        RECORD.with(|r| *r.borrow_mut() = Some(Arc::clone(&handled)));
        RETURNED.with(|r| r.borrow_mut().clear());
        let mut nodes = Vec::new();
        let mut movers = Vec::new();
        let mut factories = Vec::new();
        for i in 0..shape.nodes {
            let (sim_node, made) = World::start_sim_node(&net, i);
            factories.push(made);
            let (Some(node), Some(runtime)) = (&sim_node.node, &sim_node.runtime) else {
                unreachable!("a node just started runs");
            };
            let mover = runtime.spawn(Mover {
                target: shape.nodes + i,
                handled: 0,
            });
            let first = node
                .export(&mover)
                .accept::<Mark>()
                .build()
                .expect("export");
            node.register(&format!("mover-{i}"), first)
                .expect("a mover's name registers");
            movers.push(MoverAt {
                first,
                node: i,
                addr: Some(mover),
                moving: None,
                lost: false,
            });
            nodes.push(sim_node);
        }
        let ids: Vec<whirl_dist::NodeId> = nodes
            .iter()
            .filter_map(|n| n.node.as_ref().map(Node::id))
            .collect();
        let targets: Vec<Pid> = nodes
            .iter()
            .map(|n| n.sink)
            .chain(movers.iter().map(|m| m.first))
            .collect();
        let to = (0..shape.nodes)
            .map(|o| {
                targets
                    .iter()
                    .enumerate()
                    .map(|(t, pid)| {
                        let node = nodes[o].node.as_ref()?;
                        (t != o).then(|| mark_addr(node, *pid))
                    })
                    .collect()
            })
            .collect();
        World {
            shape,
            rng: seed ^ 0x9E37_79B9_7F4A_7C15,
            net,
            nodes,
            to,
            movers,
            ids,
            next_seq: BTreeMap::new(),
            accepted: BTreeMap::new(),
            accepted_marks: BTreeSet::new(),
            last: BTreeMap::new(),
            handled,
            seen_handled: 0,
            died_unhandled: 0,
            keep_trace,
            watched: String::new(),
            after_down: BTreeSet::new(),
            monitors: Monitors::default(),
            links: Links::default(),
            churn: Churn::default(),
            spawns: Spawns::default(),
            made: factories,
            deploy_at: None,
            deploy: None,
            outcome: Outcome::default(),
        }
    }

    fn next(&mut self) -> u64 {
        // splitmix64
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn note(&mut self, step: usize, line: String) {
        // FNV-1a over the trace.
        let mut hash = if self.outcome.trace_hash == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.outcome.trace_hash
        };
        for byte in line.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        self.outcome.trace_hash = hash;
        if self.keep_trace {
            match step {
                usize::MAX => self.outcome.trace.push(format!("       {line}")),
                step => self.outcome.trace.push(format!("{step:>6} {line}")),
            }
        }
    }

    /// Shows the watched node's protocol state in the trace if it changed (`--watch`).
    fn show_watched(&mut self, step: usize) {
        let Some(node) = self
            .shape
            .watch
            .and_then(|i| self.nodes.get(i)?.node.as_ref())
        else {
            return;
        };
        if !self.keep_trace {
            return;
        }
        let mut state = sim::describe_node(node);
        for (k, id) in self.ids.iter().enumerate() {
            state = state.replace(&id.to_string(), &format!("n{k}"));
        }
        if state != self.watched {
            self.outcome
                .trace
                .push(format!("{step:>6} watched: {state}"));
            self.watched = state;
        }
    }

    /// One step of the other workloads (`workloads.rs`): a monitor placed, a churn name
    /// registered or unregistered, a spawn started, or a link made.
    fn other_work(&mut self, step: usize) {
        let n = self.shape.nodes;
        let (kind, a) = (self.below(4), self.below(n));
        // Another node (a spawn on itself crosses no network).
        let b = (a + 1 + self.below(n - 1)) % n;
        let m = self.below(self.movers.len());
        let by_name = self.next().is_multiple_of(2);
        let timeout = match self.below(3) {
            0 => Duration::from_millis(1 + self.below(30) as u64),
            _ => Duration::from_secs(10),
        };
        if self.paused(a, step) {
            return;
        }
        let view = view_of(&self.nodes, &self.ids, &self.movers, &self.net, step);
        let line = match kind {
            0 => self.monitors.place(&view, a, m, by_name),
            1 => self.churn.toggle(&view, a),
            2 => self.spawns.start(&view, a, b, timeout),
            _ => {
                let runtime = self.nodes[a].runtime.as_ref();
                self.links.make(&view, runtime, a, m, by_name)
            }
        };
        if let Some(line) = line {
            self.note(step, line);
        }
    }

    fn paused(&self, i: usize, step: usize) -> bool {
        step < self.nodes[i].paused_until
    }

    fn alive(&self, i: usize) -> bool {
        self.nodes[i].node.is_some()
    }

    /// Runs the whole simulation.
    pub fn run(mut self) -> Outcome {
        // Half the runs deploy: at a step in the middle of the run.
        if self.next().is_multiple_of(2) {
            self.deploy_at = Some(self.shape.steps / 5 + self.below(self.shape.steps / 2 + 1));
        }
        for step in 0..self.shape.steps {
            self.step(step, true);
            if self.deploy_at == Some(step) {
                self.start_deploy(step);
            }
            self.advance_deploy(step);
            self.show_watched(step);
            if let Err(what) = self.check() {
                self.outcome.violation = Some(Violation { step, what });
                return self.finish(step);
            }
        }
        // To rest: no faults, no posts; rounds of every kind of work, until one does nothing.
        let mut step = self.shape.steps;
        for node in &mut self.nodes {
            node.paused_until = 0;
        }
        loop {
            let mut did = false;
            self.net.advance(Duration::from_millis(5));
            for i in 0..self.nodes.len() {
                if let Some(node) = &self.nodes[i].node {
                    sim::tick_node(node, self.net.now());
                }
                while self.turn_on(step, i) {
                    step += 1;
                    did = true;
                    did |= self.poll_migrations(step);
                }
                if let Some(node) = &self.nodes[i].node {
                    did |= !sim::run_node(node).is_idle();
                }
            }
            while self.deliver(step) {
                step += 1;
                did = true;
                did |= self.poll_migrations(step);
            }
            did |= self.poll_migrations(step);
            if let Err(what) = self.check() {
                self.outcome.violation = Some(Violation { step, what });
                return self.finish(step);
            }
            if !did {
                break;
            }
            if step > self.shape.steps * 50 + 1_000_000 {
                self.outcome.violation = Some(Violation {
                    step,
                    what: "the cluster never came to rest".into(),
                });
                return self.finish(step);
            }
        }
        if let Err(mut what) = self.check_at_rest() {
            for (i, n) in self.nodes.iter().enumerate() {
                if let Some(node) = &n.node {
                    let mut state = sim::describe_node(node);
                    for (k, id) in self.ids.iter().enumerate() {
                        state = state.replace(&id.to_string(), &format!("n{k}"));
                    }
                    what.push_str(&format!("\nn{i}: {state}"));
                }
            }
            self.outcome.violation = Some(Violation { step, what });
        }
        self.finish(step)
    }

    fn finish(mut self, steps: usize) -> Outcome {
        self.outcome.steps = steps;
        self.outcome.handled = self.seen_handled as u64;
        self.outcome.accepted = self.accepted.values().sum();
        self.outcome.deliveries = self.net.delivered();
        // Nodes and runtimes go down quietly.
        for n in &mut self.nodes {
            drop(n.node.take());
            drop(n.runtime.take());
        }
        self.outcome
    }

    /// One step; `faults` allows posts and faults. Returns whether anything happened.
    fn step(&mut self, step: usize, faults: bool) -> bool {
        // Time: 0 to 2 ms per step (asks, probes and migrations time out on this clock).
        let ms = self.below(3) as u64;
        self.net.advance(Duration::from_millis(ms));
        let roll = self.below(1000) as u32;
        if faults && roll < self.shape.faults {
            self.fault(step);
            return true;
        }
        let kind = self.below(if faults { 40 } else { 30 });
        let did = match kind {
            0..=7 => self.deliver(step),
            8..=13 => self.turn(step),
            14..=19 => self.background(step),
            20..=21 => self.tick(step),
            22..=29 => self.deliver(step),
            30 if self.shape.migrations => {
                self.start_migration(step);
                true
            }
            31 => {
                self.other_work(step);
                true
            }
            _ => {
                self.post(step);
                true
            }
        };
        self.poll_migrations(step) || did
    }

    /// Starts moving a mover that is not moving to another live node.
    fn start_migration(&mut self, step: usize) {
        let m = self.below(self.movers.len());
        let to = self.below(self.nodes.len());
        // One in three with a timeout shorter than a round trip may be (the third bug of
        // issue 34: a migration that timed out on its source must not leave two copies).
        let timeout = match self.below(3) {
            0 => Duration::from_millis(1 + self.below(30) as u64),
            _ => Duration::from_secs(10),
        };
        // Nothing moves onto a node being emptied for a deploy.
        if self.deploy.as_ref().is_some_and(|d| d.old == to) {
            return;
        }
        self.begin_move(step, m, to, timeout);
    }

    /// Starts moving mover `m` to node `to`, unless it is moving, lost, there already, or
    /// `to` is gone.
    fn begin_move(&mut self, step: usize, m: usize, to: usize, timeout: Duration) {
        let mover = &self.movers[m];
        let from = mover.node;
        if mover.moving.is_some() || mover.lost || from == to || !self.alive(to) {
            return;
        }
        let (Some(node), Some(addr), Some(target)) = (
            self.nodes[from].node.as_ref(),
            mover.addr.as_ref(),
            self.nodes[to].node.as_ref(),
        ) else {
            return;
        };
        let migration = sim::migrate(node, addr, target.id(), timeout);
        self.movers[m].moving = Some((from, to, migration));
        self.note(
            step,
            format!("migrate mover {m}: n{from} -> n{to} (timeout {timeout:?})"),
        );
    }

    /// Advances every move under way; returns whether one ended.
    fn poll_migrations(&mut self, step: usize) -> bool {
        let mut ended = false;
        for m in 0..self.movers.len() {
            let Some((from, to, migration)) = self.movers[m].moving.as_mut() else {
                continue;
            };
            let (from, to) = (*from, *to);
            if step < self.nodes[from].paused_until {
                continue;
            }
            RUNNING_ON.with(|r| r.set(from));
            let Some(outcome) = migration.poll() else {
                continue;
            };
            ended = true;
            let mover = &mut self.movers[m];
            mover.moving = None;
            let line = match &outcome {
                Ok(pid) => {
                    mover.node = to;
                    mover.addr = self.nodes[to]
                        .node
                        .as_ref()
                        .and_then(|n| n.local::<Mover>(*pid));
                    if mover.addr.is_none() {
                        mover.lost = true;
                    }
                    format!("moved mover {m}: n{from} -> n{to} as {}@n{to}", pid.local())
                }
                Err(whirl_dist::MigrateError::Failed { restored_as, why }) => {
                    mover.addr = self.nodes[from]
                        .node
                        .as_ref()
                        .and_then(|n| n.local::<Mover>(*restored_as));
                    format!("move of mover {m} failed, restored at n{from}: {why}")
                }
                Err(whirl_dist::MigrateError::InDoubt { why, .. }) => {
                    // It may run at the target (cut off, not dead): that is where it is.
                    mover.node = to;
                    mover.addr = None;
                    mover.lost = true;
                    format!("move of mover {m} in doubt: {why}")
                }
                Err(other) => {
                    if !matches!(
                        other,
                        whirl_dist::MigrateError::Refused { .. }
                            | whirl_dist::MigrateError::AlreadyMoving
                            | whirl_dist::MigrateError::SameNode
                    ) {
                        mover.lost = true;
                    }
                    format!("move of mover {m} did not happen: {other}")
                }
            };
            self.note(step, line);
        }
        let lines = {
            let view = view_of(&self.nodes, &self.ids, &self.movers, &self.net, step);
            self.spawns.poll(&view)
        };
        ended |= !lines.is_empty();
        for line in lines {
            self.note(step, line);
        }
        ended
    }

    fn post(&mut self, step: usize) {
        let o = self.below(self.nodes.len());
        let d = self.below(2 * self.shape.nodes);
        // Not to its own sink (a deployed node has none).
        let own_sink = d == o && d < self.shape.nodes;
        if !self.alive(o) || own_sink || self.paused(o, step) {
            return;
        }
        let seq = {
            let next = self.next_seq.entry((o, d)).or_insert(1);
            let seq = *next;
            *next += 1;
            seq
        };
        self.outcome.posts += 1;
        // A node that joined mid-run (a deploy) knows the movers only by name when senders
        // use names: an old pid it held from before would be the guarantee's edge (a sender
        // that never heard the process move, README).
        let joined = o >= self.shape.nodes;
        let by_name = self.shape.by_name
            && d >= self.shape.nodes
            && (joined || self.next().is_multiple_of(2));
        let found;
        let addr = match by_name {
            // The pid this node's registry holds for the mover's name now (it follows the
            // mover once every peer fences its old node, `NamesFree`).
            true => {
                let name = format!("mover-{}", d - self.shape.nodes);
                found = self.nodes[o]
                    .node
                    .as_ref()
                    .and_then(|node| Some(mark_addr(node, node.whereis::<Mark>(&name)?.pid())));
                found.as_ref()
            }
            false => self.to[o][d].as_ref(),
        };
        let Some(addr) = addr else {
            self.note(
                step,
                format!("post n{o} -> {} #{seq}: no address", self.target_name(d)),
            );
            return;
        };
        let via = if by_name {
            format!(" by name, {}", addr.pid())
        } else {
            String::new()
        };
        RUNNING_ON.with(|r| r.set(o));
        let result = addr.post(Mark {
            origin: o,
            target: d,
            seq,
        });
        let ok = result.is_ok();
        if ok {
            *self.accepted.entry(o).or_default() += 1;
            self.accepted_marks.insert((o, d, seq));
        }
        self.note(
            step,
            format!(
                "post n{o} -> {}{via} #{seq}: {}",
                self.target_name(d),
                if ok { "ok" } else { "refused" }
            ),
        );
    }

    fn deliver(&mut self, step: usize) -> bool {
        let mut choices = self.net.choices();
        choices.retain(|c| !self.paused(c.to.0, step));
        if choices.is_empty() {
            return false;
        }
        let choice = choices[self.below(choices.len())];
        let (from, to) = (choice.from.0, choice.to.0);
        let from_down = self.nodes[to].downs.contains(&self.ids[from]);
        let what = self.net.deliver(choice);
        if from_down {
            // A post from a peer this node saw Down: it must not be handled.
            if let sim::Delivered::Payload {
                frame: Some(frame),
                body,
                ..
            } = &what
            {
                let mark = postcard::from_bytes::<Mark>(body).ok();
                if let Some(mark) = mark.filter(|m| frame.contains("Post {") && m.origin == from) {
                    self.after_down
                        .insert((to, mark.origin, mark.target, mark.seq));
                }
            }
        }
        let line = format!(
            "net n{} -> n{}: {}",
            choice.from.0,
            choice.to.0,
            self.describe(what)
        );
        self.note(step, line);
        true
    }

    /// A delivery as a trace shows it: frames decoded, node ids as `n0`, `n1`, ..., the mark
    /// a post or a redirect carries.
    fn describe(&self, what: sim::Delivered) -> String {
        let mut text = match what {
            sim::Delivered::Payload {
                frame: Some(frame),
                body,
                ..
            } => {
                let mark = postcard::from_bytes::<Mark>(&body)
                    .ok()
                    .filter(|_| frame.contains("Post {") || frame.contains("Redirect {"))
                    .map(|m| {
                        format!(
                            " [n{} -> {} #{}]",
                            m.origin,
                            self.target_name(m.target),
                            m.seq
                        )
                    })
                    .unwrap_or_default();
                format!("{frame}{mark}")
            }
            other => format!("{other:?}"),
        };
        for (i, n) in self.ids.iter().enumerate() {
            text = text
                .replace(&n.to_string(), &format!("n{i}"))
                .replace(&n.as_u128().to_string(), &format!("n{i}"));
        }
        text
    }

    fn turn(&mut self, step: usize) -> bool {
        let i = self.below(self.nodes.len());
        self.turn_on(step, i)
    }

    fn turn_on(&mut self, step: usize, i: usize) -> bool {
        let mut pick_rng = self.next();
        if self.paused(i, step) {
            return false;
        }
        let Some(runtime) = &self.nodes[i].runtime else {
            return false;
        };
        RUNNING_ON.with(|r| r.set(i));
        let handled = runtime.run_one(|n| {
            pick_rng ^= pick_rng >> 17;
            (pick_rng % n as u64) as usize
        });
        match handled {
            Some(h) => {
                self.note(step, format!("turn n{i}: {h} handled"));
                true
            }
            None => false,
        }
    }

    fn background(&mut self, step: usize) -> bool {
        let i = self.below(self.nodes.len());
        if self.paused(i, step) {
            return false;
        }
        let Some(node) = &self.nodes[i].node else {
            return false;
        };
        let work = sim::run_node(node);
        if work.is_idle() {
            return false;
        }
        self.note(step, format!("node n{i}: {work:?}"));
        true
    }

    fn tick(&mut self, step: usize) -> bool {
        let i = self.below(self.nodes.len());
        if self.paused(i, step) {
            return false;
        }
        let Some(node) = &self.nodes[i].node else {
            return false;
        };
        // Acknowledgements due, and asks (migration probes) past their deadline.
        sim::tick_node(node, self.net.now());
        self.note(step, format!("tick n{i}"));
        false
    }

    fn target_name(&self, t: usize) -> String {
        match t.checked_sub(self.shape.nodes) {
            None => format!("n{t}'s sink"),
            Some(m) => format!("mover {m}"),
        }
    }
}

/// What the workloads see of the cluster at `step` (from the world's parts, so that a
/// workload borrowed mutably can be given it).
fn view_of<'a>(
    nodes: &'a [SimNode],
    ids: &'a [whirl_dist::NodeId],
    movers: &[MoverAt],
    net: &'a SimNet,
    step: usize,
) -> View<'a> {
    View {
        nodes: nodes.iter().map(|n| n.node.as_ref()).collect(),
        ids,
        downs: nodes.iter().map(|n| &n.downs).collect(),
        ups: nodes.iter().map(|n| &n.ups).collect(),
        // A mover whose source copy ended during a move may have been killed (through a link)
        // rather than handed over: it may have died, as far as watches can tell.
        movers: movers
            .iter()
            .map(|m| {
                let ended_moving =
                    m.moving.is_some() && m.addr.as_ref().is_some_and(Addr::is_terminated);
                (m.first, m.node, m.lost || ended_moving)
            })
            .collect(),
        sinks: nodes.iter().map(|n| n.sink).collect(),
        paused: nodes.iter().map(|n| step < n.paused_until).collect(),
        net,
    }
}
