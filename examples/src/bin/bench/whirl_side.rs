//! The whirl side of the benchmark: processes written the way `#[process]` expands them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::time::Instant;

use whirl::{Addr, Ctx, Failure, Process, Runtime};

use crate::Measured;

/// These processes are written by hand, as `#[process]` would expand them; each accepts just
/// its own message type.
macro_rules! accepts_own_message {
    ($($process:ty),*) => {$(
        impl whirl::Handles<<$process as Process>::Message> for $process {
            #[inline]
            fn into_message(msg: <$process as Process>::Message) -> <$process as Process>::Message {
                msg
            }
        }
    )*};
}

accepts_own_message!(Player, Counter, Crunch, Node, Idle);

pub(crate) struct Bench {
    rt: Runtime,
}

/// Waits until `remaining` reaches zero, checking often enough not to distort the rate.
pub(crate) fn wait_for_zero(remaining: &AtomicU64) {
    while remaining.load(Ordering::Acquire) != 0 {
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
}

impl Bench {
    pub(crate) fn new(threads: usize, lifo_slot: bool) -> Self {
        Bench {
            rt: Runtime::builder()
                .threads(threads)
                .lifo_slot(lifo_slot)
                .build(),
        }
    }
}

impl crate::Workloads for Bench {
    fn ping_pong(&self, round_trips: u64) -> Measured {
        let (done_tx, done_rx) = channel();
        let a = self.rt.spawn(Player::new(done_tx.clone()));
        let b = self.rt.spawn(Player::new(done_tx));
        post(&a, PlayerMsg::Peer(b.clone()));
        post(&b, PlayerMsg::Peer(a.clone()));
        self.rt.block_until_idle();
        let hops = 2 * round_trips;
        let start = Instant::now();
        post(&a, PlayerMsg::Ball(hops));
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
            done: done_tx,
        });
        let start = Instant::now();
        for i in 0..posts {
            post(&counter, i);
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
                    remaining: Arc::clone(&remaining),
                })
            })
            .collect();
        self.rt.block_until_idle();
        let start = Instant::now();
        for i in 0..per_process {
            for w in &workers {
                post(w, i);
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
                    done: done_tx.clone(),
                    passed: 0,
                })
            })
            .collect();
        for (i, node) in nodes.iter().enumerate() {
            let next = nodes[(i + 1) % nodes.len()].clone();
            post(node, NodeMsg::Next(next));
        }
        self.rt.block_until_idle();
        let start = Instant::now();
        post(&nodes[0], NodeMsg::Token(hops));
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

fn post<P: whirl::Handles<M>, M: 'static>(addr: &Addr<P>, msg: M) {
    if addr.post(msg).is_err() {
        panic!("benchmark process terminated unexpectedly");
    }
}

pub(crate) struct Player {
    peer: Option<Addr<Player>>,
    handled: u64,
    done: Sender<u64>,
}

impl Player {
    fn new(done: Sender<u64>) -> Self {
        Player {
            peer: None,
            handled: 0,
            done,
        }
    }
}

pub(crate) enum PlayerMsg {
    Peer(Addr<Player>),
    Ball(u64),
}

impl Process for Player {
    type Message = PlayerMsg;
    fn handle(&mut self, msg: PlayerMsg, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        match msg {
            PlayerMsg::Peer(p) => self.peer = Some(p),
            PlayerMsg::Ball(n) => {
                self.handled += 1;
                match (&self.peer, n) {
                    (_, 0) | (None, _) => {
                        let _ = self.done.send(self.handled);
                    }
                    (Some(peer), n) => post(peer, PlayerMsg::Ball(n - 1)),
                }
            }
        }
        Ok(())
    }
}

pub(crate) struct Counter {
    count: u64,
    expected: u64,
    done: Sender<u64>,
}

impl Process for Counter {
    type Message = u64;
    fn handle(&mut self, _msg: u64, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        self.count += 1;
        if self.count == self.expected {
            let _ = self.done.send(self.count);
        }
        Ok(())
    }
}

pub(crate) struct Crunch {
    acc: u64,
    left: u64,
    remaining: Arc<AtomicU64>,
}

impl Process for Crunch {
    type Message = u64;
    fn handle(&mut self, x: u64, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        self.acc = std::hint::black_box(self.acc.wrapping_mul(31).wrapping_add(x));
        self.left -= 1;
        if self.left == 0 {
            self.remaining.fetch_sub(1, Ordering::AcqRel);
        }
        Ok(())
    }
}

pub(crate) struct Node {
    next: Option<Addr<Node>>,
    done: Sender<u64>,
    passed: u64,
}

pub(crate) enum NodeMsg {
    Next(Addr<Node>),
    Token(u64),
}

impl Process for Node {
    type Message = NodeMsg;
    fn handle(&mut self, msg: NodeMsg, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        match msg {
            NodeMsg::Next(n) => self.next = Some(n),
            NodeMsg::Token(left) => {
                self.passed += 1;
                match (&self.next, left) {
                    (Some(next), left) if left > 1 => post(next, NodeMsg::Token(left - 1)),
                    _ => {
                        let _ = self.done.send(self.passed);
                    }
                }
            }
        }
        Ok(())
    }
}

/// A process that handles one message and then idles.
pub(crate) struct Idle {
    remaining: Arc<AtomicU64>,
}

impl Process for Idle {
    type Message = u64;
    fn handle(&mut self, _msg: u64, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        self.remaining.fetch_sub(1, Ordering::AcqRel);
        Ok(())
    }
}

/// Spawns `n` processes, posts one message to each, and returns once all are handled, with
/// everything needed to keep them alive.
pub(crate) fn spawn_many(n: u64, threads: usize) -> (Runtime, Vec<Addr<Idle>>) {
    let rt = Runtime::builder().threads(threads).build();
    let remaining = Arc::new(AtomicU64::new(n));
    let addrs: Vec<_> = (0..n)
        .map(|_| {
            let addr = rt.spawn(Idle {
                remaining: Arc::clone(&remaining),
            });
            post(&addr, 1u64);
            addr
        })
        .collect();
    wait_for_zero(&remaining);
    (rt, addrs)
}
