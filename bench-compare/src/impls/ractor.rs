//! ractor 0.16: `Actor` impls (a stateless handler, a `State`, one message enum per actor),
//! spawned with `Actor::spawn(None, ..)` on a multi-thread tokio runtime with 2 workers, and
//! sent to with `ActorRef::send_message` (synchronous and unbounded, from the main thread and
//! from handlers alike). The producer of the counting and fork-join rows is the main thread,
//! outside the runtime. ractor's default features (`tokio_runtime`,
//! `message_span_propogation`) are on.

use std::sync::mpsc::{channel, Sender};
use std::time::Instant;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::runtime::Runtime;

use crate::common::{self, Colour, Mall, MallAction, Outcome, Sizes, Workload};

pub fn run(workload: Workload, sizes: &Sizes) -> Outcome {
    let rt = super::tokio::runtime();
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
    std::mem::forget(rt);
    outcome
}

/// Spawns an actor whose `pre_start` returns `state`.
async fn start<A>(handler: A, state: A::Arguments) -> ActorRef<A::Msg>
where
    A: Actor,
{
    match Actor::spawn(None, handler, state).await {
        Ok((actor, _join)) => actor,
        Err(e) => panic!("ractor: cannot spawn an actor: {e}"),
    }
}

fn send<M: ractor::Message>(to: &ActorRef<M>, msg: M) {
    if to.send_message(msg).is_err() {
        panic!("ractor: a benchmark actor stopped unexpectedly");
    }
}

/// Sends a setup message (built around a reply port) and waits until it has been handled.
fn setup<M: ractor::Message>(
    rt: &Runtime,
    to: &ActorRef<M>,
    msg: impl FnOnce(RpcReplyPort<()>) -> M,
) {
    let (tx, rx) = ractor::concurrency::oneshot();
    send(to, msg(tx.into()));
    if rt.block_on(rx).is_err() {
        panic!("ractor: a setup message was not acknowledged");
    }
}

// ---------------------------------------------------------------------------------------------
// ping-pong

enum PlayerMsg {
    Peer(ActorRef<PlayerMsg>, RpcReplyPort<()>),
    Ball(u64),
}

struct Player;

struct PlayerState {
    peer: Option<ActorRef<PlayerMsg>>,
    handled: u64,
    done: Sender<u64>,
}

impl Actor for Player {
    type Msg = PlayerMsg;
    type State = PlayerState;
    type Arguments = PlayerState;

    async fn pre_start(
        &self,
        _: ActorRef<PlayerMsg>,
        state: PlayerState,
    ) -> Result<PlayerState, ActorProcessingErr> {
        Ok(state)
    }

    async fn handle(
        &self,
        _: ActorRef<PlayerMsg>,
        msg: PlayerMsg,
        state: &mut PlayerState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            PlayerMsg::Peer(peer, ack) => {
                state.peer = Some(peer);
                let _ = ack.send(());
            }
            PlayerMsg::Ball(left) => {
                state.handled += 1;
                match &state.peer {
                    Some(peer) if left > 0 => send(peer, PlayerMsg::Ball(left - 1)),
                    _ => {
                        let _ = state.done.send(state.handled);
                    }
                }
            }
        }
        Ok(())
    }
}

fn ping_pong(rt: &Runtime, round_trips: u64) -> Outcome {
    let (done_tx, done_rx) = channel();
    let player = || PlayerState {
        peer: None,
        handled: 0,
        done: done_tx.clone(),
    };
    let a = rt.block_on(start(Player, player()));
    let b = rt.block_on(start(Player, player()));
    setup(rt, &a, |ack| PlayerMsg::Peer(b.clone(), ack));
    setup(rt, &b, |ack| PlayerMsg::Peer(a.clone(), ack));
    let hops = 2 * round_trips;
    let start = Instant::now();
    send(&a, PlayerMsg::Ball(hops));
    let handled = done_rx.recv().expect("ping-pong: no report");
    let elapsed = start.elapsed();
    assert_eq!(handled, round_trips + 1, "ping-pong: lost messages");
    Outcome::new(hops, elapsed)
}

// ---------------------------------------------------------------------------------------------
// counting

struct Counter;

struct CounterState {
    count: u64,
    expected: u64,
    done: Sender<u64>,
}

impl Actor for Counter {
    type Msg = u64;
    type State = CounterState;
    type Arguments = CounterState;

    async fn pre_start(
        &self,
        _: ActorRef<u64>,
        state: CounterState,
    ) -> Result<CounterState, ActorProcessingErr> {
        Ok(state)
    }

    async fn handle(
        &self,
        _: ActorRef<u64>,
        _: u64,
        state: &mut CounterState,
    ) -> Result<(), ActorProcessingErr> {
        state.count += 1;
        if state.count == state.expected {
            let _ = state.done.send(state.count);
        }
        Ok(())
    }
}

fn counting(rt: &Runtime, messages: u64) -> Outcome {
    let (done_tx, done_rx) = channel();
    let counter = rt.block_on(start(
        Counter,
        CounterState {
            count: 0,
            expected: messages,
            done: done_tx,
        },
    ));
    let start = Instant::now();
    for i in 0..messages {
        send(&counter, i);
    }
    let counted = done_rx.recv().expect("counting: no report");
    let elapsed = start.elapsed();
    assert_eq!(counted, messages, "counting: lost messages");
    Outcome::new(messages, elapsed)
}

// ---------------------------------------------------------------------------------------------
// fork-join

struct Cruncher;

struct CruncherState {
    acc: u64,
    left: u64,
    done: Sender<u64>,
}

impl Actor for Cruncher {
    type Msg = u64;
    type State = CruncherState;
    type Arguments = CruncherState;

    async fn pre_start(
        &self,
        _: ActorRef<u64>,
        state: CruncherState,
    ) -> Result<CruncherState, ActorProcessingErr> {
        Ok(state)
    }

    async fn handle(
        &self,
        _: ActorRef<u64>,
        x: u64,
        state: &mut CruncherState,
    ) -> Result<(), ActorProcessingErr> {
        state.acc = common::crunch(state.acc, x);
        state.left -= 1;
        if state.left == 0 {
            let _ = state.done.send(state.acc);
        }
        Ok(())
    }
}

fn fork_join(rt: &Runtime, actors: u64, per_actor: u64) -> Outcome {
    let (done_tx, done_rx) = channel();
    let workers: Vec<ActorRef<u64>> = rt.block_on(async {
        let mut workers = Vec::new();
        for _ in 0..actors {
            let state = CruncherState {
                acc: 0,
                left: per_actor,
                done: done_tx.clone(),
            };
            workers.push(start(Cruncher, state).await);
        }
        workers
    });
    let start = Instant::now();
    for i in 0..per_actor {
        for worker in &workers {
            send(worker, i);
        }
    }
    let accs = common::collect(&done_rx, actors, "fork-join");
    let elapsed = start.elapsed();
    common::check_fork_join(&accs, actors, per_actor);
    Outcome::new(actors * per_actor, elapsed)
}

// ---------------------------------------------------------------------------------------------
// ring

enum NodeMsg {
    Next(ActorRef<NodeMsg>, RpcReplyPort<()>),
    /// The token carries the number of hops done so far.
    Token(u64),
}

struct Node;

struct NodeState {
    next: Option<ActorRef<NodeMsg>>,
    hops: u64,
    done: Sender<u64>,
}

impl Actor for Node {
    type Msg = NodeMsg;
    type State = NodeState;
    type Arguments = NodeState;

    async fn pre_start(
        &self,
        _: ActorRef<NodeMsg>,
        state: NodeState,
    ) -> Result<NodeState, ActorProcessingErr> {
        Ok(state)
    }

    async fn handle(
        &self,
        _: ActorRef<NodeMsg>,
        msg: NodeMsg,
        state: &mut NodeState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            NodeMsg::Next(next, ack) => {
                state.next = Some(next);
                let _ = ack.send(());
            }
            NodeMsg::Token(done) => {
                let done = done + 1;
                match &state.next {
                    Some(next) if done < state.hops => send(next, NodeMsg::Token(done)),
                    _ => {
                        let _ = state.done.send(done);
                    }
                }
            }
        }
        Ok(())
    }
}

fn ring(rt: &Runtime, actors: u64, hops: u64) -> Outcome {
    let (done_tx, done_rx) = channel();
    let nodes: Vec<ActorRef<NodeMsg>> = rt.block_on(async {
        let mut nodes = Vec::new();
        for _ in 0..actors {
            let state = NodeState {
                next: None,
                hops,
                done: done_tx.clone(),
            };
            nodes.push(start(Node, state).await);
        }
        nodes
    });
    for (i, node) in nodes.iter().enumerate() {
        let next = nodes[(i + 1) % nodes.len()].clone();
        setup(rt, node, |ack| NodeMsg::Next(next, ack));
    }
    let start = Instant::now();
    send(&nodes[0], NodeMsg::Token(0));
    let done = done_rx.recv().expect("ring: no report");
    let elapsed = start.elapsed();
    assert_eq!(done, hops, "ring: lost hops");
    Outcome::new(hops, elapsed)
}

// ---------------------------------------------------------------------------------------------
// spawn

/// An actor that handles one message and then idles; it keeps nothing.
struct Idle;

impl Actor for Idle {
    type Msg = ();
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<()>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }

    async fn handle(&self, _: ActorRef<()>, _: (), _: &mut ()) -> Result<(), ActorProcessingErr> {
        common::spawn_handled();
        Ok(())
    }
}

fn spawn_all(rt: &Runtime, n: u64) -> Vec<ActorRef<()>> {
    rt.block_on(async {
        let mut actors = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let actor = start(Idle, ()).await;
            send(&actor, ());
            actors.push(actor);
        }
        actors
    })
}

// ---------------------------------------------------------------------------------------------
// chameneos

enum BrokerMsg {
    Creatures(Vec<ActorRef<CreatureMsg>>, RpcReplyPort<()>),
    Meet(usize, Colour),
}

struct Broker;

struct BrokerState {
    mall: Mall,
    creatures: Vec<ActorRef<CreatureMsg>>,
}

impl Actor for Broker {
    type Msg = BrokerMsg;
    type State = BrokerState;
    type Arguments = BrokerState;

    async fn pre_start(
        &self,
        _: ActorRef<BrokerMsg>,
        state: BrokerState,
    ) -> Result<BrokerState, ActorProcessingErr> {
        Ok(state)
    }

    async fn handle(
        &self,
        _: ActorRef<BrokerMsg>,
        msg: BrokerMsg,
        state: &mut BrokerState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            BrokerMsg::Creatures(creatures, ack) => {
                state.creatures = creatures;
                let _ = ack.send(());
            }
            BrokerMsg::Meet(id, colour) => match state.mall.meet(id, colour) {
                MallAction::Wait => {}
                MallAction::Pair { first, second } => {
                    send(&state.creatures[first.0], CreatureMsg::Mate(second.1));
                    send(&state.creatures[second.0], CreatureMsg::Mate(first.1));
                }
                MallAction::Stop(id) => send(&state.creatures[id], CreatureMsg::Stop),
            },
        }
        Ok(())
    }
}

enum CreatureMsg {
    Start,
    /// The partner's colour.
    Mate(Colour),
    Stop,
}

struct Creature;

struct CreatureState {
    id: usize,
    colour: Colour,
    meetings: u64,
    broker: ActorRef<BrokerMsg>,
    done: Sender<u64>,
}

impl Actor for Creature {
    type Msg = CreatureMsg;
    type State = CreatureState;
    type Arguments = CreatureState;

    async fn pre_start(
        &self,
        _: ActorRef<CreatureMsg>,
        state: CreatureState,
    ) -> Result<CreatureState, ActorProcessingErr> {
        Ok(state)
    }

    async fn handle(
        &self,
        _: ActorRef<CreatureMsg>,
        msg: CreatureMsg,
        state: &mut CreatureState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            CreatureMsg::Start => send(&state.broker, BrokerMsg::Meet(state.id, state.colour)),
            CreatureMsg::Mate(partner) => {
                state.meetings += 1;
                state.colour = state.colour.complement(partner);
                send(&state.broker, BrokerMsg::Meet(state.id, state.colour));
            }
            CreatureMsg::Stop => {
                let _ = state.done.send(state.meetings);
            }
        }
        Ok(())
    }
}

fn chameneos(rt: &Runtime, creatures: u64, meetings: u64) -> Outcome {
    let (done_tx, done_rx) = channel();
    let (broker, refs) = rt.block_on(async {
        let broker = start(
            Broker,
            BrokerState {
                mall: Mall::new(meetings),
                creatures: Vec::new(),
            },
        )
        .await;
        let mut refs = Vec::new();
        for id in 0..creatures as usize {
            let state = CreatureState {
                id,
                colour: Colour::initial(id),
                meetings: 0,
                broker: broker.clone(),
                done: done_tx.clone(),
            };
            refs.push(start(Creature, state).await);
        }
        (broker, refs)
    });
    let for_broker = refs.clone();
    setup(rt, &broker, |ack| BrokerMsg::Creatures(for_broker, ack));
    let start = Instant::now();
    for creature in &refs {
        send(creature, CreatureMsg::Start);
    }
    let counts = common::collect(&done_rx, creatures, "chameneos");
    let elapsed = start.elapsed();
    common::check_chameneos(&counts, creatures, meetings);
    Outcome::new(meetings, elapsed)
}
