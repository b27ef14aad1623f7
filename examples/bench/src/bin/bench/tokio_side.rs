//! The baseline: plain tokio tasks, one `tokio::sync::mpsc::unbounded_channel` per actor
//! (unbounded, so that sending never waits, like `post`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::runtime::Runtime;
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tokio::sync::oneshot;

use crate::workloads::{wait_for_zero, Measured, Workloads};

pub struct Bench {
    rt: Runtime,
}

fn runtime(threads: usize) -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .build()
        .expect("tokio runtime")
}

impl Bench {
    pub fn new(threads: usize) -> Self {
        Bench {
            rt: runtime(threads),
        }
    }
}

impl Workloads for Bench {
    fn ping_pong(&self, round_trips: u64) -> Measured {
        let hops = 2 * round_trips;
        let (a_tx, mut a_rx) = unbounded_channel::<u64>();
        let (b_tx, mut b_rx) = unbounded_channel::<u64>();
        let (done_tx, done_rx) = oneshot::channel();
        let b_for_a = b_tx.clone();
        self.rt.spawn(async move {
            let mut handled = 0u64;
            while let Some(n) = a_rx.recv().await {
                handled += 1;
                if n == 0 {
                    break;
                }
                let _ = b_for_a.send(n - 1);
            }
            let _ = done_tx.send(handled);
        });
        let a_for_b = a_tx.clone();
        self.rt.spawn(async move {
            while let Some(n) = b_rx.recv().await {
                if n == 0 {
                    break;
                }
                let _ = a_for_b.send(n - 1);
            }
        });
        let start = Instant::now();
        let _ = a_tx.send(hops);
        let handled = self.rt.block_on(done_rx).expect("ping-pong finished");
        let elapsed = start.elapsed();
        assert_eq!(handled, hops / 2 + 1, "ping-pong lost messages");
        Measured {
            elapsed,
            units: hops,
        }
    }

    fn counting(&self, posts: u64) -> Measured {
        let (tx, mut rx) = unbounded_channel::<u64>();
        let (done_tx, done_rx) = oneshot::channel();
        self.rt.spawn(async move {
            let mut count = 0u64;
            while rx.recv().await.is_some() {
                count += 1;
                if count == posts {
                    break;
                }
            }
            let _ = done_tx.send(count);
        });
        let start = Instant::now();
        for i in 0..posts {
            let _ = tx.send(i);
        }
        let counted = self.rt.block_on(done_rx).expect("counting finished");
        let elapsed = start.elapsed();
        assert_eq!(counted, posts);
        Measured {
            elapsed,
            units: posts,
        }
    }

    fn fork_join(&self, processes: u64, per_process: u64) -> Measured {
        let remaining = Arc::new(AtomicU64::new(processes));
        let senders: Vec<UnboundedSender<u64>> = (0..processes)
            .map(|_| {
                let (tx, mut rx) = unbounded_channel::<u64>();
                let remaining = Arc::clone(&remaining);
                self.rt.spawn(async move {
                    let mut acc = 0u64;
                    let mut left = per_process;
                    while let Some(x) = rx.recv().await {
                        acc = std::hint::black_box(acc.wrapping_mul(31).wrapping_add(x));
                        left -= 1;
                        if left == 0 {
                            remaining.fetch_sub(1, Ordering::AcqRel);
                        }
                    }
                });
                tx
            })
            .collect();
        let start = Instant::now();
        for i in 0..per_process {
            for tx in &senders {
                let _ = tx.send(i);
            }
        }
        wait_for_zero(&remaining);
        Measured {
            elapsed: start.elapsed(),
            units: processes * per_process,
        }
    }

    fn ring(&self, size: u64, hops: u64) -> Measured {
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let mut senders = Vec::new();
        let mut receivers = Vec::new();
        for _ in 0..size {
            let (tx, rx) = unbounded_channel::<u64>();
            senders.push(tx);
            receivers.push(rx);
        }
        for (i, mut rx) in receivers.into_iter().enumerate() {
            let next = senders[(i + 1) % senders.len()].clone();
            let done = done_tx.clone();
            self.rt.spawn(async move {
                let mut passed = 0u64;
                while let Some(left) = rx.recv().await {
                    passed += 1;
                    if left > 1 {
                        let _ = next.send(left - 1);
                    } else {
                        let _ = done.send(passed);
                    }
                }
            });
        }
        let start = Instant::now();
        let _ = senders[0].send(hops);
        let passed = done_rx.recv().expect("ring finished");
        let elapsed = start.elapsed();
        assert!(passed > 0 && passed <= hops);
        Measured {
            elapsed,
            units: hops,
        }
    }
}

/// Spawns `n` tasks with a channel each, sends one message to each, and returns once all are
/// handled, with everything needed to keep them alive and idle.
pub fn spawn_many(n: u64, threads: usize) -> (Runtime, Vec<UnboundedSender<u64>>) {
    let rt = runtime(threads);
    let remaining = Arc::new(AtomicU64::new(n));
    let senders: Vec<_> = (0..n)
        .map(|_| {
            let (tx, mut rx) = unbounded_channel::<u64>();
            let remaining = Arc::clone(&remaining);
            rt.spawn(async move {
                while rx.recv().await.is_some() {
                    remaining.fetch_sub(1, Ordering::AcqRel);
                }
            });
            let _ = tx.send(1);
            tx
        })
        .collect();
    wait_for_zero(&remaining);
    (rt, senders)
}
