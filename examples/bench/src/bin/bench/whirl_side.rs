//! The whirl side of the benchmark: the same workloads as the tokio side, as `#[process]`es.
//!
//! The bench thread learns that a workload is done the way the tokio side does, through a
//! channel or a countdown it reads from outside the runtime. Those signals belong to the
//! harness, not to the processes measured, and are held as [`SharedClient`]s saying so.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::time::Instant;

use whirl::prelude::*;
use whirl::SharedClient;

use crate::workloads::{wait_for_zero, Measured, Workloads};

/// Why the harness's completion signals may be shared with the processes measured.
const HARNESS: &str =
    "benchmark harness: a completion signal the bench thread reads, as on the tokio side";

/// Wraps one of the harness's completion signals.
fn signal<T: Send + Sync + 'static>(signal: T) -> SharedClient<T> {
    SharedClient::new(signal, HARNESS)
}

pub struct Bench {
    rt: Runtime,
}

impl Bench {
    pub fn new(threads: usize, lifo_slot: bool) -> Self {
        Bench {
            rt: Runtime::builder()
                .threads(threads)
                .lifo_slot(lifo_slot)
                .build()
                .expect("the runtime starts"),
        }
    }
}

impl Workloads for Bench {
    fn ping_pong(&self, round_trips: u64) -> Measured {
        let (done_tx, done_rx) = channel();
        let a = self.rt.spawn(Player::new(done_tx.clone()));
        let b = self.rt.spawn(Player::new(done_tx));
        post(&a, Peer(b.clone()));
        post(&b, Peer(a.clone()));
        self.rt.block_until_idle();
        let hops = 2 * round_trips;
        let start = Instant::now();
        post(&a, Ball(hops));
        let handled = done_rx.recv().expect("ping-pong finished");
        let elapsed = start.elapsed();
        assert_eq!(handled, hops / 2 + 1, "ping-pong lost messages");
        Measured {
            elapsed,
            units: hops,
        }
    }

    fn counting(&self, posts: u64) -> Measured {
        let (done_tx, done_rx) = channel();
        let counter = self.rt.spawn(Counter {
            count: 0,
            expected: posts,
            done: signal(done_tx),
        });
        let start = Instant::now();
        for i in 0..posts {
            post(&counter, Count(i));
        }
        let counted = done_rx.recv().expect("counting finished");
        let elapsed = start.elapsed();
        assert_eq!(counted, posts);
        Measured {
            elapsed,
            units: posts,
        }
    }

    fn fork_join(&self, processes: u64, per_process: u64) -> Measured {
        let remaining = Arc::new(AtomicU64::new(processes));
        let workers: Vec<_> = (0..processes)
            .map(|_| {
                self.rt.spawn(Crunch {
                    acc: 0,
                    left: per_process,
                    remaining: signal(Arc::clone(&remaining)),
                })
            })
            .collect();
        self.rt.block_until_idle();
        let start = Instant::now();
        for i in 0..per_process {
            for w in &workers {
                post(w, Work(i));
            }
        }
        wait_for_zero(&remaining);
        Measured {
            elapsed: start.elapsed(),
            units: processes * per_process,
        }
    }

    fn ring(&self, size: u64, hops: u64) -> Measured {
        let (done_tx, done_rx) = channel();
        let nodes: Vec<_> = (0..size)
            .map(|_| {
                self.rt.spawn(Node {
                    next: None,
                    done: signal(done_tx.clone()),
                    passed: 0,
                })
            })
            .collect();
        for (i, node) in nodes.iter().enumerate() {
            let next = nodes[(i + 1) % nodes.len()].clone();
            post(node, Next(next));
        }
        self.rt.block_until_idle();
        let start = Instant::now();
        post(&nodes[0], Token(hops));
        let passed = done_rx.recv().expect("ring finished");
        let elapsed = start.elapsed();
        assert!(passed > 0 && passed <= hops);
        self.rt.block_until_idle();
        Measured {
            elapsed,
            units: hops,
        }
    }
}

fn post<P: Handles<M>, M: Message>(addr: &Addr<P>, msg: M) {
    if addr.post(msg).is_err() {
        panic!("benchmark process terminated unexpectedly");
    }
}

#[derive(Message)]
pub struct Peer(Addr<Player>);

#[derive(Message)]
pub struct Ball(u64);

#[process]
pub struct Player {
    peer: Option<Addr<Player>>,
    handled: u64,
    done: SharedClient<Sender<u64>>,
}

impl Player {
    fn new(done: Sender<u64>) -> Self {
        Player {
            peer: None,
            handled: 0,
            done: signal(done),
        }
    }
}

#[process]
impl Player {
    #[handle]
    fn peer(&mut self, Peer(peer): Peer) {
        self.peer = Some(peer);
    }

    #[handle]
    fn ball(&mut self, Ball(n): Ball) {
        self.handled += 1;
        match (&self.peer, n) {
            (_, 0) | (None, _) => {
                let _ = self.done.send(self.handled);
            }
            (Some(peer), n) => post(peer, Ball(n - 1)),
        }
    }
}

#[derive(Message)]
pub struct Count(#[allow(dead_code)] u64);

#[process]
pub struct Counter {
    count: u64,
    expected: u64,
    done: SharedClient<Sender<u64>>,
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

#[derive(Message)]
pub struct Work(u64);

#[process]
pub struct Crunch {
    acc: u64,
    left: u64,
    remaining: SharedClient<Arc<AtomicU64>>,
}

#[process]
impl Crunch {
    #[handle]
    fn work(&mut self, Work(x): Work) {
        self.acc = std::hint::black_box(self.acc.wrapping_mul(31).wrapping_add(x));
        self.left -= 1;
        if self.left == 0 {
            self.remaining.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

#[derive(Message)]
pub struct Next(Addr<Node>);

#[derive(Message)]
pub struct Token(u64);

#[process]
pub struct Node {
    next: Option<Addr<Node>>,
    done: SharedClient<Sender<u64>>,
    passed: u64,
}

#[process]
impl Node {
    #[handle]
    fn next(&mut self, Next(next): Next) {
        self.next = Some(next);
    }

    #[handle]
    fn token(&mut self, Token(left): Token) {
        self.passed += 1;
        match (&self.next, left) {
            (Some(next), left) if left > 1 => post(next, Token(left - 1)),
            _ => {
                let _ = self.done.send(self.passed);
            }
        }
    }
}

#[derive(Message)]
pub struct Wake(#[allow(dead_code)] u64);

/// A process that handles one message and then idles. It keeps nothing: the harness learns that
/// every process has handled its message from the runtime's own counts (the tokio side's task
/// keeps an `Arc` clone of its countdown: 8 bytes).
#[process]
pub struct Idle;

#[process]
impl Idle {
    #[handle]
    fn wake(&mut self, _: Wake) {}
}

/// Spawns `n` processes, posts one message to each, and returns once all are handled, with
/// everything needed to keep them alive.
pub fn spawn_many(n: u64, threads: usize) -> (Runtime, Vec<Addr<Idle>>) {
    let rt = Runtime::builder()
        .threads(threads)
        .build()
        .expect("the runtime starts");
    let addrs: Vec<_> = (0..n)
        .map(|_| {
            let addr = rt.spawn(Idle);
            post(&addr, Wake(1));
            addr
        })
        .collect();
    while rt.counts().handled < n {
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
    (rt, addrs)
}
