//! kameo 0.22: `#[derive(Actor)]` actors with `Message<M>` handlers, each spawned with an
//! unbounded mailbox (`Spawn::spawn_with_mailbox(.., mailbox::unbounded())`, so that sending
//! never waits, like `post`) on a multi-thread tokio runtime with 2 workers, and sent to with
//! `ActorRef::tell(msg).try_send()` (synchronous, from the main thread and from handlers
//! alike). The producer of the counting and fork-join rows is the main thread, outside the
//! runtime. kameo's default features (`macros`, `tracing`) are on.

use std::sync::mpsc::{channel, Sender};
use std::time::Instant;

use kameo::actor::{ActorRef, Spawn};
use kameo::mailbox;
use kameo::message::{Context, Message};
use kameo::Actor;
use tokio::runtime::Runtime;

use crate::common::{self, Colour, Mall, MallAction, Outcome, Sizes, Workload};

pub fn run(workload: Workload, sizes: &Sizes) -> Outcome {
    let rt = super::tokio::runtime();
    let outcome = {
        // kameo spawns its actors with `tokio::spawn`: spawn them in the runtime's context.
        let _context = rt.enter();
        match workload {
            Workload::PingPong => ping_pong(&rt, sizes.ping_pong_round_trips),
            Workload::Counting => counting(sizes.counting_messages),
            Workload::ForkJoin => fork_join(sizes.fork_join_actors, sizes.fork_join_per_actor),
            Workload::Ring => ring(&rt, sizes.ring_actors, sizes.ring_hops),
            Workload::Spawn => {
                common::measure_spawn(sizes.spawn_actors, || spawn_all(sizes.spawn_actors))
            }
            Workload::Chameneos => {
                chameneos(&rt, sizes.chameneos_creatures, sizes.chameneos_meetings)
            }
        }
    };
    std::mem::forget(rt);
    outcome
}

fn spawn<A: Actor<Args = A>>(actor: A) -> ActorRef<A> {
    A::spawn_with_mailbox(actor, mailbox::unbounded())
}

fn tell<A, M>(to: &ActorRef<A>, msg: M)
where
    A: Actor + Message<M>,
    M: Send + 'static,
{
    if to.tell(msg).try_send().is_err() {
        panic!("kameo: a benchmark actor stopped unexpectedly");
    }
}

/// Sends a setup message and waits until it has been handled.
fn setup<A, M>(rt: &Runtime, to: &ActorRef<A>, msg: M)
where
    A: Actor + Message<M, Reply = ()>,
    M: Send + 'static,
{
    if rt.block_on(async { to.ask(msg).await }).is_err() {
        panic!("kameo: a setup message failed");
    }
}

// ---------------------------------------------------------------------------------------------
// ping-pong

struct Peer(ActorRef<Player>);

struct Ball(u64);

#[derive(Actor)]
struct Player {
    peer: Option<ActorRef<Player>>,
    handled: u64,
    done: Sender<u64>,
}

impl Message<Peer> for Player {
    type Reply = ();

    async fn handle(&mut self, Peer(peer): Peer, _: &mut Context<Self, Self::Reply>) {
        self.peer = Some(peer);
    }
}

impl Message<Ball> for Player {
    type Reply = ();

    async fn handle(&mut self, Ball(left): Ball, _: &mut Context<Self, Self::Reply>) {
        self.handled += 1;
        match &self.peer {
            Some(peer) if left > 0 => tell(peer, Ball(left - 1)),
            _ => {
                let _ = self.done.send(self.handled);
            }
        }
    }
}

fn ping_pong(rt: &Runtime, round_trips: u64) -> Outcome {
    let (done_tx, done_rx) = channel();
    let player = || Player {
        peer: None,
        handled: 0,
        done: done_tx.clone(),
    };
    let a = spawn(player());
    let b = spawn(player());
    setup(rt, &a, Peer(b.clone()));
    setup(rt, &b, Peer(a.clone()));
    let hops = 2 * round_trips;
    let start = Instant::now();
    tell(&a, Ball(hops));
    let handled = done_rx.recv().expect("ping-pong: no report");
    let elapsed = start.elapsed();
    assert_eq!(handled, round_trips + 1, "ping-pong: lost messages");
    Outcome::new(hops, elapsed)
}

// ---------------------------------------------------------------------------------------------
// counting

struct Count(#[allow(dead_code)] u64);

#[derive(Actor)]
struct Counter {
    count: u64,
    expected: u64,
    done: Sender<u64>,
}

impl Message<Count> for Counter {
    type Reply = ();

    async fn handle(&mut self, _: Count, _: &mut Context<Self, Self::Reply>) {
        self.count += 1;
        if self.count == self.expected {
            let _ = self.done.send(self.count);
        }
    }
}

fn counting(messages: u64) -> Outcome {
    let (done_tx, done_rx) = channel();
    let counter = spawn(Counter {
        count: 0,
        expected: messages,
        done: done_tx,
    });
    let start = Instant::now();
    for i in 0..messages {
        tell(&counter, Count(i));
    }
    let counted = done_rx.recv().expect("counting: no report");
    let elapsed = start.elapsed();
    assert_eq!(counted, messages, "counting: lost messages");
    Outcome::new(messages, elapsed)
}

// ---------------------------------------------------------------------------------------------
// fork-join

struct Work(u64);

#[derive(Actor)]
struct Cruncher {
    acc: u64,
    left: u64,
    done: Sender<u64>,
}

impl Message<Work> for Cruncher {
    type Reply = ();

    async fn handle(&mut self, Work(x): Work, _: &mut Context<Self, Self::Reply>) {
        self.acc = common::crunch(self.acc, x);
        self.left -= 1;
        if self.left == 0 {
            let _ = self.done.send(self.acc);
        }
    }
}

fn fork_join(actors: u64, per_actor: u64) -> Outcome {
    let (done_tx, done_rx) = channel();
    let workers: Vec<ActorRef<Cruncher>> = (0..actors)
        .map(|_| {
            spawn(Cruncher {
                acc: 0,
                left: per_actor,
                done: done_tx.clone(),
            })
        })
        .collect();
    let start = Instant::now();
    for i in 0..per_actor {
        for worker in &workers {
            tell(worker, Work(i));
        }
    }
    let accs = common::collect(&done_rx, actors, "fork-join");
    let elapsed = start.elapsed();
    common::check_fork_join(&accs, actors, per_actor);
    Outcome::new(actors * per_actor, elapsed)
}

// ---------------------------------------------------------------------------------------------
// ring

struct Next(ActorRef<Node>);

/// The token carries the number of hops done so far.
struct Token(u64);

#[derive(Actor)]
struct Node {
    next: Option<ActorRef<Node>>,
    hops: u64,
    done: Sender<u64>,
}

impl Message<Next> for Node {
    type Reply = ();

    async fn handle(&mut self, Next(next): Next, _: &mut Context<Self, Self::Reply>) {
        self.next = Some(next);
    }
}

impl Message<Token> for Node {
    type Reply = ();

    async fn handle(&mut self, Token(done): Token, _: &mut Context<Self, Self::Reply>) {
        let done = done + 1;
        match &self.next {
            Some(next) if done < self.hops => tell(next, Token(done)),
            _ => {
                let _ = self.done.send(done);
            }
        }
    }
}

fn ring(rt: &Runtime, actors: u64, hops: u64) -> Outcome {
    let (done_tx, done_rx) = channel();
    let nodes: Vec<ActorRef<Node>> = (0..actors)
        .map(|_| {
            spawn(Node {
                next: None,
                hops,
                done: done_tx.clone(),
            })
        })
        .collect();
    for (i, node) in nodes.iter().enumerate() {
        setup(rt, node, Next(nodes[(i + 1) % nodes.len()].clone()));
    }
    let start = Instant::now();
    tell(&nodes[0], Token(0));
    let done = done_rx.recv().expect("ring: no report");
    let elapsed = start.elapsed();
    assert_eq!(done, hops, "ring: lost hops");
    Outcome::new(hops, elapsed)
}

// ---------------------------------------------------------------------------------------------
// spawn

struct Wake;

/// An actor that handles one message and then idles; it keeps nothing.
#[derive(Actor)]
struct Idle;

impl Message<Wake> for Idle {
    type Reply = ();

    async fn handle(&mut self, _: Wake, _: &mut Context<Self, Self::Reply>) {
        common::spawn_handled();
    }
}

fn spawn_all(n: u64) -> Vec<ActorRef<Idle>> {
    (0..n)
        .map(|_| {
            let actor = spawn(Idle);
            tell(&actor, Wake);
            actor
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// chameneos

struct Creatures(Vec<ActorRef<Creature>>);

struct Meet {
    id: usize,
    colour: Colour,
}

#[derive(Actor)]
struct Broker {
    mall: Mall,
    creatures: Vec<ActorRef<Creature>>,
}

impl Message<Creatures> for Broker {
    type Reply = ();

    async fn handle(&mut self, Creatures(creatures): Creatures, _: &mut Context<Self, ()>) {
        self.creatures = creatures;
    }
}

impl Message<Meet> for Broker {
    type Reply = ();

    async fn handle(&mut self, Meet { id, colour }: Meet, _: &mut Context<Self, ()>) {
        match self.mall.meet(id, colour) {
            MallAction::Wait => {}
            MallAction::Pair { first, second } => {
                tell(&self.creatures[first.0], Mate(second.1));
                tell(&self.creatures[second.0], Mate(first.1));
            }
            MallAction::Stop(id) => tell(&self.creatures[id], Stop),
        }
    }
}

struct Start;

/// The partner's colour.
struct Mate(Colour);

struct Stop;

#[derive(Actor)]
struct Creature {
    id: usize,
    colour: Colour,
    meetings: u64,
    broker: ActorRef<Broker>,
    done: Sender<u64>,
}

impl Creature {
    fn meet(&self) {
        tell(
            &self.broker,
            Meet {
                id: self.id,
                colour: self.colour,
            },
        );
    }
}

impl Message<Start> for Creature {
    type Reply = ();

    async fn handle(&mut self, _: Start, _: &mut Context<Self, ()>) {
        self.meet();
    }
}

impl Message<Mate> for Creature {
    type Reply = ();

    async fn handle(&mut self, Mate(partner): Mate, _: &mut Context<Self, ()>) {
        self.meetings += 1;
        self.colour = self.colour.complement(partner);
        self.meet();
    }
}

impl Message<Stop> for Creature {
    type Reply = ();

    async fn handle(&mut self, _: Stop, _: &mut Context<Self, ()>) {
        let _ = self.done.send(self.meetings);
    }
}

fn chameneos(rt: &Runtime, creatures: u64, meetings: u64) -> Outcome {
    let (done_tx, done_rx) = channel();
    let broker = spawn(Broker {
        mall: Mall::new(meetings),
        creatures: Vec::new(),
    });
    let refs: Vec<ActorRef<Creature>> = (0..creatures as usize)
        .map(|id| {
            spawn(Creature {
                id,
                colour: Colour::initial(id),
                meetings: 0,
                broker: broker.clone(),
                done: done_tx.clone(),
            })
        })
        .collect();
    setup(rt, &broker, Creatures(refs.clone()));
    let start = Instant::now();
    for creature in &refs {
        tell(creature, Start);
    }
    let counts = common::collect(&done_rx, creatures, "chameneos");
    let elapsed = start.elapsed();
    common::check_chameneos(&counts, creatures, meetings);
    Outcome::new(meetings, elapsed)
}
