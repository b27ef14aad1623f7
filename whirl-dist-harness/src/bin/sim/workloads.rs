//! The simulator's workloads besides marks and migrations, each with the invariants it
//! checks: remote monitors, registry churn, and spawns through factories.
//!
//! Each workload keeps its own record and is given a [`View`] of the cluster (which nodes
//! live, which peers each has seen Down, where each mover is as far as the simulator knows)
//! and the random numbers it needs, so that the world's seeded choices stay in one place.
//!
//! * **Monitors.** A node monitors a mover through the pid its registry holds for the
//!   mover's name (or its first pid). A monitor fires at most once, and only for a reason:
//!   `NoConnection` only on a node that has lost a peer (seen it Down, or never seen it Up),
//!   any other reason only for a mover that may have died (so a watch follows every move).
//!   At rest, a monitor of a mover whose node was killed or that the watcher cannot reach
//!   has fired.
//! * **Links.** A node spawns a process of its own and links it to a mover. The linked
//!   process is killed only for a reason (its node lost a peer, or the mover may have died),
//!   and at rest it is dead if the mover is out of its node's reach. (A link's other
//!   direction, a local failure killing the mover, is not exercised: movers live on.)
//! * **Registry churn.** Each node registers and unregisters a name of its own (`churn-<i>`,
//!   for its sink). Never two registrations at once; at rest, every live node that has not
//!   seen the owner Down agrees with the owner on whether it is registered.
//! * **Spawns.** A node spawns a process on another through its factory, with a timeout
//!   that is sometimes shorter than a round trip. A spawn ends once; at rest, every spawn that
//!   answered with a pid has its process running there (unless that node died), and a
//!   factory ran no more often than spawns succeeded or ended in doubt (timed out, or the node
//!   went Down).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use whirl::Runtime;
use whirl_dist::sim::{self, SimNet};
use whirl_dist::{Node, NodeId, Pid, RemoteExit, SpawnRemoteError};

use crate::targets::{Mark, Sink};

/// What the workloads may see of the cluster.
pub struct View<'a> {
    /// Each node, while it lives.
    pub nodes: Vec<Option<&'a Node>>,
    /// Each node's id.
    pub ids: &'a [NodeId],
    /// The peers each node has seen Down.
    pub downs: Vec<&'a BTreeSet<NodeId>>,
    /// The peers each node has seen Up.
    pub ups: Vec<&'a BTreeSet<NodeId>>,
    /// Per mover: its first pid, the node it was last moved to, whether it may have died.
    pub movers: Vec<(Pid, usize, bool)>,
    /// Each node's sink.
    pub sinks: Vec<Pid>,
    /// Whether each node is paused now (it runs nothing).
    pub paused: Vec<bool>,
    pub net: &'a SimNet,
}

impl View<'_> {
    /// Whether node `a` can reach node `b` as far as `a` knows (`b` lives, `a` has not seen
    /// it Down).
    fn reaches(&self, a: usize, b: usize) -> bool {
        let id = &self.ids[b];
        self.nodes[b].is_some()
            && (a == b || (self.ups[a].contains(id) && !self.downs[a].contains(id)))
    }

    /// The pid `node` reaches mover `m` by: the one its name has there (`by_name`, if
    /// registered), else its first pid.
    fn mover_pid(&self, node: &Node, m: usize, by_name: bool) -> Pid {
        let named = by_name
            .then(|| node.whereis_all(&format!("mover-{m}")).first().copied())
            .flatten();
        named.unwrap_or(self.movers[m].0)
    }

    /// Whether node `a` has lost no node: it saw every other one Up and none Down.
    fn lost_none(&self, a: usize) -> bool {
        self.downs[a].is_empty() && self.ups[a].len() + 1 >= self.ids.len()
    }
}

/// The factory each node offers, and the number of processes it made.
pub const FACTORY: &str = "sim.Sink/1";

/// Offers the spawn workload's factory on `node`: it spawns a [`Sink`] in `runtime`'s
/// default group (one no mark is posted to) and counts it.
pub fn add_factory(node: &Node, runtime: &Runtime, made: Arc<Mutex<u64>>) {
    let group = runtime.default_group().clone();
    node.add_factory(FACTORY, move |target: usize, ctx| {
        if let Ok(mut made) = made.lock() {
            *made += 1;
        }
        let sink = group.spawn(Sink { target });
        ctx.export(&sink).accept::<Mark>().build().into()
    })
    .expect("the factory is added once");
}

struct LinkRec {
    node: usize,
    mover: usize,
    local: whirl::Addr<Sink>,
    /// Whether its death was seen (and judged) already.
    dead: bool,
    /// Whether its node has not reached every node at some point since the link was made
    /// (its link may then have fired).
    excused: bool,
}

/// Local processes linked to movers.
#[derive(Default)]
pub struct Links {
    links: Vec<LinkRec>,
}

/// Links made in one run, at most.
const MAX_LINKS: usize = 20;

impl Links {
    /// Node `w` spawns a process in `runtime` and links it to mover `m` (by the pid its name
    /// has at `w`, or its first pid).
    pub fn make(
        &mut self,
        view: &View<'_>,
        runtime: Option<&Runtime>,
        w: usize,
        m: usize,
        by_name: bool,
    ) -> Option<String> {
        let (node, runtime) = (view.nodes[w]?, runtime?);
        if self.links.len() >= MAX_LINKS {
            return None;
        }
        let pid = view.mover_pid(node, m, by_name);
        let local = runtime.spawn(Sink { target: usize::MAX });
        node.link(&local, pid);
        self.links.push(LinkRec {
            node: w,
            mover: m,
            local,
            dead: false,
            excused: !view.lost_none(w),
        });
        Some(format!(
            "link #{}: a process of n{w} linked to mover {m} as {pid}",
            self.links.len() - 1
        ))
    }

    /// After every step: a linked process that died, died for a reason.
    pub fn check(&mut self, view: &View<'_>) -> Result<Vec<String>, String> {
        let mut lines = Vec::new();
        for (index, rec) in self.links.iter_mut().enumerate() {
            if view.nodes[rec.node].is_none() {
                continue;
            }
            rec.excused |= !view.lost_none(rec.node);
            if rec.dead || !rec.local.is_terminated() {
                continue;
            }
            rec.dead = true;
            let (_, _, lost) = view.movers[rec.mover];
            if !lost && !rec.excused {
                return Err(format!(
                    "link #{index} (n{} to mover {}) killed its process, but the mover lives and n{} has reached every node since",
                    rec.node, rec.mover, rec.node
                ));
            }
            lines.push(format!("link #{index} at n{} killed its process", rec.node));
        }
        Ok(lines)
    }

    /// At rest: a process linked to a mover out of its node's reach is dead.
    pub fn check_at_rest(&self, view: &View<'_>) -> Result<(), String> {
        for (index, rec) in self.links.iter().enumerate() {
            let (_, at, lost) = view.movers[rec.mover];
            if view.nodes[rec.node].is_none() || lost {
                continue;
            }
            if !view.reaches(rec.node, at) && !rec.local.is_terminated() {
                return Err(format!(
                    "link #{index} (n{} to mover {}) left its process alive, but the mover's node n{at} is gone for it",
                    rec.node, rec.mover
                ));
            }
        }
        Ok(())
    }
}

struct MonitorRec {
    watcher: usize,
    mover: usize,
    fired: Option<RemoteExit>,
}

/// Remote monitors of movers.
#[derive(Default)]
pub struct Monitors {
    placed: Vec<MonitorRec>,
    fired: Arc<Mutex<Vec<(usize, RemoteExit)>>>,
}

/// Monitors placed in one run, at most.
const MAX_MONITORS: usize = 40;

impl Monitors {
    /// Node `w` monitors mover `m` (by the pid its name has at `w`, or its first pid).
    pub fn place(&mut self, view: &View<'_>, w: usize, m: usize, by_name: bool) -> Option<String> {
        let node = view.nodes[w]?;
        if self.placed.len() >= MAX_MONITORS {
            return None;
        }
        let pid = view.mover_pid(node, m, by_name);
        let index = self.placed.len();
        let fired = Arc::clone(&self.fired);
        node.monitor_with(pid, move |reason| {
            if let Ok(mut fired) = fired.lock() {
                fired.push((index, reason));
            }
        });
        self.placed.push(MonitorRec {
            watcher: w,
            mover: m,
            fired: None,
        });
        Some(format!("monitor #{index}: n{w} watches mover {m} as {pid}"))
    }

    /// After every step: each notice is the first of its monitor, and has a reason.
    pub fn check(&mut self, view: &View<'_>) -> Result<Vec<String>, String> {
        let fresh: Vec<(usize, RemoteExit)> = match self.fired.lock() {
            Ok(mut fired) => fired.drain(..).collect(),
            Err(_) => return Err("the monitor record was poisoned".into()),
        };
        let mut lines = Vec::new();
        for (index, reason) in fresh {
            let Some(rec) = self.placed.get_mut(index) else {
                return Err(format!("a notice for monitor #{index}, never placed"));
            };
            if let Some(before) = &rec.fired {
                return Err(format!(
                    "monitors fire once: #{index} fired {reason} after {before}"
                ));
            }
            let (_, _, lost) = view.movers[rec.mover];
            let why = match &reason {
                RemoteExit::NoConnection => !view.lost_none(rec.watcher) || lost,
                _ => lost,
            };
            if !why {
                return Err(format!(
                    "monitor #{index} (n{} on mover {}) fired {reason}, but the mover lives and n{} reaches every node",
                    rec.watcher, rec.mover, rec.watcher
                ));
            }
            lines.push(format!(
                "monitor #{index} fired at n{}: {reason}",
                rec.watcher
            ));
            rec.fired = Some(reason);
        }
        Ok(lines)
    }

    /// At rest: a monitor of a mover its watcher cannot reach has fired (one that fired
    /// without a reason was caught when it fired, by [`Monitors::check`]).
    pub fn check_at_rest(&self, view: &View<'_>) -> Result<(), String> {
        for (index, rec) in self.placed.iter().enumerate() {
            if view.nodes[rec.watcher].is_none() {
                continue;
            }
            let (_, at, lost) = view.movers[rec.mover];
            if lost {
                continue;
            }
            if rec.fired.is_none() && !view.reaches(rec.watcher, at) {
                return Err(format!(
                    "monitor #{index} (n{} on mover {}) never fired, but the mover's node n{at} is gone for it",
                    rec.watcher, rec.mover
                ));
            }
        }
        Ok(())
    }
}

/// Registry churn: each node's name `churn-<i>` for its sink, registered or not.
#[derive(Default)]
pub struct Churn {
    registered: BTreeMap<usize, bool>,
}

impl Churn {
    /// Node `i` registers its churn name if it has none, or unregisters it.
    pub fn toggle(&mut self, view: &View<'_>, i: usize) -> Option<String> {
        let node = view.nodes[i]?;
        let name = format!("churn-{i}");
        let on = self.registered.entry(i).or_default();
        let sink = view.sinks[i];
        let line = match *on {
            true => format!("unregister {name}: {}", node.unregister(&name, sink)),
            false => match node.register(&name, sink) {
                Ok(()) => format!("register {name}: ok"),
                Err(e) => return Some(format!("register {name}: {e}")),
            },
        };
        *on = !*on;
        Some(line)
    }

    /// After every step: never two registrations of one churn name.
    pub fn check(&self, view: &View<'_>) -> Result<(), String> {
        for i in self.registered.keys() {
            let holders = view.net.tokens(&format!("whirl/sim/reg/churn-{i}/"));
            if holders.len() > 1 {
                return Err(format!(
                    "one holder per name: churn-{i} is registered {} times: {holders:?}",
                    holders.len()
                ));
            }
        }
        Ok(())
    }

    /// At rest: every node that reaches the owner sees what the owner did last.
    pub fn check_at_rest(&self, view: &View<'_>) -> Result<(), String> {
        for (&i, &on) in &self.registered {
            if view.nodes[i].is_none() {
                continue;
            }
            let expected: Vec<Pid> = if on { vec![view.sinks[i]] } else { vec![] };
            for (j, node) in view.nodes.iter().enumerate() {
                let Some(node) = node else { continue };
                if !view.reaches(j, i) || !view.reaches(i, j) {
                    continue;
                }
                let seen = node.whereis_all(&format!("churn-{i}"));
                if seen != expected {
                    return Err(format!(
                        "the registry disagrees at rest: n{j} sees churn-{i} as {seen:?}, n{i} registered {expected:?}"
                    ));
                }
            }
        }
        Ok(())
    }
}

struct SpawnRec {
    from: usize,
    to: usize,
    spawn: Option<sim::Spawn>,
}

/// Spawns through factories.
#[derive(Default)]
pub struct Spawns {
    under_way: Vec<SpawnRec>,
    /// Per target node: spawns answered with a pid (and the pids), and those in doubt.
    ok: BTreeMap<usize, Vec<Pid>>,
    in_doubt: BTreeMap<usize, u64>,
}

impl Spawns {
    /// Node `from` spawns a sink on node `to`, waiting up to `timeout`.
    pub fn start(
        &mut self,
        view: &View<'_>,
        from: usize,
        to: usize,
        timeout: Duration,
    ) -> Option<String> {
        let node = view.nodes[from]?;
        view.nodes[to]?;
        let spawn = sim::spawn_on(node, view.ids[to], FACTORY, &usize::MAX, timeout);
        let line = format!("spawn n{from} -> n{to} (timeout {timeout:?})");
        match spawn {
            Ok(spawn) => {
                self.under_way.push(SpawnRec {
                    from,
                    to,
                    spawn: Some(spawn),
                });
                Some(line)
            }
            Err(e) => Some(format!("{line}: refused: {e}")),
        }
    }

    /// Advances the spawns under way (those of live nodes); a line per one that ended.
    pub fn poll(&mut self, view: &View<'_>) -> Vec<String> {
        let mut lines = Vec::new();
        for rec in &mut self.under_way {
            if view.nodes[rec.from].is_none() || view.paused[rec.from] {
                continue;
            }
            let Some(outcome) = rec.spawn.as_mut().and_then(sim::Polled::poll) else {
                continue;
            };
            rec.spawn = None;
            match &outcome {
                Ok(pid) => self.ok.entry(rec.to).or_default().push(*pid),
                // A factory that failed, or an answer that never came: it may have run.
                Err(
                    SpawnRemoteError::Timeout
                    | SpawnRemoteError::NodeDown
                    | SpawnRemoteError::Failed(_),
                ) => *self.in_doubt.entry(rec.to).or_default() += 1,
                Err(_) => {}
            }
            lines.push(format!(
                "spawn n{} -> n{} ended: {outcome:?}",
                rec.from, rec.to
            ));
        }
        self.under_way.retain(|rec| rec.spawn.is_some());
        lines
    }

    /// At rest: every process a spawn answered for runs where it was spawned; no factory
    /// ran more often than spawns succeeded or ended in doubt (or are still waiting, their
    /// sender dead).
    pub fn check_at_rest(&self, view: &View<'_>, made: &[Arc<Mutex<u64>>]) -> Result<(), String> {
        for (to, node) in view.nodes.iter().enumerate() {
            let Some(node) = node else { continue };
            let ok = self.ok.get(&to).map_or(&[][..], Vec::as_slice);
            for pid in ok {
                if node.local::<Sink>(*pid).is_none() {
                    return Err(format!(
                        "a spawn on n{to} answered {pid}, which does not run there"
                    ));
                }
            }
            let waiting = self.under_way.iter().filter(|r| r.to == to).count() as u64;
            let doubt = self.in_doubt.get(&to).copied().unwrap_or(0) + waiting;
            let made = made[to].lock().map(|m| *m).unwrap_or(0);
            let ok = ok.len() as u64;
            if made < ok || made > ok + doubt {
                return Err(format!(
                    "factory on n{to} ran {made} times for {ok} spawns answered and {doubt} in doubt"
                ));
            }
        }
        Ok(())
    }
}
