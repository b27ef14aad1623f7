//! whirl: `#[process]`es on a runtime whose default group has 2 workers. The producer of the
//! counting and fork-join rows is the main thread (outside the runtime), as it is everywhere.
//!
//! The bench thread learns that a workload is done through a `std::sync::mpsc` channel. Those
//! channels belong to the harness, not to the processes measured, and are held as
//! [`SharedClient`]s saying so.

use std::sync::mpsc::{channel, Sender};
use std::time::Instant;

use whirl::prelude::*;
use whirl::SharedClient;

use crate::common::{self, Colour, Mall, MallAction, Outcome, Sizes, Workload};

/// Why the harness's completion channels may be shared with the processes measured.
const HARNESS: &str = "benchmark harness: a completion channel the bench thread reads";

type Done = SharedClient<Sender<u64>>;

fn done(tx: Sender<u64>) -> Done {
    SharedClient::new(tx, HARNESS)
}

pub fn run(workload: Workload, sizes: &Sizes) -> Outcome {
    let rt = Runtime::builder().threads(2).build().expect("the runtime starts");
    let outcome = match workload {
        Workload::PingPong => ping_pong(&rt, sizes.ping_pong_round_trips),
        Workload::Counting => counting(&rt, sizes.counting_messages),
        Workload::ForkJoin => fork_join(&rt, sizes.fork_join_actors, sizes.fork_join_per_actor),
        Workload::Ring => ring(&rt, sizes.ring_actors, sizes.ring_hops),
        Workload::Spawn => {
            common::measure_spawn(sizes.spawn_actors, || spawn_all(&rt, sizes.spawn_actors))
        }
        Workload::Chameneos => chameneos(&rt, sizes.chameneos_creatures, sizes.chameneos_meetings),
    };
    // The child exits right after printing: no orderly shutdown of a runtime full of processes.
    std::mem::forget(rt);
    outcome
}

fn post<P: Handles<M>, M: Message>(addr: &Addr<P>, msg: M) {
    if addr.post(msg).is_err() {
        panic!("whirl: a benchmark process terminated unexpectedly");
    }
}

// ---------------------------------------------------------------------------------------------
// ping-pong

#[derive(Message)]
struct Peer(Addr<Player>);

#[derive(Message)]
struct Ball(u64);

#[process]
struct Player {
    peer: Option<Addr<Player>>,
    handled: u64,
    done: Done,
}

#[process]
impl Player {
    #[handle]
    fn peer(&mut self, Peer(peer): Peer) {
        self.peer = Some(peer);
    }

    #[handle]
    fn ball(&mut self, Ball(left): Ball) {
        self.handled += 1;
        match &self.peer {
            Some(peer) if left > 0 => post(peer, Ball(left - 1)),
            _ => {
                let _ = self.done.send(self.handled);
            }
        }
    }
}

fn ping_pong(rt: &Runtime, round_trips: u64) -> Outcome {
    let (tx, rx) = channel();
    let player = || Player {
        peer: None,
        handled: 0,
        done: done(tx.clone()),
    };
    let a = rt.spawn(player());
    let b = rt.spawn(player());
    post(&a, Peer(b.clone()));
    post(&b, Peer(a.clone()));
    rt.block_until_idle();
    let hops = 2 * round_trips;
    let start = Instant::now();
    post(&a, Ball(hops));
    let handled = rx.recv().expect("ping-pong: no report");
    let elapsed = start.elapsed();
    assert_eq!(handled, round_trips + 1, "ping-pong: lost messages");
    Outcome::new(hops, elapsed)
}

// ---------------------------------------------------------------------------------------------
// counting

#[derive(Message)]
struct Count(#[allow(dead_code)] u64);

#[process]
struct Counter {
    count: u64,
    expected: u64,
    done: Done,
}

#[process]
impl Counter {
    #[handle]
    fn count(&mut self, _: Count) {
        self.count += 1;
        if self.count == self.expected {
            let _ = self.done.send(self.count);
        }
    }
}

fn counting(rt: &Runtime, messages: u64) -> Outcome {
    let (tx, rx) = channel();
    let counter = rt.spawn(Counter {
        count: 0,
        expected: messages,
        done: done(tx),
    });
    rt.block_until_idle();
    let start = Instant::now();
    for i in 0..messages {
        post(&counter, Count(i));
    }
    let counted = rx.recv().expect("counting: no report");
    let elapsed = start.elapsed();
    assert_eq!(counted, messages, "counting: lost messages");
    Outcome::new(messages, elapsed)
}

// ---------------------------------------------------------------------------------------------
// fork-join

#[derive(Message)]
struct Work(u64);

#[process]
struct Cruncher {
    acc: u64,
    left: u64,
    done: Done,
}

#[process]
impl Cruncher {
    #[handle]
    fn work(&mut self, Work(x): Work) {
        self.acc = common::crunch(self.acc, x);
        self.left -= 1;
        if self.left == 0 {
            let _ = self.done.send(self.acc);
        }
    }
}

fn fork_join(rt: &Runtime, actors: u64, per_actor: u64) -> Outcome {
    let (tx, rx) = channel();
    let workers: Vec<_> = (0..actors)
        .map(|_| {
            rt.spawn(Cruncher {
                acc: 0,
                left: per_actor,
                done: done(tx.clone()),
            })
        })
        .collect();
    rt.block_until_idle();
    let start = Instant::now();
    for i in 0..per_actor {
        for worker in &workers {
            post(worker, Work(i));
        }
    }
    let accs = common::collect(&rx, actors, "fork-join");
    let elapsed = start.elapsed();
    common::check_fork_join(&accs, actors, per_actor);
    Outcome::new(actors * per_actor, elapsed)
}

// ---------------------------------------------------------------------------------------------
// ring

#[derive(Message)]
struct Next(Addr<Node>);

/// The token carries the number of hops done so far.
#[derive(Message)]
struct Token(u64);

#[process]
struct Node {
    next: Option<Addr<Node>>,
    hops: u64,
    done: Done,
}

#[process]
impl Node {
    #[handle]
    fn next(&mut self, Next(next): Next) {
        self.next = Some(next);
    }

    #[handle]
    fn token(&mut self, Token(done): Token) {
        let done = done + 1;
        match &self.next {
            Some(next) if done < self.hops => post(next, Token(done)),
            _ => {
                let _ = self.done.send(done);
            }
        }
    }
}

fn ring(rt: &Runtime, actors: u64, hops: u64) -> Outcome {
    let (tx, rx) = channel();
    let nodes: Vec<_> = (0..actors)
        .map(|_| {
            rt.spawn(Node {
                next: None,
                hops,
                done: done(tx.clone()),
            })
        })
        .collect();
    for (i, node) in nodes.iter().enumerate() {
        post(node, Next(nodes[(i + 1) % nodes.len()].clone()));
    }
    rt.block_until_idle();
    let start = Instant::now();
    post(&nodes[0], Token(0));
    let done = rx.recv().expect("ring: no report");
    let elapsed = start.elapsed();
    assert_eq!(done, hops, "ring: lost hops");
    Outcome::new(hops, elapsed)
}

// ---------------------------------------------------------------------------------------------
// spawn

#[derive(Message)]
struct Wake;

/// A process that handles one message and then idles; it keeps nothing.
#[process]
struct Idle;

#[process]
impl Idle {
    #[handle]
    fn wake(&mut self, _: Wake) {
        common::spawn_handled();
    }
}

fn spawn_all(rt: &Runtime, n: u64) -> Vec<Addr<Idle>> {
    (0..n)
        .map(|_| {
            let addr = rt.spawn(Idle);
            post(&addr, Wake);
            addr
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// chameneos

#[derive(Message)]
struct Creatures(Vec<Addr<Creature>>);

#[derive(Message)]
struct Meet {
    id: usize,
    colour: Colour,
}

#[process]
struct Broker {
    mall: Mall,
    creatures: Vec<Addr<Creature>>,
}

#[process]
impl Broker {
    #[handle]
    fn creatures(&mut self, Creatures(creatures): Creatures) {
        self.creatures = creatures;
    }

    #[handle]
    fn meet(&mut self, Meet { id, colour }: Meet) {
        match self.mall.meet(id, colour) {
            MallAction::Wait => {}
            MallAction::Pair { first, second } => {
                post(&self.creatures[first.0], Mate(second.1));
                post(&self.creatures[second.0], Mate(first.1));
            }
            MallAction::Stop(id) => post(&self.creatures[id], Stop),
        }
    }
}

#[derive(Message)]
struct Start;

/// The partner's colour.
#[derive(Message)]
struct Mate(Colour);

#[derive(Message)]
struct Stop;

#[process]
struct Creature {
    id: usize,
    colour: Colour,
    meetings: u64,
    broker: Addr<Broker>,
    done: Done,
}

#[process]
impl Creature {
    #[handle]
    fn start(&mut self, _: Start) {
        post(
            &self.broker,
            Meet {
                id: self.id,
                colour: self.colour,
            },
        );
    }

    #[handle]
    fn mate(&mut self, Mate(partner): Mate) {
        self.meetings += 1;
        self.colour = self.colour.complement(partner);
        post(
            &self.broker,
            Meet {
                id: self.id,
                colour: self.colour,
            },
        );
    }

    #[handle]
    fn stop(&mut self, _: Stop) {
        let _ = self.done.send(self.meetings);
    }
}

fn chameneos(rt: &Runtime, creatures: u64, meetings: u64) -> Outcome {
    let (tx, rx) = channel();
    let broker = rt.spawn(Broker {
        mall: Mall::new(meetings),
        creatures: Vec::new(),
    });
    let addrs: Vec<_> = (0..creatures as usize)
        .map(|id| {
            rt.spawn(Creature {
                id,
                colour: Colour::initial(id),
                meetings: 0,
                broker: broker.clone(),
                done: done(tx.clone()),
            })
        })
        .collect();
    post(&broker, Creatures(addrs.clone()));
    rt.block_until_idle();
    let start = Instant::now();
    for creature in &addrs {
        post(creature, Start);
    }
    let counts = common::collect(&rx, creatures, "chameneos");
    let elapsed = start.elapsed();
    common::check_chameneos(&counts, creatures, meetings);
    Outcome::new(meetings, elapsed)
}
