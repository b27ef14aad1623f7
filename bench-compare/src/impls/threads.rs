//! OS threads: an actor is a thread that owns the receiving half of a
//! `crossbeam_channel::unbounded` channel and blocks on it. There is no pool: one thread per
//! actor (2 for ping-pong, 60 for fork-join, 1,000 for the ring, 101 for chameneos), with the
//! default stack size. The producer of the counting and fork-join rows is the main thread.
//!
//! The spawn row starts `Sizes::spawn_threads` threads (10,000, not a million: a million OS
//! threads exceeds the kernel's limits and memory on an ordinary machine), and its rate is
//! reported as measured, not scaled.

use std::sync::mpsc::{channel, Sender};
use std::thread;
use std::time::Instant;

use crossbeam_channel::{unbounded, Receiver as CbReceiver, Sender as CbSender};

use crate::common::{self, Colour, Mall, MallAction, Outcome, Sizes, Workload};

pub fn run(workload: Workload, sizes: &Sizes) -> Outcome {
    match workload {
        Workload::PingPong => ping_pong(sizes.ping_pong_round_trips),
        Workload::Counting => counting(sizes.counting_messages),
        Workload::ForkJoin => fork_join(sizes.fork_join_actors, sizes.fork_join_per_actor),
        Workload::Ring => ring(sizes.ring_actors, sizes.ring_hops),
        Workload::Spawn => {
            common::measure_spawn(sizes.spawn_threads, || spawn_all(sizes.spawn_threads))
        }
        Workload::Chameneos => chameneos(sizes.chameneos_creatures, sizes.chameneos_meetings),
    }
}

fn send<T>(tx: &CbSender<T>, msg: T) {
    if tx.send(msg).is_err() {
        panic!("threads: a benchmark thread ended unexpectedly");
    }
}

fn actor<F: FnOnce() + Send + 'static>(body: F) {
    thread::Builder::new()
        .spawn(body)
        .expect("threads: cannot spawn a thread");
}

fn player(rx: CbReceiver<u64>, peer: CbSender<u64>, done: Sender<u64>) {
    let mut handled = 0u64;
    for left in rx {
        handled += 1;
        if left == 0 {
            let _ = done.send(handled);
            break;
        }
        send(&peer, left - 1);
    }
}

fn ping_pong(round_trips: u64) -> Outcome {
    let (a_tx, a_rx) = unbounded::<u64>();
    let (b_tx, b_rx) = unbounded::<u64>();
    let (done_tx, done_rx) = channel();
    let done_a = done_tx.clone();
    actor(move || player(a_rx, b_tx, done_a));
    let a_for_b = a_tx.clone();
    actor(move || player(b_rx, a_for_b, done_tx));
    let hops = 2 * round_trips;
    let start = Instant::now();
    send(&a_tx, hops);
    let handled = done_rx.recv().expect("ping-pong: no report");
    let elapsed = start.elapsed();
    assert_eq!(handled, round_trips + 1, "ping-pong: lost messages");
    Outcome::new(hops, elapsed)
}

fn counting(messages: u64) -> Outcome {
    let (tx, rx) = unbounded::<u64>();
    let (done_tx, done_rx) = channel();
    actor(move || {
        let mut count = 0u64;
        for _ in rx {
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

fn fork_join(actors: u64, per_actor: u64) -> Outcome {
    let (done_tx, done_rx) = channel();
    let senders: Vec<CbSender<u64>> = (0..actors)
        .map(|_| {
            let (tx, rx) = unbounded::<u64>();
            let done = done_tx.clone();
            actor(move || {
                let mut acc = 0u64;
                let mut left = per_actor;
                for x in rx {
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

fn ring(actors: u64, hops: u64) -> Outcome {
    let (done_tx, done_rx) = channel();
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..actors).map(|_| unbounded::<u64>()).unzip();
    for (i, rx) in receivers.into_iter().enumerate() {
        let next = senders[(i + 1) % senders.len()].clone();
        let done = done_tx.clone();
        actor(move || {
            for done_so_far in rx {
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

fn spawn_all(n: u64) -> Vec<CbSender<()>> {
    (0..n)
        .map(|_| {
            let (tx, rx) = unbounded::<()>();
            actor(move || {
                for () in rx {
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

fn chameneos(creatures: u64, meetings: u64) -> Outcome {
    let (done_tx, done_rx) = channel();
    let (broker_tx, broker_rx) = unbounded::<(usize, Colour)>();
    let mut creature_txs = Vec::new();
    for id in 0..creatures as usize {
        let (tx, rx) = unbounded::<CreatureMsg>();
        creature_txs.push(tx);
        let broker = broker_tx.clone();
        let done = done_tx.clone();
        actor(move || {
            let mut colour = Colour::initial(id);
            let mut met = 0u64;
            for msg in rx {
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
    actor(move || {
        let mut mall = Mall::new(meetings);
        for (id, colour) in broker_rx {
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
