//! actix 0.13: actors with a `Context`, messages sent with `Addr::do_send` (which queues even
//! past the mailbox capacity, so sending never waits, like `post`).
//!
//! actix has no work-stealing pool: each actor lives on one arbiter (a thread with a
//! single-threaded tokio runtime) for its whole life. To use 2 worker threads, a `System` is
//! created on the main thread (never run: it only registers the arbiters) and 2 `Arbiter`s are
//! started; actor `i` of `n` is started on arbiter `i * 2 / n` with `Actor::start_in_arbiter`,
//! so each arbiter holds a contiguous half (ring neighbours share a thread except at the two
//! seams; the two ping-pong players are on different threads; the chameneos broker shares
//! arbiter 0 with the first half of the creatures). The producer of the counting and fork-join
//! rows is the main thread, outside every arbiter.

use std::sync::mpsc::{channel, Sender};
use std::time::Instant;

use actix::prelude::*;

use crate::common::{self, Colour, Mall, MallAction, Outcome, Sizes, Workload};

/// The two worker arbiters, and the system they belong to.
struct Arbiters {
    _system: SystemRunner,
    arbiters: [Arbiter; 2],
}

impl Arbiters {
    fn new() -> Arbiters {
        let system = System::new();
        Arbiters {
            _system: system,
            arbiters: [Arbiter::new(), Arbiter::new()],
        }
    }

    /// The arbiter actor `i` of `n` is started on.
    fn for_actor(&self, i: u64, n: u64) -> ArbiterHandle {
        let index = (i * 2 / n.max(1)).min(1) as usize;
        self.arbiters[index].handle()
    }

    fn start<A, F>(&self, i: u64, n: u64, make: F) -> Addr<A>
    where
        A: Actor<Context = Context<A>>,
        F: FnOnce() -> A + Send + 'static,
    {
        A::start_in_arbiter(&self.for_actor(i, n), move |_| make())
    }
}

pub fn run(workload: Workload, sizes: &Sizes) -> Outcome {
    let arbiters = Arbiters::new();
    let outcome = match workload {
        Workload::PingPong => ping_pong(&arbiters, sizes.ping_pong_round_trips),
        Workload::Counting => counting(&arbiters, sizes.counting_messages),
        Workload::ForkJoin => {
            fork_join(&arbiters, sizes.fork_join_actors, sizes.fork_join_per_actor)
        }
        Workload::Ring => ring(&arbiters, sizes.ring_actors, sizes.ring_hops),
        Workload::Spawn => common::measure_spawn(sizes.spawn_actors, || {
            spawn_all(&arbiters, sizes.spawn_actors)
        }),
        Workload::Chameneos => chameneos(
            &arbiters,
            sizes.chameneos_creatures,
            sizes.chameneos_meetings,
        ),
    };
    // The child exits right after printing: no orderly stop of the arbiters.
    std::mem::forget(arbiters);
    outcome
}

/// Waits until `n` setup messages have been handled (each handler acknowledges on `acks`).
fn wait_setup(acks: &std::sync::mpsc::Receiver<u64>, n: u64) {
    common::collect(acks, n, "actix setup");
}

// ---------------------------------------------------------------------------------------------
// ping-pong

#[derive(Message)]
#[rtype(result = "()")]
struct Peer(Addr<Player>, Sender<u64>);

#[derive(Message)]
#[rtype(result = "()")]
struct Ball(u64);

struct Player {
    peer: Option<Addr<Player>>,
    handled: u64,
    done: Sender<u64>,
}

impl Actor for Player {
    type Context = Context<Self>;
}

impl Handler<Peer> for Player {
    type Result = ();

    fn handle(&mut self, Peer(peer, ack): Peer, _: &mut Context<Self>) {
        self.peer = Some(peer);
        let _ = ack.send(0);
    }
}

impl Handler<Ball> for Player {
    type Result = ();

    fn handle(&mut self, Ball(left): Ball, _: &mut Context<Self>) {
        self.handled += 1;
        match &self.peer {
            Some(peer) if left > 0 => peer.do_send(Ball(left - 1)),
            _ => {
                let _ = self.done.send(self.handled);
            }
        }
    }
}

fn ping_pong(arbiters: &Arbiters, round_trips: u64) -> Outcome {
    let (done_tx, done_rx) = channel();
    let (ack_tx, ack_rx) = channel();
    let players: Vec<Addr<Player>> = (0..2)
        .map(|i| {
            let done = done_tx.clone();
            arbiters.start(i, 2, move || Player {
                peer: None,
                handled: 0,
                done,
            })
        })
        .collect();
    players[0].do_send(Peer(players[1].clone(), ack_tx.clone()));
    players[1].do_send(Peer(players[0].clone(), ack_tx));
    wait_setup(&ack_rx, 2);
    let hops = 2 * round_trips;
    let start = Instant::now();
    players[0].do_send(Ball(hops));
    let handled = done_rx.recv().expect("ping-pong: no report");
    let elapsed = start.elapsed();
    assert_eq!(handled, round_trips + 1, "ping-pong: lost messages");
    Outcome::new(hops, elapsed)
}

// ---------------------------------------------------------------------------------------------
// counting

#[derive(Message)]
#[rtype(result = "()")]
struct Count(#[allow(dead_code)] u64);

struct Counter {
    count: u64,
    expected: u64,
    done: Sender<u64>,
}

impl Actor for Counter {
    type Context = Context<Self>;
}

impl Handler<Count> for Counter {
    type Result = ();

    fn handle(&mut self, _: Count, _: &mut Context<Self>) {
        self.count += 1;
        if self.count == self.expected {
            let _ = self.done.send(self.count);
        }
    }
}

fn counting(arbiters: &Arbiters, messages: u64) -> Outcome {
    let (done_tx, done_rx) = channel();
    let counter = arbiters.start(0, 1, move || Counter {
        count: 0,
        expected: messages,
        done: done_tx,
    });
    let start = Instant::now();
    for i in 0..messages {
        counter.do_send(Count(i));
    }
    let counted = done_rx.recv().expect("counting: no report");
    let elapsed = start.elapsed();
    assert_eq!(counted, messages, "counting: lost messages");
    Outcome::new(messages, elapsed)
}

// ---------------------------------------------------------------------------------------------
// fork-join

#[derive(Message)]
#[rtype(result = "()")]
struct Work(u64);

struct Cruncher {
    acc: u64,
    left: u64,
    done: Sender<u64>,
}

impl Actor for Cruncher {
    type Context = Context<Self>;
}

impl Handler<Work> for Cruncher {
    type Result = ();

    fn handle(&mut self, Work(x): Work, _: &mut Context<Self>) {
        self.acc = common::crunch(self.acc, x);
        self.left -= 1;
        if self.left == 0 {
            let _ = self.done.send(self.acc);
        }
    }
}

fn fork_join(arbiters: &Arbiters, actors: u64, per_actor: u64) -> Outcome {
    let (done_tx, done_rx) = channel();
    let workers: Vec<Addr<Cruncher>> = (0..actors)
        .map(|i| {
            let done = done_tx.clone();
            arbiters.start(i, actors, move || Cruncher {
                acc: 0,
                left: per_actor,
                done,
            })
        })
        .collect();
    let start = Instant::now();
    for i in 0..per_actor {
        for worker in &workers {
            worker.do_send(Work(i));
        }
    }
    let accs = common::collect(&done_rx, actors, "fork-join");
    let elapsed = start.elapsed();
    common::check_fork_join(&accs, actors, per_actor);
    Outcome::new(actors * per_actor, elapsed)
}

// ---------------------------------------------------------------------------------------------
// ring

#[derive(Message)]
#[rtype(result = "()")]
struct Next(Addr<Node>, Sender<u64>);

/// The token carries the number of hops done so far.
#[derive(Message)]
#[rtype(result = "()")]
struct Token(u64);

struct Node {
    next: Option<Addr<Node>>,
    hops: u64,
    done: Sender<u64>,
}

impl Actor for Node {
    type Context = Context<Self>;
}

impl Handler<Next> for Node {
    type Result = ();

    fn handle(&mut self, Next(next, ack): Next, _: &mut Context<Self>) {
        self.next = Some(next);
        let _ = ack.send(0);
    }
}

impl Handler<Token> for Node {
    type Result = ();

    fn handle(&mut self, Token(done): Token, _: &mut Context<Self>) {
        let done = done + 1;
        match &self.next {
            Some(next) if done < self.hops => next.do_send(Token(done)),
            _ => {
                let _ = self.done.send(done);
            }
        }
    }
}

fn ring(arbiters: &Arbiters, actors: u64, hops: u64) -> Outcome {
    let (done_tx, done_rx) = channel();
    let (ack_tx, ack_rx) = channel();
    let nodes: Vec<Addr<Node>> = (0..actors)
        .map(|i| {
            let done = done_tx.clone();
            arbiters.start(i, actors, move || Node {
                next: None,
                hops,
                done,
            })
        })
        .collect();
    for (i, node) in nodes.iter().enumerate() {
        node.do_send(Next(nodes[(i + 1) % nodes.len()].clone(), ack_tx.clone()));
    }
    wait_setup(&ack_rx, actors);
    let start = Instant::now();
    nodes[0].do_send(Token(0));
    let done = done_rx.recv().expect("ring: no report");
    let elapsed = start.elapsed();
    assert_eq!(done, hops, "ring: lost hops");
    Outcome::new(hops, elapsed)
}

// ---------------------------------------------------------------------------------------------
// spawn

#[derive(Message)]
#[rtype(result = "()")]
struct Wake;

/// An actor that handles one message and then idles; it keeps nothing.
struct Idle;

impl Actor for Idle {
    type Context = Context<Self>;
}

impl Handler<Wake> for Idle {
    type Result = ();

    fn handle(&mut self, _: Wake, _: &mut Context<Self>) {
        common::spawn_handled();
    }
}

fn spawn_all(arbiters: &Arbiters, n: u64) -> Vec<Addr<Idle>> {
    (0..n)
        .map(|i| {
            let addr = arbiters.start(i, n, || Idle);
            addr.do_send(Wake);
            addr
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// chameneos

#[derive(Message)]
#[rtype(result = "()")]
struct Creatures(Vec<Addr<Creature>>, Sender<u64>);

#[derive(Message)]
#[rtype(result = "()")]
struct Meet {
    id: usize,
    colour: Colour,
}

struct Broker {
    mall: Mall,
    creatures: Vec<Addr<Creature>>,
}

impl Actor for Broker {
    type Context = Context<Self>;
}

impl Handler<Creatures> for Broker {
    type Result = ();

    fn handle(&mut self, Creatures(creatures, ack): Creatures, _: &mut Context<Self>) {
        self.creatures = creatures;
        let _ = ack.send(0);
    }
}

impl Handler<Meet> for Broker {
    type Result = ();

    fn handle(&mut self, Meet { id, colour }: Meet, _: &mut Context<Self>) {
        match self.mall.meet(id, colour) {
            MallAction::Wait => {}
            MallAction::Pair { first, second } => {
                self.creatures[first.0].do_send(Mate(second.1));
                self.creatures[second.0].do_send(Mate(first.1));
            }
            MallAction::Stop(id) => self.creatures[id].do_send(Stop),
        }
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Start;

/// The partner's colour.
#[derive(Message)]
#[rtype(result = "()")]
struct Mate(Colour);

#[derive(Message)]
#[rtype(result = "()")]
struct Stop;

struct Creature {
    id: usize,
    colour: Colour,
    meetings: u64,
    broker: Addr<Broker>,
    done: Sender<u64>,
}

impl Actor for Creature {
    type Context = Context<Self>;
}

impl Creature {
    fn meet(&self) {
        self.broker.do_send(Meet {
            id: self.id,
            colour: self.colour,
        });
    }
}

impl Handler<Start> for Creature {
    type Result = ();

    fn handle(&mut self, _: Start, _: &mut Context<Self>) {
        self.meet();
    }
}

impl Handler<Mate> for Creature {
    type Result = ();

    fn handle(&mut self, Mate(partner): Mate, _: &mut Context<Self>) {
        self.meetings += 1;
        self.colour = self.colour.complement(partner);
        self.meet();
    }
}

impl Handler<Stop> for Creature {
    type Result = ();

    fn handle(&mut self, _: Stop, _: &mut Context<Self>) {
        let _ = self.done.send(self.meetings);
    }
}

fn chameneos(arbiters: &Arbiters, creatures: u64, meetings: u64) -> Outcome {
    let (done_tx, done_rx) = channel();
    let (ack_tx, ack_rx) = channel();
    // Actor 0 is the broker, actors 1..=creatures the creatures.
    let actors = creatures + 1;
    let broker = arbiters.start(0, actors, move || Broker {
        mall: Mall::new(meetings),
        creatures: Vec::new(),
    });
    let addrs: Vec<Addr<Creature>> = (0..creatures as usize)
        .map(|id| {
            let broker = broker.clone();
            let done = done_tx.clone();
            arbiters.start(id as u64 + 1, actors, move || Creature {
                id,
                colour: Colour::initial(id),
                meetings: 0,
                broker,
                done,
            })
        })
        .collect();
    broker.do_send(Creatures(addrs.clone(), ack_tx));
    wait_setup(&ack_rx, 1);
    let start = Instant::now();
    for creature in &addrs {
        creature.do_send(Start);
    }
    let counts = common::collect(&done_rx, creatures, "chameneos");
    let elapsed = start.elapsed();
    common::check_chameneos(&counts, creatures, meetings);
    Outcome::new(meetings, elapsed)
}
