//! What every implementation shares: the workloads and their sizes, what a run reports, the
//! resident-memory probe, and the pure logic of the workloads (the fork-join arithmetic and the
//! chameneos mall), so that every implementation does exactly the same logical work.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The six workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    PingPong,
    Counting,
    ForkJoin,
    Ring,
    Spawn,
    Chameneos,
}

impl Workload {
    pub const ALL: [Workload; 6] = [
        Workload::PingPong,
        Workload::Counting,
        Workload::ForkJoin,
        Workload::Ring,
        Workload::Spawn,
        Workload::Chameneos,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Workload::PingPong => "ping-pong",
            Workload::Counting => "counting",
            Workload::ForkJoin => "fork-join",
            Workload::Ring => "ring",
            Workload::Spawn => "spawn",
            Workload::Chameneos => "chameneos",
        }
    }

    /// What one unit of the throughput is.
    pub fn unit(self) -> &'static str {
        match self {
            Workload::PingPong | Workload::Counting | Workload::ForkJoin => "msgs/s",
            Workload::Ring => "hops/s",
            Workload::Spawn => "spawns/s",
            Workload::Chameneos => "meetings/s",
        }
    }

    pub fn parse(name: &str) -> Option<Workload> {
        Workload::ALL.into_iter().find(|w| w.name() == name)
    }
}

/// The sizes of the workloads. `--quick` divides every amount of work (messages, hops, spawns,
/// meetings) by 10 and keeps the shapes (60 fork-join actors, a ring of 1,000, 100 creatures).
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// Round trips between the two players; each is two messages.
    pub ping_pong_round_trips: u64,
    /// Messages the producer sends to the counter.
    pub counting_messages: u64,
    pub fork_join_actors: u64,
    /// Messages each fork-join actor receives.
    pub fork_join_per_actor: u64,
    pub ring_actors: u64,
    pub ring_hops: u64,
    /// Actors spawned by the actor crates, tokio and the sequential loop.
    pub spawn_actors: u64,
    /// Threads spawned by the `threads` implementation (a million OS threads is not possible).
    pub spawn_threads: u64,
    pub chameneos_creatures: u64,
    pub chameneos_meetings: u64,
}

impl Sizes {
    pub fn full() -> Sizes {
        Sizes {
            ping_pong_round_trips: 1_000_000,
            counting_messages: 10_000_000,
            fork_join_actors: 60,
            fork_join_per_actor: 200_000,
            ring_actors: 1_000,
            ring_hops: 10_000_000,
            spawn_actors: 1_000_000,
            spawn_threads: 10_000,
            chameneos_creatures: 100,
            chameneos_meetings: 1_000_000,
        }
    }

    pub fn quick() -> Sizes {
        let full = Sizes::full();
        Sizes {
            ping_pong_round_trips: full.ping_pong_round_trips / 10,
            counting_messages: full.counting_messages / 10,
            fork_join_per_actor: full.fork_join_per_actor / 10,
            ring_hops: full.ring_hops / 10,
            spawn_actors: full.spawn_actors / 10,
            spawn_threads: full.spawn_threads / 10,
            chameneos_meetings: full.chameneos_meetings / 10,
            ..full
        }
    }

    pub fn new(quick: bool) -> Sizes {
        if quick {
            Sizes::quick()
        } else {
            Sizes::full()
        }
    }
}

/// What one run of one workload reports.
#[derive(Clone, Copy, Debug)]
pub struct Outcome {
    /// Units of work done (messages, hops, spawns or meetings).
    pub units: u64,
    pub elapsed: Duration,
    /// For the spawn workload: the growth of the resident set per actor.
    pub rss_bytes_per_actor: Option<u64>,
}

impl Outcome {
    pub fn new(units: u64, elapsed: Duration) -> Outcome {
        Outcome {
            units,
            elapsed,
            rss_bytes_per_actor: None,
        }
    }
}

/// The resident set size of this process (`VmRSS` in `/proc/self/status`), in bytes; 0 where it
/// cannot be read.
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("VmRSS:"))
                .and_then(|line| line.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Messages handled by the spawn workload's idle actors. A static, so that the actors hold no
/// state at all in any implementation (each child process runs one implementation, once).
#[whirl::allow_shared(
    reason = "benchmark harness: the spawn row's completion count, read by the bench thread"
)]
pub static SPAWN_HANDLED: AtomicU64 = AtomicU64::new(0);

/// What every idle actor of the spawn workload does with its one message.
#[inline]
pub fn spawn_handled() {
    SPAWN_HANDLED.fetch_add(1, Ordering::Relaxed);
}

/// Waits until the spawn workload's actors have handled `n` messages.
pub fn wait_spawn_handled(n: u64) {
    while SPAWN_HANDLED.load(Ordering::Acquire) < n {
        std::thread::sleep(Duration::from_micros(50));
    }
    assert_eq!(
        SPAWN_HANDLED.load(Ordering::Acquire),
        n,
        "spawn: more messages handled than sent"
    );
}

/// Measures the spawn workload: `spawn_all` spawns `n` actors, sends each one message and
/// returns whatever keeps them alive once all are handled. The guard is leaked: the child
/// process exits right after printing its result.
pub fn measure_spawn<G>(n: u64, spawn_all: impl FnOnce() -> G) -> Outcome {
    let before = rss_bytes();
    let start = std::time::Instant::now();
    let keep_alive = spawn_all();
    wait_spawn_handled(n);
    let elapsed = start.elapsed();
    let after = rss_bytes();
    std::mem::forget(keep_alive);
    Outcome {
        units: n,
        elapsed,
        rss_bytes_per_actor: Some(after.saturating_sub(before) / n.max(1)),
    }
}

/// The "little arithmetic" a fork-join actor does per message.
#[inline]
pub fn crunch(acc: u64, x: u64) -> u64 {
    std::hint::black_box(acc.wrapping_mul(31).wrapping_add(x))
}

/// What every fork-join actor's accumulator must be after receiving `0..per_actor` in order.
pub fn fork_join_expected(per_actor: u64) -> u64 {
    (0..per_actor).fold(0, |acc, x| acc.wrapping_mul(31).wrapping_add(x))
}

/// Checks the fork-join accumulators the actors reported.
pub fn check_fork_join(accs: &[u64], actors: u64, per_actor: u64) {
    assert_eq!(accs.len() as u64, actors, "fork-join: missing actors");
    let expected = fork_join_expected(per_actor);
    for (i, acc) in accs.iter().enumerate() {
        assert_eq!(
            *acc, expected,
            "fork-join: actor report {i} lost or reordered messages"
        );
    }
}

/// A chameneos colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, whirl::Isolated)]
pub enum Colour {
    Blue,
    Red,
    Yellow,
}

impl Colour {
    /// The colour creature `i` starts with.
    pub fn initial(i: usize) -> Colour {
        [Colour::Blue, Colour::Red, Colour::Yellow][i % 3]
    }

    /// The colour a creature of colour `self` takes after meeting one of colour `other`.
    pub fn complement(self, other: Colour) -> Colour {
        use Colour::*;
        match (self, other) {
            (a, b) if a == b => a,
            (Blue, Red) | (Red, Blue) => Yellow,
            (Blue, Yellow) | (Yellow, Blue) => Red,
            (Red, Yellow) | (Yellow, Red) => Blue,
            _ => unreachable!("all pairs of colours are covered"),
        }
    }
}

/// What the mall tells the broker to do with a creature's request to meet.
#[derive(Debug)]
pub enum MallAction {
    /// The creature waits for a partner.
    Wait,
    /// Two creatures meet: tell each the other's colour.
    Pair {
        first: (usize, Colour),
        second: (usize, Colour),
    },
    /// The meetings are exhausted: tell the creature to stop.
    Stop(usize),
}

/// The chameneos broker's state: meetings left and the creature waiting for a partner.
#[derive(Debug, whirl::Isolated)]
pub struct Mall {
    left: u64,
    waiting: Option<(usize, Colour)>,
}

impl Mall {
    pub fn new(meetings: u64) -> Mall {
        Mall {
            left: meetings,
            waiting: None,
        }
    }

    /// Creature `id`, of colour `colour`, asks to meet.
    pub fn meet(&mut self, id: usize, colour: Colour) -> MallAction {
        if self.left == 0 {
            assert!(self.waiting.is_none(), "chameneos: a creature left waiting");
            return MallAction::Stop(id);
        }
        match self.waiting.take() {
            None => {
                self.waiting = Some((id, colour));
                MallAction::Wait
            }
            Some(first) => {
                assert_ne!(first.0, id, "chameneos: a creature met itself");
                self.left -= 1;
                MallAction::Pair {
                    first,
                    second: (id, colour),
                }
            }
        }
    }
}

/// Checks the meeting counts the creatures reported when they stopped.
pub fn check_chameneos(counts: &[u64], creatures: u64, meetings: u64) {
    assert_eq!(
        counts.len() as u64,
        creatures,
        "chameneos: not every creature stopped"
    );
    assert_eq!(
        counts.iter().sum::<u64>(),
        2 * meetings,
        "chameneos: every meeting involves two creatures"
    );
}

/// Receives `n` values from a completion channel (every implementation's actors report on one).
pub fn collect(rx: &std::sync::mpsc::Receiver<u64>, n: u64, what: &str) -> Vec<u64> {
    (0..n)
        .map(|_| {
            rx.recv()
                .unwrap_or_else(|_| panic!("{what}: every reporter hung up"))
        })
        .collect()
}
