//! The invariants the world checks: after every step (per-sender FIFO, one live copy, one
//! holder per name, Down is final, no mark taken from a quarantined peer handled, and the
//! workloads' own), and at rest (the accounting per origin, and the workloads' own).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use whirl::Addr;
use whirl_dist::NodeEvent;

use super::{view_of, World};
use crate::targets::{HandledMark, RETURNED};

impl World {
    /// The invariants that hold after every step.
    pub(super) fn check(&mut self) -> Result<(), String> {
        let fresh: Vec<HandledMark> = {
            let handled = self.handled.lock().expect("record");
            handled[self.seen_handled..].to_vec()
        };
        self.seen_handled += fresh.len();
        for h in fresh {
            let (t, o, seq) = (h.target, h.origin, h.seq);
            let name = self.target_name(t);
            let last = self.last.entry((t, o)).or_insert(0);
            if seq <= *last {
                return Err(format!(
                    "per-sender FIFO: {name} handled n{o}'s mark #{seq} after #{last} (on n{})",
                    h.node
                ));
            }
            *last = seq;
            if self.after_down.contains(&(h.node, o, t, seq)) {
                return Err(format!(
                    "no frame from a quarantined incarnation is handled: n{} handled n{o}'s mark #{seq} to {name}, taken after it saw n{o} Down",
                    h.node
                ));
            }
            let posted = self.next_seq.get(&(o, t)).copied().unwrap_or(1) - 1;
            if seq > posted {
                return Err(format!("{name} handled n{o}'s mark #{seq}, never posted"));
            }
            if let Some(m) = t.checked_sub(self.shape.nodes) {
                let mover = &self.movers[m];
                let allowed = h.node == mover.node
                    || mover
                        .moving
                        .as_ref()
                        .is_some_and(|(from, to, _)| h.node == *from || h.node == *to);
                if !allowed {
                    return Err(format!(
                        "one live copy: {name} handled n{o}'s mark #{seq} on n{}, but it is on n{}",
                        h.node, mover.node
                    ));
                }
            }
        }
        for m in 0..self.movers.len() {
            let holders = self.net.tokens(&format!("whirl/sim/reg/mover-{m}/"));
            if holders.len() > 1 {
                return Err(format!(
                    "one holder per name: mover-{m} is registered {} times: {holders:?}",
                    holders.len()
                ));
            }
        }
        for i in 0..self.nodes.len() {
            let events: Vec<NodeEvent> = self.nodes[i].events.try_iter().collect();
            for event in events {
                let mut line = format!("event at n{i}: {event:?}");
                for (k, n) in self.ids.iter().enumerate() {
                    line = line.replace(&n.to_string(), &format!("n{k}"));
                }
                self.note(usize::MAX, line);
                match event {
                    NodeEvent::Down { node, .. } => {
                        self.nodes[i].downs.insert(node);
                    }
                    NodeEvent::Up(node) if !self.nodes[i].downs.contains(&node) => {
                        self.nodes[i].ups.insert(node);
                    }
                    NodeEvent::Up(node) if self.nodes[i].downs.contains(&node) => {
                        return Err(format!("Down is final: n{i} saw {node} Up after Down"));
                    }
                    _ => {}
                }
            }
        }
        // A mover killed through a link (a node linked to it went Down): gone, as Erlang's.
        for m in 0..self.movers.len() {
            let mover = &mut self.movers[m];
            let killed = mover.moving.is_none()
                && !mover.lost
                && mover.addr.as_ref().is_some_and(Addr::is_terminated);
            if killed {
                mover.lost = true;
                self.note(usize::MAX, format!("mover {m} was killed (linked)"));
            }
        }
        let lines = {
            let view = view_of(&self.nodes, &self.ids, &self.movers, &self.net, usize::MAX);
            self.churn.check(&view)?;
            let mut lines = self.monitors.check(&view)?;
            lines.extend(self.links.check(&view)?);
            lines
        };
        for line in lines {
            self.note(usize::MAX, line);
        }
        Ok(())
    }

    /// The accounting, once nothing is left to do.
    pub(super) fn check_at_rest(&mut self) -> Result<(), String> {
        {
            let view = view_of(&self.nodes, &self.ids, &self.movers, &self.net, usize::MAX);
            self.monitors.check_at_rest(&view)?;
            self.links.check_at_rest(&view)?;
            self.churn.check_at_rest(&view)?;
            self.spawns.check_at_rest(&view, &self.made)?;
        }
        let handled = self.handled.lock().expect("record").clone();
        let mut report = String::new();
        for o in 0..self.nodes.len() {
            let Some(node) = &self.nodes[o].node else {
                continue;
            };
            let counts = node.counts();
            let accepted = self.accepted.get(&o).copied().unwrap_or(0);
            let handled_o = handled.iter().filter(|h| h.origin == o).count() as u64;
            // Given back to a bounce handler, or given back after the address that posted it
            // was dropped (only posts have handlers: every such one is a mark).
            let returned = RETURNED.with(|r| r.borrow().iter().filter(|m| m.0 == o).count()) as u64
                + counts.returned_unrouted;
            let in_doubt = counts.in_doubt;
            let _ = writeln!(
                report,
                "n{o}: accepted {accepted}, handled {handled_o}, returned {returned}, in doubt {in_doubt}; {counts:?}"
            );
            if handled_o + returned > accepted {
                return Err(format!(
                    "more handled or returned than accepted from n{o}\n{report}"
                ));
            }
            let explained = handled_o + returned + in_doubt + self.died_unhandled;
            let lost_movers: Vec<usize> = (0..self.movers.len())
                .filter(|&m| self.movers[m].lost)
                .map(|m| self.shape.nodes + m)
                .collect();
            let judged = !self
                .accepted_marks
                .iter()
                .any(|(origin, t, _)| *origin == o && lost_movers.contains(t));
            if judged && accepted > explained {
                let got: BTreeSet<(usize, usize, u64)> = handled
                    .iter()
                    .map(|h| (h.origin, h.target, h.seq))
                    .collect();
                let missing: Vec<String> = self
                    .accepted_marks
                    .iter()
                    .filter(|(origin, _, _)| *origin == o)
                    .filter(|mark| !got.contains(mark))
                    .take(10)
                    .map(|(_, t, seq)| format!("{} #{seq}", self.target_name(*t)))
                    .collect();
                return Err(format!(
                    "silent loss: {} of n{o}'s accepted marks are neither handled, returned, in doubt nor died queued (not handled: {})\n{report}",
                    accepted - explained,
                    missing.join(", ")
                ));
            }
        }
        Ok(())
    }
}
