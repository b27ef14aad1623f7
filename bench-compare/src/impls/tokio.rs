//! tokio: an actor is a task that owns the receiving half of a
//! `tokio::sync::mpsc::unbounded_channel` (unbounded, so that sending never waits, like
//! `post`), on a multi-thread runtime with 2 workers. The producer of the counting and
//! fork-join rows is the main thread, outside the runtime.

use std::sync::mpsc::{channel, Sender};
use std::time::Instant;

use tokio::runtime::Runtime;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::common::{self, Colour, Mall, MallAction, Outcome, Sizes, Workload};

pub fn run(workload: Workload, sizes: &Sizes) -> Outcome {
    let rt = runtime();
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

/// The multi-thread runtime with 2 workers that the tokio, kameo and ractor rows run on.
pub fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio: cannot build the runtime")
}

fn send<T>(tx: &UnboundedSender<T>, msg: T) {
    if tx.send(msg).is_err() {
        panic!("tokio: a benchmark task ended unexpectedly");
    }
}

/// A ping-pong player: hands the ball back until it is down to 0, then reports how many
/// balls it handled.
async fn player(mut rx: UnboundedReceiver<u64>, peer: UnboundedSender<u64>, done: Sender<u64>) {
    let mut handled = 0u64;
    while let Some(left) = rx.recv().await {
        handled += 1;
        if left == 0 {
            let _ = done.send(handled);
            break;
        }
        send(&peer, left - 1);
    }
}

fn ping_pong(rt: &Runtime, round_trips: u64) -> Outcome {
    let (a_tx, a_rx) = unbounded_channel::<u64>();
    let (b_tx, b_rx) = unbounded_channel::<u64>();
    let (done_tx, done_rx) = channel();
    rt.spawn(player(a_rx, b_tx, done_tx.clone()));
    rt.spawn(player(b_rx, a_tx.clone(), done_tx));
    let hops = 2 * round_trips;
    let start = Instant::now();
    send(&a_tx, hops);
    let handled = done_rx.recv().expect("ping-pong: no report");
    let elapsed = start.elapsed();
    assert_eq!(handled, round_trips + 1, "ping-pong: lost messages");
    Outcome::new(hops, elapsed)
}

fn counting(rt: &Runtime, messages: u64) -> Outcome {
    let (tx, mut rx) = unbounded_channel::<u64>();
    let (done_tx, done_rx) = channel();
    rt.spawn(async move {
        let mut count = 0u64;
        while rx.recv().await.is_some() {
            count += 1;
            if count == messages {
                let _ = done_tx.send(count);
            }
        }
    });
    let start = Instant::now();
    for i in 0..messages {
        send(&tx, i);
    }
    let counted = done_rx.recv().expect("counting: no report");
    let elapsed = start.elapsed();
    assert_eq!(counted, messages, "counting: lost messages");
    Outcome::new(messages, elapsed)
}

fn fork_join(rt: &Runtime, actors: u64, per_actor: u64) -> Outcome {
    let (done_tx, done_rx) = channel();
    let senders: Vec<UnboundedSender<u64>> = (0..actors)
        .map(|_| {
            let (tx, mut rx) = unbounded_channel::<u64>();
            let done = done_tx.clone();
            rt.spawn(async move {
                let mut acc = 0u64;
                let mut left = per_actor;
                while let Some(x) = rx.recv().await {
                    acc = common::crunch(acc, x);
                    left -= 1;
                    if left == 0 {
                        let _ = done.send(acc);
                    }
                }
            });
            tx
        })
        .collect();
    let start = Instant::now();
    for i in 0..per_actor {
        for tx in &senders {
            send(tx, i);
        }
    }
    let accs = common::collect(&done_rx, actors, "fork-join");
    let elapsed = start.elapsed();
    common::check_fork_join(&accs, actors, per_actor);
    Outcome::new(actors * per_actor, elapsed)
}

fn ring(rt: &Runtime, actors: u64, hops: u64) -> Outcome {
    let (done_tx, done_rx) = channel();
    let (senders, receivers): (Vec<_>, Vec<_>) =
        (0..actors).map(|_| unbounded_channel::<u64>()).unzip();
    for (i, mut rx) in receivers.into_iter().enumerate() {
        let next = senders[(i + 1) % senders.len()].clone();
        let done = done_tx.clone();
        rt.spawn(async move {
            while let Some(done_so_far) = rx.recv().await {
                let done_now = done_so_far + 1;
                if done_now < hops {
                    send(&next, done_now);
                } else {
                    let _ = done.send(done_now);
                }
            }
        });
    }
    let start = Instant::now();
    send(&senders[0], 0);
    let done = done_rx.recv().expect("ring: no report");
    let elapsed = start.elapsed();
    assert_eq!(done, hops, "ring: lost hops");
    Outcome::new(hops, elapsed)
}

fn spawn_all(rt: &Runtime, n: u64) -> Vec<UnboundedSender<()>> {
    (0..n)
        .map(|_| {
            let (tx, mut rx) = unbounded_channel::<()>();
            rt.spawn(async move {
                while rx.recv().await.is_some() {
                    common::spawn_handled();
                }
            });
            send(&tx, ());
            tx
        })
        .collect()
}

enum CreatureMsg {
    Start,
    Mate(Colour),
    Stop,
}

fn chameneos(rt: &Runtime, creatures: u64, meetings: u64) -> Outcome {
    let (done_tx, done_rx) = channel();
    let (broker_tx, mut broker_rx) = unbounded_channel::<(usize, Colour)>();
    let mut creature_txs = Vec::new();
    for id in 0..creatures as usize {
        let (tx, mut rx) = unbounded_channel::<CreatureMsg>();
        creature_txs.push(tx);
        let broker = broker_tx.clone();
        let done = done_tx.clone();
        rt.spawn(async move {
            let mut colour = Colour::initial(id);
            let mut met = 0u64;
            while let Some(msg) = rx.recv().await {
                match msg {
                    CreatureMsg::Start => send(&broker, (id, colour)),
                    CreatureMsg::Mate(partner) => {
                        met += 1;
                        colour = colour.complement(partner);
                        send(&broker, (id, colour));
                    }
                    CreatureMsg::Stop => {
                        let _ = done.send(met);
                        break;
                    }
                }
            }
        });
    }
    let to_creatures = creature_txs.clone();
    rt.spawn(async move {
        let mut mall = Mall::new(meetings);
        while let Some((id, colour)) = broker_rx.recv().await {
            match mall.meet(id, colour) {
                MallAction::Wait => {}
                MallAction::Pair { first, second } => {
                    send(&to_creatures[first.0], CreatureMsg::Mate(second.1));
                    send(&to_creatures[second.0], CreatureMsg::Mate(first.1));
                }
                MallAction::Stop(id) => send(&to_creatures[id], CreatureMsg::Stop),
            }
        }
    });
    let start = Instant::now();
    for tx in &creature_txs {
        send(tx, CreatureMsg::Start);
    }
    let counts = common::collect(&done_rx, creatures, "chameneos");
    let elapsed = start.elapsed();
    common::check_chameneos(&counts, creatures, meetings);
    Outcome::new(meetings, elapsed)
}
