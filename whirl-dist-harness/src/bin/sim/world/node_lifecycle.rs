//! Nodes coming and going: faults (partitions, heals, pauses, kills), a node gone and what
//! it took with it, a hot deploy (a node joins, every mover on another moves to it, that one
//! shuts down), and how a simulated node is started.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use whirl::prelude::*;
use whirl_dist::sim::{self, EndpointId, SimNet};
use whirl_dist::{Node, NodeConfig, Peers, Pid, Policy};

use super::{Deploy, SimNode, World};
use crate::targets::{mark_addr, Mark, Mover, Sink};
use crate::workloads;

impl World {
    /// Starts a hot deploy: a new node joins the cluster (it accepts movers and posts marks
    /// like the others) and every mover on a live node moves to it (`advance_deploy`).
    pub(super) fn start_deploy(&mut self, step: usize) {
        let live: Vec<usize> = (0..self.shape.nodes).filter(|&i| self.alive(i)).collect();
        if live.len() < 2 {
            return;
        }
        let old = live[self.below(live.len())];
        let new = self.nodes.len();
        // Its sink is no target (nothing is posted to it).
        let (sim_node, made) = Self::start_sim_node(&self.net, usize::MAX);
        let Some(node) = &sim_node.node else { return };
        let targets: Vec<Pid> = (0..self.shape.nodes)
            .map(|i| self.nodes[i].sink)
            .chain(self.movers.iter().map(|m| m.first))
            .collect();
        self.to.push(
            targets
                .iter()
                .map(|pid| Some(mark_addr(node, *pid)))
                .collect(),
        );
        self.ids.push(node.id());
        self.nodes.push(sim_node);
        self.made.push(made);
        self.deploy = Some(Deploy {
            old,
            new,
            stopped: false,
        });
        self.note(
            step,
            format!("DEPLOY n{new} starts; every mover on n{old} moves to it, then n{old} stops"),
        );
    }

    /// Moves the movers still on the deploy's old node to the new one; once none is left
    /// there, runs the old node's work out and shuts it down.
    pub(super) fn advance_deploy(&mut self, step: usize) {
        let Some(Deploy {
            old,
            new,
            stopped: false,
        }) = self.deploy
        else {
            return;
        };
        if !self.alive(old) || !self.alive(new) {
            self.deploy = None;
            return;
        }
        let mut remaining = false;
        for m in 0..self.movers.len() {
            let mover = &self.movers[m];
            let arriving = mover.moving.as_ref().is_some_and(|(_, to, _)| *to == old);
            // One that may have died stays behind (it goes down with the node), unless a move
            // of it is still under way.
            let settled_lost = mover.lost && mover.moving.is_none();
            if settled_lost || (mover.node != old && !arriving) {
                continue;
            }
            remaining = true;
            if mover.moving.is_none() && !mover.lost && !self.paused(old, step) {
                self.begin_move(step, m, new, Duration::from_secs(10));
            }
        }
        if remaining {
            return;
        }
        // Every mover left: the old node's work is run out, then it shuts down.
        while self.turn_on(step, old) {}
        if let Some(node) = &self.nodes[old].node {
            sim::run_node(node);
        }
        let queued = self.nodes[old]
            .runtime
            .as_ref()
            .map_or(0, |runtime| runtime.counts().queued());
        let result = self.nodes[old].node.take().map(Node::shutdown);
        self.note(
            step,
            format!("DEPLOY n{old} shut down ({queued} marks queued): {result:?}"),
        );
        self.gone(old);
        if let Some(deploy) = &mut self.deploy {
            deploy.stopped = true;
        }
    }

    pub(super) fn fault(&mut self, step: usize) {
        let n = self.nodes.len();
        let kind = match self.shape.partitions {
            true => self.below(4),
            // Kills and pauses only.
            false => 2 + self.below(2),
        };
        match kind {
            3 => {
                let a = self.below(n);
                let steps = 20 + self.below(200);
                self.nodes[a].paused_until = step + steps;
                self.note(step, format!("FAULT pause n{a} for {steps} steps"));
            }
            0 => {
                let a = self.below(n);
                let b = (a + 1 + self.below(n - 1)) % n;
                self.net.partition(EndpointId(a), EndpointId(b));
                self.note(step, format!("FAULT partition n{a} | n{b}"));
            }
            1 => {
                let a = self.below(n);
                let b = (a + 1 + self.below(n - 1)) % n;
                self.net.heal(EndpointId(a), EndpointId(b));
                self.note(step, format!("FAULT heal n{a} + n{b}"));
            }
            _ => {
                let a = self.below(n);
                // Keep at least two nodes alive.
                let alive = (0..n).filter(|&i| self.alive(i)).count();
                if !self.alive(a) || alive <= 2 {
                    return;
                }
                self.kill(a);
                self.note(step, format!("FAULT kill n{a}"));
            }
        }
        self.outcome.faults += 1;
    }

    pub(super) fn kill(&mut self, a: usize) {
        self.net.kill(self.nodes[a].endpoint.id());
        self.gone(a);
    }

    /// Node `a` is gone (killed, or shut down): what it held is judged as lost with it.
    pub(super) fn gone(&mut self, a: usize) {
        // What waited in its runtime's mailboxes dies with it (marks, and nothing else is
        // posted to its processes but what the workloads never judge).
        let queued = self.nodes[a]
            .runtime
            .as_ref()
            .map_or(0, |runtime| runtime.counts().queued());
        self.died_unhandled += queued;
        drop(self.nodes[a].node.take());
        drop(self.nodes[a].runtime.take());
        for to in &mut self.to[a] {
            *to = None;
        }
        for mover in &mut self.movers {
            let moving_here = mover
                .moving
                .as_ref()
                .is_some_and(|(from, to, _)| *from == a || *to == a);
            if mover.node == a || moving_here {
                mover.lost = true;
            }
            if mover.node == a {
                mover.addr = None;
            }
            if let Some((from, to, _)) = &mover.moving {
                if *from == a {
                    // Its source died mid-move: the migration goes with the node, and the
                    // target may have started the mover already; that is the one place it
                    // can run now.
                    mover.node = *to;
                    mover.addr = None;
                    mover.moving = None;
                }
            }
        }
    }

    /// Starts a node on `net` with a stepped runtime, the simulation's policy, migrations of
    /// movers accepted, the spawn workload's factory (and its count), and its sink (target
    /// number `sink`).
    pub(super) fn start_sim_node(net: &SimNet, sink: usize) -> (SimNode, Arc<Mutex<u64>>) {
        let endpoint = net.endpoint();
        let runtime = Runtime::builder()
            .stepped()
            .build()
            .expect("a stepped runtime starts no threads");
        let config = NodeConfig::new("sim")
            .insecure_plaintext("simulation")
            .policy(Policy::new().allow_factory(workloads::FACTORY, Peers::Any));
        let node = sim::start_node(config, &endpoint).expect("a simulated node starts");
        node.accept_migrations::<Mover, _>("sim.Mover/1", runtime.default_group(), |e| {
            e.accept::<Mark>()
        })
        .expect("migrations accepted");
        let made = Arc::new(Mutex::new(0));
        workloads::add_factory(&node, &runtime, Arc::clone(&made));
        let sink = runtime.spawn(Sink { target: sink });
        let sink = node.export(&sink).accept::<Mark>().build().expect("export");
        let events = node.events();
        let sim_node = SimNode {
            endpoint,
            paused_until: 0,
            runtime: Some(runtime),
            node: Some(node),
            events,
            downs: BTreeSet::new(),
            ups: BTreeSet::new(),
            sink,
        };
        (sim_node, made)
    }
}
