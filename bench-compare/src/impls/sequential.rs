//! The ceiling: one thread does the same logical work with plain function calls, and a
//! `VecDeque` of (recipient, message) as the mailbox. No synchronisation, no wake-ups, no
//! allocation per message. The main thread is producer and scheduler: where the other
//! implementations have an outside producer (counting, fork-join), it enqueues up to
//! [`BATCH`] messages and then runs the queue dry, so the queue stays small as a concurrent
//! consumer would keep it.

use std::collections::VecDeque;
use std::time::Instant;

use crate::common::{self, Colour, Mall, MallAction, Outcome, Sizes, Workload};

/// How many messages the producer enqueues before it runs the handlers.
const BATCH: usize = 1024;

pub fn run(workload: Workload, sizes: &Sizes) -> Outcome {
    match workload {
        Workload::PingPong => ping_pong(sizes.ping_pong_round_trips),
        Workload::Counting => counting(sizes.counting_messages),
        Workload::ForkJoin => fork_join(sizes.fork_join_actors, sizes.fork_join_per_actor),
        Workload::Ring => ring(sizes.ring_actors, sizes.ring_hops),
        Workload::Spawn => {
            common::measure_spawn(sizes.spawn_actors, || spawn_all(sizes.spawn_actors))
        }
        Workload::Chameneos => chameneos(sizes.chameneos_creatures, sizes.chameneos_meetings),
    }
}

fn ping_pong(round_trips: u64) -> Outcome {
    let mut handled = [0u64; 2];
    let mut mailbox: VecDeque<(usize, u64)> = VecDeque::new();
    let mut report = None;
    let hops = 2 * round_trips;
    let start = Instant::now();
    mailbox.push_back((0, hops));
    while let Some((player, left)) = mailbox.pop_front() {
        handled[player] += 1;
        if left == 0 {
            report = Some(handled[player]);
        } else {
            mailbox.push_back((1 - player, left - 1));
        }
    }
    let elapsed = start.elapsed();
    assert_eq!(report, Some(round_trips + 1), "ping-pong: lost messages");
    Outcome::new(hops, elapsed)
}

struct Counter {
    count: u64,
}

impl Counter {
    fn handle(&mut self, _: u64) {
        self.count += 1;
    }
}

fn counting(messages: u64) -> Outcome {
    let mut counter = Counter { count: 0 };
    let mut mailbox: VecDeque<u64> = VecDeque::with_capacity(BATCH);
    let start = Instant::now();
    for i in 0..messages {
        mailbox.push_back(std::hint::black_box(i));
        if mailbox.len() == BATCH {
            mailbox.drain(..).for_each(|m| counter.handle(m));
        }
    }
    mailbox.drain(..).for_each(|m| counter.handle(m));
    let counted = std::hint::black_box(counter.count);
    let elapsed = start.elapsed();
    assert_eq!(counted, messages, "counting: lost messages");
    Outcome::new(messages, elapsed)
}

struct Cruncher {
    acc: u64,
    left: u64,
}

impl Cruncher {
    fn handle(&mut self, x: u64, reports: &mut Vec<u64>) {
        self.acc = common::crunch(self.acc, x);
        self.left -= 1;
        if self.left == 0 {
            reports.push(self.acc);
        }
    }
}

fn fork_join(actors: u64, per_actor: u64) -> Outcome {
    let mut workers: Vec<Cruncher> = (0..actors)
        .map(|_| Cruncher {
            acc: 0,
            left: per_actor,
        })
        .collect();
    let mut reports = Vec::new();
    let mut mailbox: VecDeque<(usize, u64)> = VecDeque::with_capacity(BATCH);
    let mut run = |mailbox: &mut VecDeque<(usize, u64)>, reports: &mut Vec<u64>| {
        while let Some((to, x)) = mailbox.pop_front() {
            workers[to].handle(x, reports);
        }
    };
    let start = Instant::now();
    for i in 0..per_actor {
        for to in 0..actors as usize {
            mailbox.push_back((to, i));
        }
        if mailbox.len() >= BATCH {
            run(&mut mailbox, &mut reports);
        }
    }
    run(&mut mailbox, &mut reports);
    let elapsed = start.elapsed();
    common::check_fork_join(&reports, actors, per_actor);
    Outcome::new(actors * per_actor, elapsed)
}

fn ring(actors: u64, hops: u64) -> Outcome {
    let actors = actors as usize;
    let mut passed = vec![0u64; actors];
    let mut mailbox: VecDeque<(usize, u64)> = VecDeque::new();
    let mut report = None;
    let start = Instant::now();
    mailbox.push_back((0, 0));
    while let Some((node, done_so_far)) = mailbox.pop_front() {
        passed[node] += 1;
        let done_now = done_so_far + 1;
        if done_now < hops {
            mailbox.push_back(((node + 1) % actors, done_now));
        } else {
            report = Some(done_now);
        }
    }
    let elapsed = start.elapsed();
    assert_eq!(report, Some(hops), "ring: lost hops");
    assert_eq!(passed.iter().sum::<u64>(), hops, "ring: lost hops");
    Outcome::new(hops, elapsed)
}

/// A spawned actor: its own mailbox and no state.
struct Idle {
    mailbox: VecDeque<()>,
}

/// "Spawning" is pushing an actor into the table; sending is pushing to its mailbox and its
/// index to the ready queue; the scheduler then drains the ready actors' mailboxes.
fn spawn_all(n: u64) -> Vec<Idle> {
    let mut actors = Vec::with_capacity(n as usize);
    let mut ready: VecDeque<usize> = VecDeque::new();
    for id in 0..n as usize {
        actors.push(Idle {
            mailbox: VecDeque::new(),
        });
        actors[id].mailbox.push_back(());
        ready.push_back(id);
    }
    while let Some(id) = ready.pop_front() {
        while actors[id].mailbox.pop_front().is_some() {
            common::spawn_handled();
        }
    }
    actors
}

enum Msg {
    /// To the broker: creature `id`, of this colour, asks to meet.
    Meet(usize, Colour),
    Start(usize),
    /// To creature `id`: its partner's colour.
    Mate(usize, Colour),
    Stop(usize),
}

struct Creature {
    colour: Colour,
    met: u64,
}

fn chameneos(creatures: u64, meetings: u64) -> Outcome {
    let mut herd: Vec<Creature> = (0..creatures as usize)
        .map(|id| Creature {
            colour: Colour::initial(id),
            met: 0,
        })
        .collect();
    let mut mall = Mall::new(meetings);
    let mut counts = Vec::new();
    let mut mailbox: VecDeque<Msg> = VecDeque::new();
    let start = Instant::now();
    mailbox.extend((0..creatures as usize).map(Msg::Start));
    while let Some(msg) = mailbox.pop_front() {
        match msg {
            Msg::Meet(id, colour) => match mall.meet(id, colour) {
                MallAction::Wait => {}
                MallAction::Pair { first, second } => {
                    mailbox.push_back(Msg::Mate(first.0, second.1));
                    mailbox.push_back(Msg::Mate(second.0, first.1));
                }
                MallAction::Stop(id) => mailbox.push_back(Msg::Stop(id)),
            },
            Msg::Start(id) => mailbox.push_back(Msg::Meet(id, herd[id].colour)),
            Msg::Mate(id, partner) => {
                let creature = &mut herd[id];
                creature.met += 1;
                creature.colour = creature.colour.complement(partner);
                mailbox.push_back(Msg::Meet(id, creature.colour));
            }
            Msg::Stop(id) => counts.push(herd[id].met),
        }
    }
    let elapsed = start.elapsed();
    common::check_chameneos(&counts, creatures, meetings);
    Outcome::new(meetings, elapsed)
}
