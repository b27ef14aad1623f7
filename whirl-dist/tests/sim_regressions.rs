//! Regression tests, in the deterministic simulator ([`whirl_dist::sim`]), for the three
//! migration bugs of issue 34. Each is a scripted scenario on three nodes: S, the source; T,
//! the target; X, a third node. A `Mover` on S is exported and registered, and moves S → T
//! while clients on S and X post numbered `Mark`s to it (through its first pid, and on X also
//! through the pid its name leads to). The mover records every mark it handles with the node
//! whose runtime ran the turn.
//!
//! Nothing moves unless a test says so: each step delivers network events in the order the
//! test's [`Order`] picks (scripted orders that put one kind of traffic first, or seeded
//! random ones), runs every node's writers and tick, and runs the runtimes' turns. S runs no
//! turn until its mover is being handed over, so the marks posted before the move stay
//! queued and move with it. A run ends at rest (nothing left to deliver or run), where the
//! test checks what was handled against what its clients' posts had accepted.
//!
//! * bug 1, order broken by a migration with a queue:
//!   [`order_holds_when_the_mover_moves_with_a_queue`];
//! * bug 2, silent loss when the source dies right after `migrate` returned `Ok`:
//!   [`nothing_is_lost_silently_when_the_source_dies_after_migrate_returned`];
//! * bug 3, two live copies after a time limit shorter than a round trip:
//!   [`a_timeout_shorter_than_a_round_trip_never_leaves_two_copies`].

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use whirl::prelude::*;
use whirl::Addr;
use whirl_dist::sim::{self, Choice, MigrationResult, SimNet, SimTransport};
use whirl_dist::{MigrateError, Node, NodeConfig, NodeId, Pid, Remote, RemoteAddr};

/// The source, the target and the third node: their endpoints are numbered in this order.
const S: usize = 0;
const T: usize = 1;
const X: usize = 2;
const NODES: [&str; 3] = ["S", "T", "X"];

/// The name the mover is registered under.
const NAME: &str = "mover";

/// The orders scenarios 1 and 2 run in: the three scripted ones, then [`SEEDS`] seeded ones.
fn orders() -> impl Iterator<Item = Order> {
    [Order::ControlFirst, Order::ProcessLast, Order::DataFirst]
        .into_iter()
        .chain((1..=SEEDS).map(Order::Seeded))
}

/// How many seeded orders scenarios 1 and 2 run in.
const SEEDS: u64 = 12;

/// A numbered message of one client.
#[derive(Message, Serialize, Deserialize)]
struct Mark {
    client: usize,
    seq: u64,
}

impl Remote for Mark {
    const TAG: &'static str = "sim_regressions.Mark/1";
}

/// One mark handled: on which node, whose, its number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Handled {
    node: usize,
    client: usize,
    seq: u64,
}

thread_local! {
    /// The marks handled in the cluster this thread simulates (a stepped runtime runs its
    /// turns on the thread that asks it to), and the node whose runtime runs a turn now.
    static HANDLED: RefCell<Vec<Handled>> = const { RefCell::new(Vec::new()) };
    static RUNNING_ON: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// The process that moves. Its state travels; where it handled each mark is recorded.
#[process]
#[derive(Serialize, Deserialize)]
struct Mover {
    handled: u64,
}

#[process]
impl Mover {
    #[handle]
    fn mark(&mut self, Mark { client, seq }: Mark) {
        self.handled += 1;
        let node = RUNNING_ON.with(Cell::get);
        HANDLED.with(|h| h.borrow_mut().push(Handled { node, client, seq }));
    }
}

/// The order in which a run delivers what the network may deliver next.
#[derive(Clone, Copy, Debug)]
enum Order {
    /// Hellos, tokens and control frames (redirects, fences and their answers, `Relocated`,
    /// acknowledgements, the target's answers) as early as possible; then data to the new
    /// pid (and the probe); then posts to the old one (so a fence overtakes the posts sent
    /// before it); the process's own frame to T as late as possible (frames for it are
    /// held on S meanwhile).
    ControlFirst,
    /// As [`Order::ControlFirst`], but the process's frame is not delivered at all while the
    /// clients post during the migration (until the test waits for it to end): every frame
    /// for the mover meanwhile is held on S, and a long queue of redirects follows.
    ProcessLast,
    /// The reverse: S's data to T first, other data next, control frames as late as possible.
    /// (In both, ties go to the first choice, in the network's order.)
    DataFirst,
    /// Uniformly among the choices, from a generator seeded with this.
    Seeded(u64),
}

impl Order {
    /// Picks one of `choices` (never empty); `handing_over`: S is handing the mover over (its
    /// data to T is the process's frame, not the probe); `stall`: the process's frame waits
    /// even if nothing else may be delivered (`None` then).
    fn pick(
        self,
        choices: &[Choice],
        handing_over: bool,
        stall: bool,
        rng: &mut u64,
    ) -> Option<Choice> {
        let rank = |c: &Choice| -> u8 {
            let data = queue(c) == DATA;
            let (from, to) = (c.from.0, c.to.0);
            match self {
                Order::ControlFirst | Order::ProcessLast if !data => 0,
                Order::ControlFirst | Order::ProcessLast
                    if from == S && to == T && handing_over =>
                {
                    PROCESS_FRAME
                }
                Order::ControlFirst | Order::ProcessLast if to == S => 2,
                Order::ControlFirst | Order::ProcessLast => 1,
                Order::DataFirst if data && from == S && to == T => 0,
                Order::DataFirst if data => 1,
                Order::DataFirst => 2,
                Order::Seeded(_) => 0,
            }
        };
        match self {
            Order::Seeded(_) => Some(choices[(splitmix(rng) % choices.len() as u64) as usize]),
            _ => choices
                .iter()
                .copied()
                .min_by_key(rank)
                .filter(|c| !(stall && rank(c) == PROCESS_FRAME)),
        }
    }

    fn seed(self) -> u64 {
        match self {
            Order::ControlFirst => 101,
            Order::ProcessLast => 102,
            Order::DataFirst => 103,
            Order::Seeded(seed) => seed,
        }
    }
}

/// The rank of the process's frame in [`Order::ControlFirst`] and [`Order::ProcessLast`]:
/// last.
const PROCESS_FRAME: u8 = 3;

/// The data queue of a link (hellos and tokens are 0, control frames 1).
const DATA: usize = 2;

/// Which of its link's queues `choice` delivers from.
fn queue(choice: &Choice) -> usize {
    choice.priority()
}

/// splitmix64.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// How a client addresses the mover.
#[derive(Clone, Copy, Debug)]
enum Via {
    /// Through its first pid (following the redirects).
    Pid,
    /// Through the pid its node's registry holds for [`NAME`] at each post.
    Name,
}

/// One sender of marks: a node, a way to address the mover, what it posted.
struct Client {
    node: usize,
    via: Via,
    /// Its addresses so far (a bounce finds its handler through the address it was posted
    /// with, so none is dropped).
    addrs: Vec<RemoteAddr<Mark>>,
    next: u64,
    accepted: BTreeSet<u64>,
    /// Marks given back to its bounce handler.
    returned: Arc<Mutex<Vec<u64>>>,
    /// The first number it posted after the migration ended.
    after_migration: Option<u64>,
}

impl Client {
    fn returned(&self) -> Vec<u64> {
        self.returned.lock().expect("bounce record").clone()
    }
}

/// One simulated node.
struct Member {
    endpoint: Arc<SimTransport>,
    runtime: Option<Runtime>,
    node: Option<Node>,
}

/// A three-node cluster on a [`SimNet`], with the mover on S and clients posting to it.
struct Cluster {
    net: SimNet,
    members: Vec<Member>,
    ids: Vec<NodeId>,
    /// The mover's first pid, and its local address on S (to migrate it).
    first: Pid,
    mover: Addr<Mover>,
    clients: Vec<Client>,
    order: Order,
    rng: u64,
    migration: Option<sim::Migration>,
    outcome: Option<MigrationResult>,
    /// S runs no turn until its mover is being handed over (its queue builds up).
    hold_source: bool,
    /// In [`Order::ProcessLast`], the process's frame is not delivered at all (until the
    /// test waits for the migration to end, or for rest).
    stall_process_frame: bool,
    /// S is killed as soon as the migration returns `Ok`.
    kill_on_ok: bool,
    /// Messages queued in the runtime of a node when it was killed (they died with it).
    died_queued: u64,
    /// What was delivered to T so far, by the header's name (`Probe`, `Migrate`, ...).
    at_target: BTreeSet<String>,
    /// The last steps, for a failure's report.
    trace: VecDeque<String>,
}

impl Cluster {
    /// A cluster at rest, every node Up at every other, the mover on S, one client per entry
    /// of `clients` (its node and how it addresses the mover).
    fn new(order: Order, clients: &[(usize, Via)]) -> Cluster {
        HANDLED.with(|h| h.borrow_mut().clear());
        let net = SimNet::new(order.seed());
        let members: Vec<Member> = NODES
            .iter()
            .map(|_| {
                let endpoint = net.endpoint();
                let runtime = Runtime::builder()
                    .stepped()
                    .build()
                    .expect("a stepped runtime starts no threads");
                let config = NodeConfig::new("sim").insecure_plaintext("simulation");
                let node = sim::start_node(config, &endpoint).expect("a simulated node starts");
                node.accept_migrations::<Mover, _>(
                    "sim_regressions.Mover/1",
                    runtime.default_group(),
                    |e| e.accept::<Mark>(),
                )
                .expect("migrations of movers accepted");
                Member {
                    endpoint,
                    runtime: Some(runtime),
                    node: Some(node),
                }
            })
            .collect();
        let ids = members
            .iter()
            .map(|m| m.node.as_ref().expect("started").id())
            .collect();
        let source = members[S].node.as_ref().expect("started");
        let mover = members[S]
            .runtime
            .as_ref()
            .expect("started")
            .spawn(Mover { handled: 0 });
        let first = source
            .export(&mover)
            .accept::<Mark>()
            .build()
            .expect("the mover is exported");
        source.register(NAME, first).expect("the mover's name");
        let mut cluster = Cluster {
            net,
            members,
            ids,
            first,
            mover,
            clients: Vec::new(),
            order,
            rng: order.seed(),
            migration: None,
            outcome: None,
            hold_source: true,
            stall_process_frame: false,
            kill_on_ok: false,
            died_queued: 0,
            at_target: BTreeSet::new(),
            trace: VecDeque::new(),
        };
        cluster.rest();
        cluster.stall_process_frame = matches!(order, Order::ProcessLast);
        for &(node, via) in clients {
            cluster.clients.push(Client {
                node,
                via,
                addrs: Vec::new(),
                next: 1,
                accepted: BTreeSet::new(),
                returned: Arc::new(Mutex::new(Vec::new())),
                after_migration: None,
            });
        }
        cluster
    }

    fn node(&self, i: usize) -> Option<&Node> {
        self.members[i].node.as_ref()
    }

    fn note(&mut self, line: String) {
        let mut line = line;
        for (i, id) in self.ids.iter().enumerate() {
            line = line
                .replace(&id.to_string(), NODES[i])
                .replace(&id.as_u128().to_string(), NODES[i]);
        }
        if self.trace.len() == 80 {
            self.trace.pop_front();
        }
        self.trace.push_back(line);
    }

    /// Client `c` posts its next mark (nothing if its node is dead, or the name it follows
    /// has no holder there now).
    fn post(&mut self, c: usize) {
        let client = &mut self.clients[c];
        let Some(node) = self.members[client.node].node.as_ref() else {
            return;
        };
        let pid = match client.via {
            Via::Pid => Some(self.first),
            Via::Name => node.whereis::<Mark>(NAME).map(|addr| addr.pid()),
        };
        let Some(pid) = pid else {
            return;
        };
        if client.addrs.last().is_none_or(|addr| addr.pid() != pid) {
            let returned = Arc::clone(&client.returned);
            let addr = node.remote::<Mark>(pid).on_bounce(move |back| {
                returned.lock().expect("bounce record").push(back.msg.seq);
            });
            client.addrs.push(addr);
        }
        let addr = client.addrs.last().expect("just pushed");
        let seq = client.next;
        client.next += 1;
        if self.migration.is_none() && self.outcome.is_some() {
            client.after_migration.get_or_insert(seq);
        }
        let accepted = addr.post(Mark { client: c, seq }).is_ok();
        if accepted {
            client.accepted.insert(seq);
        }
        let line = format!(
            "post {}'s client {c} #{seq} to {pid}: {}",
            NODES[client.node],
            if accepted { "ok" } else { "refused" }
        );
        self.note(line);
    }

    fn post_all(&mut self) {
        for c in 0..self.clients.len() {
            self.post(c);
        }
    }

    /// Delivers one network event, as the order picks; `false` if there was none.
    fn deliver(&mut self) -> bool {
        let choices = self.net.choices();
        if choices.is_empty() {
            return false;
        }
        let handing_over = self.handing_over();
        let stall = self.stall_process_frame;
        let Some(choice) = self
            .order
            .pick(&choices, handing_over, stall, &mut self.rng)
        else {
            return false;
        };
        let what = self.net.deliver(choice);
        if let sim::Delivered::Payload {
            frame: Some(frame), ..
        } = &what
        {
            if choice.to.0 == T {
                // "from <node> <Header> {...}": the header's name.
                if let Some(header) = frame.split(' ').nth(2) {
                    self.at_target.insert(header.to_owned());
                }
            }
        }
        self.note(format!(
            "net {} -> {}: {what:?}",
            NODES[choice.from.0], NODES[choice.to.0]
        ));
        self.poll();
        true
    }

    /// One turn of node `i`'s runtime (none on S while it is held); whether one ran.
    fn turn(&mut self, i: usize) -> bool {
        if i == S && self.hold_source && !self.handing_over() {
            return false;
        }
        let Some(runtime) = &self.members[i].runtime else {
            return false;
        };
        RUNNING_ON.with(|r| r.set(i));
        let Some(handled) = runtime.run_one(|_| 0) else {
            return false;
        };
        self.note(format!("turn {}: {handled} handled", NODES[i]));
        self.poll();
        true
    }

    /// Whether S holds frames for a moving process: the mover is being handed over.
    fn handing_over(&self) -> bool {
        self.node(S)
            .is_some_and(|node| sim::describe_node(node).contains("moving: [("))
    }

    /// Every live node's tick, turns (until none is ready) and background work (writers,
    /// deferred work); whether anything ran.
    fn work(&mut self) -> bool {
        let mut did = false;
        for i in 0..self.members.len() {
            if let Some(node) = self.node(i) {
                sim::tick_node(node, self.net.now());
            }
            while self.turn(i) {
                did = true;
            }
            if let Some(node) = self.node(i) {
                did |= !sim::run_node(node).is_idle();
            }
            self.poll();
        }
        did
    }

    /// A step: up to four deliveries (a scripted order), or up to a random number from 0 to
    /// 5 (a seeded one: the network falls behind at times), then every node's work.
    fn step(&mut self) {
        let deliveries = match self.order {
            Order::Seeded(_) => splitmix(&mut self.rng) % 6,
            _ => 4,
        };
        for _ in 0..deliveries {
            self.deliver();
        }
        self.work();
    }

    /// `steps` steps, each after a post of every client.
    fn posting(&mut self, steps: usize) {
        for _ in 0..steps {
            self.post_all();
            self.step();
        }
    }

    /// Steps (each after a post of every client if `posting`) until the migration ended.
    fn until_migrated(&mut self, posting: bool) {
        self.stall_process_frame = false;
        for _ in 0..10_000 {
            if self.migration.is_none() {
                return;
            }
            if posting {
                self.post_all();
            }
            self.step();
        }
        panic!("the migration never ended\n{}", self.report());
    }

    /// Starts moving the mover S → T with `timeout`, and polls it once (the probe leaves).
    fn start_migration(&mut self, timeout: Duration) {
        let source = self.node(S).expect("S is alive");
        let migration = sim::migrate(source, &self.mover, self.ids[T], timeout);
        self.migration = Some(migration);
        self.note(format!("migrate S -> T (timeout {timeout:?})"));
        self.poll();
    }

    /// Polls the migration; once it ends, S runs turns again (and, with `kill_on_ok`, S is
    /// killed at once if it returned `Ok`).
    fn poll(&mut self) {
        let Some(migration) = self.migration.as_mut() else {
            return;
        };
        let Some(outcome) = migration.poll() else {
            return;
        };
        self.migration = None;
        self.hold_source = false;
        self.note(format!("migration ended: {outcome:?}"));
        let kill = self.kill_on_ok && outcome.is_ok();
        self.outcome = Some(outcome);
        if kill {
            self.kill(S);
        }
    }

    /// Kills node `i`, as the simulator's `World::kill` does: its endpoint cut from everyone
    /// for good, its node and runtime dropped (with what is queued in it).
    fn kill(&mut self, i: usize) {
        self.net.kill(self.members[i].endpoint.id());
        if let Some(runtime) = &self.members[i].runtime {
            self.died_queued += runtime.counts().queued();
        }
        drop(self.members[i].node.take());
        drop(self.members[i].runtime.take());
        self.note(format!("KILL {}", NODES[i]));
    }

    /// The clock jumps `by` and every live node ticks (asks and probes past their deadline
    /// time out), then the migration is polled.
    fn expire(&mut self, by: Duration) {
        self.net.advance(by);
        for i in 0..self.members.len() {
            if let Some(node) = self.node(i) {
                sim::tick_node(node, self.net.now());
            }
        }
        self.note(format!("clock +{by:?}, every node ticked"));
        self.poll();
    }

    /// Runs to rest, without posts: rounds of every node's work and every delivery, the
    /// clock 5 ms further each round, until a round does nothing.
    fn rest(&mut self) {
        self.stall_process_frame = false;
        for _ in 0..10_000 {
            self.net.advance(Duration::from_millis(5));
            let mut did = self.work();
            while self.deliver() {
                did = true;
            }
            if !did && self.migration.is_none() {
                return;
            }
        }
        panic!("the cluster never came to rest\n{}", self.report());
    }

    /// Every mark handled so far, in order.
    fn handled(&self) -> Vec<Handled> {
        HANDLED.with(|h| h.borrow().clone())
    }

    /// Processes alive in each live node's runtime: the mover's copies (it is the only
    /// process of the cluster).
    fn copies(&self) -> Vec<(usize, u64)> {
        (0..self.members.len())
            .filter_map(|i| {
                let runtime = self.members[i].runtime.as_ref()?;
                let live = runtime.counts().live_processes();
                (live > 0).then_some((i, live))
            })
            .collect()
    }

    /// The run so far, for a failure message: the order, the outcome, the last steps, each
    /// live node's protocol state.
    fn report(&self) -> String {
        let mut text = format!(
            "order {:?}, migration {:?}\nlast steps:\n",
            self.order, self.outcome
        );
        for line in &self.trace {
            text.push_str("  ");
            text.push_str(line);
            text.push('\n');
        }
        for (i, member) in self.members.iter().enumerate() {
            if let Some(node) = &member.node {
                let mut state = sim::describe_node(node);
                for (k, id) in self.ids.iter().enumerate() {
                    state = state.replace(&id.to_string(), NODES[k]);
                }
                text.push_str(&format!("{}: {state}\n", NODES[i]));
            }
        }
        text
    }

    /// Per-sender FIFO: each client's marks were handled in increasing order, none twice,
    /// none that was not accepted.
    fn check_fifo(&self) -> Result<(), String> {
        let mut last: BTreeMap<usize, u64> = BTreeMap::new();
        for h in self.handled() {
            let client = &self.clients[h.client];
            if !client.accepted.contains(&h.seq) {
                return Err(format!(
                    "client {} ({:?} on {}): mark #{} handled on {}, never accepted",
                    h.client, client.via, NODES[client.node], h.seq, NODES[h.node]
                ));
            }
            let before = last.insert(h.client, h.seq).unwrap_or(0);
            if h.seq <= before {
                return Err(format!(
                    "per-sender FIFO: client {} ({:?} on {}): mark #{} handled on {} after #{before}",
                    h.client, client.via, NODES[client.node], h.seq, NODES[h.node]
                ));
            }
        }
        Ok(())
    }

    /// Every mark client `c` had accepted was handled exactly once, and none came back.
    fn check_exactly_once(&self, c: usize) -> Result<(), String> {
        let client = &self.clients[c];
        let handled: Vec<u64> = self
            .handled()
            .iter()
            .filter(|h| h.client == c)
            .map(|h| h.seq)
            .collect();
        let distinct: BTreeSet<u64> = handled.iter().copied().collect();
        let missing: Vec<u64> = client.accepted.difference(&distinct).copied().collect();
        let returned = client.returned();
        if distinct.len() != handled.len() || !missing.is_empty() || !returned.is_empty() {
            return Err(format!(
                "client {c} ({:?} on {}): accepted {}, handled {} ({} distinct), not handled {missing:?}, returned {returned:?}",
                client.via,
                NODES[client.node],
                client.accepted.len(),
                handled.len(),
                distinct.len()
            ));
        }
        Ok(())
    }

    /// Fails the test with `what` and the run's report if `check` failed.
    fn expect(&self, check: Result<(), String>) {
        if let Err(what) = check {
            panic!("{what}\n{}", self.report());
        }
    }
}

/// **Bug 1: order broke when a process migrated with a queue.** Redirected newer messages
/// could overtake the queue handed over to the target (or the messages still coming back
/// from the source).
///
/// Marks pile up in the mover's queue on S (S runs no turn), posted by a client on S and two
/// on X (one through the pid, one through the name), which keep posting before, during and
/// after the move; the move then carries the queue, and every later mark reaches T through
/// the redirects, the fences and their flushes. Run in every order of [`orders`]: control
/// frames (redirects, `Relocated`, fences) as early as possible and the process's frame as
/// late as possible (once with the frame held back until the clients stop posting, so that
/// everything they post during the move is held on S), the reverse, and twelve seeded ones.
/// Checks that each client's marks were
/// handled in the order posted, each accepted one exactly once, none bounced, all on T (so
/// the queue moved), and that the move returned `Ok`.
#[test]
fn order_holds_when_the_mover_moves_with_a_queue() {
    let clients = [(S, Via::Pid), (X, Via::Pid), (X, Via::Name)];
    for order in orders() {
        let mut cluster = Cluster::new(order, &clients);
        cluster.posting(10);
        cluster.start_migration(Duration::from_secs(10));
        cluster.posting(40);
        cluster.until_migrated(true);
        cluster.posting(10);
        cluster.rest();
        cluster.expect(cluster.check_fifo());
        for c in 0..clients.len() {
            cluster.expect(cluster.check_exactly_once(c));
        }
        let moved = cluster.members[S]
            .runtime
            .as_ref()
            .map_or(0, |r| r.counts().moved);
        let elsewhere = cluster.handled().into_iter().find(|h| h.node != T);
        let moved_ok = matches!(&cluster.outcome, Some(Ok(pid)) if pid.node() == cluster.ids[T]);
        cluster.expect(match (moved_ok, moved, elsewhere) {
            (false, _, _) => Err("the mover did not move to T".to_owned()),
            (_, 0, _) => Err("no queue moved with the mover".to_owned()),
            (_, _, Some(h)) => Err(format!("a mark was handled on {}: {h:?}", NODES[h.node])),
            _ => Ok(()),
        });
    }
}

/// **Bug 2: silent loss when the source died right after `migrate` returned `Ok`.** The
/// source acknowledged frames it held for the moving process before it had sent them back;
/// killed before it did, the frames were gone, and their sender had counted them delivered.
///
/// Clients on S and X post to the mover while it moves S → T with a queue; S is killed (its
/// endpoint cut, its node and runtime dropped) the moment `Migration::poll` returns `Ok`,
/// before its writers publish the redirects of what it held. At rest, for X's clients (S's
/// died with it): every accepted mark was handled, returned to its bounce handler, counted in
/// doubt by X (`DistCounts::in_doubt`) or died queued in S's runtime; and no more were
/// handled or returned than accepted. Run in every order of [`orders`]; the kill must have left
/// marks in doubt in at least one of them (it caught frames on their way), or the test
/// proves nothing.
#[test]
fn nothing_is_lost_silently_when_the_source_dies_after_migrate_returned() {
    let clients = [(S, Via::Pid), (X, Via::Pid), (X, Via::Name)];
    let mut caught = 0;
    for order in orders() {
        let mut cluster = Cluster::new(order, &clients);
        cluster.kill_on_ok = true;
        cluster.posting(10);
        cluster.start_migration(Duration::from_secs(10));
        cluster.posting(20);
        cluster.until_migrated(true);
        cluster.posting(10);
        cluster.rest();
        cluster.expect(match (&cluster.outcome, cluster.node(S)) {
            (Some(Ok(_)), None) => Ok(()),
            _ => Err("the migration did not return Ok, or S was not killed".to_owned()),
        });
        cluster.expect(cluster.check_fifo());
        let judged: Vec<usize> = (0..clients.len()).filter(|&c| clients[c].0 == X).collect();
        let accepted: u64 = judged
            .iter()
            .map(|&c| cluster.clients[c].accepted.len() as u64)
            .sum();
        let returned: u64 = judged
            .iter()
            .map(|&c| cluster.clients[c].returned().len() as u64)
            .sum();
        let handled = cluster
            .handled()
            .iter()
            .filter(|h| judged.contains(&h.client))
            .count() as u64;
        let counts = cluster.node(X).expect("X is alive").counts();
        let in_doubt = counts.in_doubt;
        let explained = handled + returned + in_doubt + cluster.died_queued;
        let figures = format!(
            "X's clients: accepted {accepted}, handled {handled}, returned {returned}, in doubt {in_doubt}, died queued in S {}; X's {counts:?}",
            cluster.died_queued
        );
        cluster.expect(if handled + returned > accepted {
            Err(format!("more handled or returned than accepted: {figures}"))
        } else if accepted > explained {
            Err(format!(
                "silent loss: {} of X's accepted marks are neither handled, returned, in doubt nor died queued: {figures}",
                accepted - explained
            ))
        } else {
            Ok(())
        });
        caught += u32::from(in_doubt > 0);
    }
    assert!(
        caught > 0,
        "no order left a mark in doubt: the kill never caught a frame on its way"
    );
}

/// When, in [`a_timeout_shorter_than_a_round_trip_never_leaves_two_copies`], the clock
/// jumps past the migration's 1 ms limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expiry {
    /// At once: the probe has not reached T.
    BeforeProbe,
    /// T has the probe; its answer has not reached S.
    ProbeAtTarget,
    /// The probe was answered and the mover handed over: its frame is on its way to T.
    ProcessSent,
    /// T restored the mover; its answer has not reached S.
    ProcessAtTarget,
}

impl Expiry {
    fn reached(self, cluster: &Cluster) -> bool {
        match self {
            Expiry::BeforeProbe => true,
            Expiry::ProbeAtTarget => cluster.at_target.contains("Probe"),
            Expiry::ProcessSent => cluster.members[S]
                .runtime
                .as_ref()
                .is_some_and(|r| r.counts().terminated > 0),
            Expiry::ProcessAtTarget => cluster.at_target.contains("Migrate"),
        }
    }
}

/// **Bug 3: two live copies when `migrate`'s timeout was shorter than a round trip.** The
/// source gave up waiting for the target's answer to the process it had sent and restored it
/// locally, while the target had started it too.
///
/// The mover, with a queue, is migrated S → T with a 1 ms limit while clients on S and X
/// post; the clock then jumps 50 ms and every node ticks, before the target's answer is
/// delivered: at once, with the probe at T, with the process on its way to T, and with the
/// process restored at T; each in the two scripted orders and two seeded ones. The limit
/// covers the probe only: the first two must be refused with the mover untouched on S, the
/// last two must move it. Checks, at rest, that exactly one node runs a copy (the runtimes'
/// live processes; `Node::local` finds it where it should be), that each accepted mark was
/// handled exactly once and in order (two copies would each handle the moved queue), that
/// every mark, those posted after the migration ended included, was handled on that copy's
/// node (S runs no turn before the hand-over), and that the name has one holder.
#[test]
fn a_timeout_shorter_than_a_round_trip_never_leaves_two_copies() {
    let clients = [(S, Via::Pid), (X, Via::Pid), (X, Via::Name)];
    let expiries = [
        Expiry::BeforeProbe,
        Expiry::ProbeAtTarget,
        Expiry::ProcessSent,
        Expiry::ProcessAtTarget,
    ];
    for expiry in expiries {
        for order in [
            Order::ControlFirst,
            Order::DataFirst,
            Order::Seeded(1),
            Order::Seeded(2),
        ] {
            let mut cluster = Cluster::new(order, &clients);
            cluster.posting(10);
            cluster.start_migration(Duration::from_millis(1));
            let mut i = 0;
            while !expiry.reached(&cluster) {
                assert!(i < 10_000, "{expiry:?} never came\n{}", cluster.report());
                if i % 8 == 0 {
                    cluster.post_all();
                }
                // One delivery at a time: the answer that follows must not be delivered.
                cluster.deliver();
                if !expiry.reached(&cluster) {
                    cluster.work();
                }
                i += 1;
            }
            cluster.note(format!("{expiry:?}"));
            cluster.expire(Duration::from_millis(50));
            cluster.posting(10);
            cluster.until_migrated(true);
            cluster.posting(10);
            cluster.rest();
            check_one_copy(&cluster, expiry);
        }
    }
}

/// The checks of [`a_timeout_shorter_than_a_round_trip_never_leaves_two_copies`] at rest.
fn check_one_copy(cluster: &Cluster, expiry: Expiry) {
    let copies = cluster.copies();
    cluster.expect(match copies.as_slice() {
        [(_, 1)] => Ok(()),
        _ => Err(format!(
            "{expiry:?}: two live copies (or none): live movers per node {:?}",
            copies
                .iter()
                .map(|(i, n)| (NODES[*i], *n))
                .collect::<Vec<_>>()
        )),
    });
    cluster.expect(cluster.check_fifo());
    for c in 0..cluster.clients.len() {
        cluster.expect(cluster.check_exactly_once(c));
    }
    // Where the copy runs, and its pid there.
    let (at, pid) = match &cluster.outcome {
        Some(Ok(pid)) => (T, *pid),
        Some(Err(MigrateError::Failed { restored_as, .. })) => (S, *restored_as),
        _ => (S, cluster.first),
    };
    let found = cluster
        .node(at)
        .and_then(|node| node.local::<Mover>(pid))
        .is_some();
    cluster.expect(match copies.first() {
        Some((i, _)) if *i == at && found => Ok(()),
        _ => Err(format!(
            "{expiry:?}: the copy should run on {} as {pid} (found there: {found})",
            NODES[at]
        )),
    });
    // S runs no turn before the hand-over, so the one copy handled every mark.
    let stray = cluster.handled().into_iter().find(|h| h.node != at);
    cluster.expect(match stray {
        Some(h) => {
            let after = cluster.clients[h.client].after_migration;
            Err(format!(
                "{expiry:?}: a mark posted {} the migration ended was handled on {}, the copy runs on {}: {h:?}",
                match after.is_some_and(|first| h.seq >= first) {
                    true => "after",
                    false => "before",
                },
                NODES[h.node],
                NODES[at]
            ))
        }
        None => Ok(()),
    });
    let holders = cluster.net.tokens(&format!("whirl/sim/reg/{NAME}/"));
    cluster.expect(match holders.len() {
        1 => Ok(()),
        n => Err(format!("{expiry:?}: the name has {n} holders: {holders:?}")),
    });
    let expected_ok = matches!(expiry, Expiry::ProcessSent | Expiry::ProcessAtTarget);
    let ok = matches!(cluster.outcome, Some(Ok(_)));
    let refused = matches!(cluster.outcome, Some(Err(MigrateError::Refused { .. })));
    cluster.expect(match (expected_ok, ok, refused) {
        (true, true, _) | (false, _, true) => Ok(()),
        _ => Err(format!(
            "{expiry:?}: the time limit covers the probe only: expected {}",
            if expected_ok { "Ok" } else { "Refused" }
        )),
    });
}
