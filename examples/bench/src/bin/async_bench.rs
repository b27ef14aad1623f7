//! What async handlers cost and what they buy, as same-run ratios:
//!
//! * ping-pong with `async fn` handlers against the same with plain handlers;
//! * an `ask(...).await` round trip to a process against a tokio oneshot round trip to a tokio
//!   task (both awaited from a tokio current-thread runtime);
//! * the memory of processes that each hold a pending await, on one worker;
//! * the throughput of 1,000 processes that each await a 10 ms sleep per message, on one
//!   worker (they must overlap: one worker, 100 messages/s per process at most).
//!
//! ```text
//! cargo run --release -p bench --bin async_bench              # 1,000,000 pending processes
//! cargo run --release -p bench --bin async_bench -- --pending 100000
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use whirl::prelude::*;

#[derive(clap::Parser, Debug)]
#[command(
    name = "async_bench",
    about = "Async handlers against sync handlers and tokio."
)]
struct Cli {
    /// Round trips in the ping-pong and request/reply runs.
    #[arg(long, default_value_t = 1_000_000)]
    round_trips: u64,
    /// Processes holding a pending await, for the memory figure.
    #[arg(long, default_value_t = 1_000_000)]
    pending: usize,
    /// Messages per sleeping process in the overlap run.
    #[arg(long, default_value_t = 50)]
    naps: u64,
    /// Run only the async ping-pong, once (for profilers: `valgrind --tool=callgrind`).
    #[arg(long)]
    profile_async_ping_pong: bool,
}

/// The ball, with the hits left.
#[derive(Message)]
struct Ball(u64);

#[derive(Message)]
struct Peer(Addr<Player>);

/// Plays back with a plain handler or an async one.
#[process]
struct Player {
    peer: Option<Addr<Player>>,
    done: Option<whirl::SharedClient<std::sync::mpsc::SyncSender<()>>>,
}

#[derive(Message)]
struct SyncBall(u64);

#[derive(Message)]
struct Done(whirl::SharedClient<std::sync::mpsc::SyncSender<()>>);

#[process]
impl Player {
    #[handle]
    fn peer(&mut self, Peer(peer): Peer) {
        self.peer = Some(peer);
    }

    #[handle]
    fn done(&mut self, Done(tx): Done) {
        self.done = Some(tx);
    }

    #[handle]
    fn sync_ball(&mut self, SyncBall(left): SyncBall) {
        self.hit(left, SyncBall);
    }

    #[handle]
    async fn ball(&mut self, Ball(left): Ball) {
        self.hit(left, Ball);
    }
}

impl Player {
    fn hit<M: Message>(&mut self, left: u64, ball: fn(u64) -> M)
    where
        Player: Handles<M>,
    {
        if left == 0 {
            if let Some(done) = &self.done {
                let _ = done.send(());
            }
        } else if let Some(peer) = &self.peer {
            let _ = peer.post(ball(left - 1));
        }
    }
}

/// Plays `trips` round trips between two players; returns the time taken.
fn rally(trips: u64, asynchronous: bool) -> Duration {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let a = rt.spawn(Player {
        peer: None,
        done: None,
    });
    let b = rt.spawn(Player {
        peer: None,
        done: None,
    });
    let _ = a.post(Peer(b.clone()));
    let _ = b.post(Peer(a.clone()));
    let sender = whirl::SharedClient::new(tx, "the benchmark's completion signal");
    let _ = a.post(Done(sender.clone()));
    let _ = b.post(Done(sender));
    rt.block_until_idle();
    let start = Instant::now();
    let hits = trips * 2;
    if asynchronous {
        let _ = a.post(Ball(hits));
    } else {
        let _ = a.post(SyncBall(hits));
    }
    let _ = rx.recv();
    let elapsed = start.elapsed();
    rt.shutdown_graceful();
    elapsed
}

#[derive(Message)]
struct Echo(u64);

#[process]
struct Echoer;

#[process]
impl Echoer {
    #[handle]
    fn echo(&mut self, Echo(n): Echo) -> u64 {
        n + 1
    }
}

/// `trips` sequential `ask(...).await` round trips to a process, from a tokio task.
fn ask_round_trips(trips: u64) -> Duration {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let echo = rt.spawn(Echoer);
    let tokio_rt = tokio::runtime::Builder::new_current_thread().build();
    let Ok(tokio_rt) = tokio_rt else {
        return Duration::ZERO;
    };
    let start = Instant::now();
    tokio_rt.block_on(async {
        let mut n = 0;
        for _ in 0..trips {
            n = echo.ask(Echo(n)).await.unwrap_or(n);
        }
        assert_eq!(n, trips);
    });
    let elapsed = start.elapsed();
    rt.shutdown_graceful();
    elapsed
}

/// `trips` sequential round trips to a tokio task that answers through a oneshot (on a
/// second worker thread, as a whirl process runs on its worker).
fn oneshot_round_trips(trips: u64) -> Duration {
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build();
    let client_rt = tokio::runtime::Builder::new_current_thread().build();
    let (Ok(server_rt), Ok(client_rt)) = (server_rt, client_rt) else {
        return Duration::ZERO;
    };
    let (tx, mut rx) =
        tokio::sync::mpsc::unbounded_channel::<(u64, tokio::sync::oneshot::Sender<u64>)>();
    server_rt.spawn(async move {
        while let Some((n, reply)) = rx.recv().await {
            let _ = reply.send(n + 1);
        }
    });
    let start = Instant::now();
    client_rt.block_on(async {
        let mut n = 0;
        for _ in 0..trips {
            let (reply, answer) = tokio::sync::oneshot::channel();
            let _ = tx.send((n, reply));
            n = answer.await.unwrap_or(n);
        }
        assert_eq!(n, trips);
    });
    start.elapsed()
}

#[derive(Message)]
struct Wait;

/// Awaits something that never comes (until the process is killed), saying when it started.
#[process]
struct Waiter {
    waiting: whirl::SharedClient<Arc<AtomicUsize>>,
}

#[process]
impl Waiter {
    #[handle]
    async fn wait(&mut self, _: Wait) {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        std::future::pending::<()>().await;
    }
}

/// Resident memory of this program, from `/proc/self/statm` (Linux), in bytes.
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Bytes per process holding a pending await, with `count` of them on one worker.
fn pending_memory(count: usize) -> Option<(f64, Duration)> {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let waiting = Arc::new(AtomicUsize::new(0));
    let counter = whirl::SharedClient::new(waiting.clone(), "the benchmark's count of waiters");
    let before = resident_bytes()?;
    let start = Instant::now();
    for _ in 0..count {
        let w = rt.spawn(Waiter {
            waiting: counter.clone(),
        });
        let _ = w.post(Wait);
    }
    while waiting.load(Ordering::Relaxed) < count {
        std::thread::sleep(Duration::from_millis(10));
    }
    let after = resident_bytes()?;
    let elapsed = start.elapsed();
    rt.shutdown_timeout(Duration::ZERO);
    Some((
        (after.saturating_sub(before)) as f64 / count as f64,
        elapsed,
    ))
}

#[derive(Message)]
struct Nap;

/// Sleeps 10 ms per message.
#[process]
struct Napper;

#[process]
impl Napper {
    #[handle]
    async fn nap(&mut self, _: Nap) {
        whirl::time::sleep(Duration::from_millis(10)).await;
    }
}

/// 1,000 nappers, `naps` messages each, on one worker: messages per second.
fn overlap(naps: u64) -> f64 {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let nappers: Vec<Addr<Napper>> = (0..1_000).map(|_| rt.spawn(Napper)).collect();
    rt.block_until_idle();
    let start = Instant::now();
    for _ in 0..naps {
        for n in &nappers {
            let _ = n.post(Nap);
        }
    }
    rt.block_until_idle();
    let elapsed = start.elapsed();
    rt.shutdown_graceful();
    (naps * 1_000) as f64 / elapsed.as_secs_f64()
}

fn main() {
    let cli = Cli::parse();
    let trips = cli.round_trips;
    if cli.profile_async_ping_pong {
        let took = rally(trips, true);
        println!(
            "async ping-pong: {:.0} ns/round trip",
            took.as_nanos() as f64 / trips as f64
        );
        return;
    }

    // Interleaved, best of three each, so a noisy moment hurts both sides alike.
    let mut sync_best = Duration::MAX;
    let mut async_best = Duration::MAX;
    let mut ask_best = Duration::MAX;
    let mut oneshot_best = Duration::MAX;
    for _ in 0..3 {
        sync_best = sync_best.min(rally(trips, false));
        async_best = async_best.min(rally(trips, true));
        ask_best = ask_best.min(ask_round_trips(trips));
        oneshot_best = oneshot_best.min(oneshot_round_trips(trips));
    }
    let per = |d: Duration| d.as_nanos() as f64 / trips as f64;
    println!(
        "ping-pong, {trips} round trips, 1 worker: sync handlers {:.0} ns/round trip, async handlers {:.0} ns/round trip",
        per(sync_best),
        per(async_best)
    );
    println!(
        "async/sync ping-pong time ratio: {:.2}",
        async_best.as_secs_f64() / sync_best.as_secs_f64()
    );
    println!(
        "request/reply, {trips} sequential round trips from a tokio task: whirl ask().await {:.0} ns, tokio oneshot {:.0} ns",
        per(ask_best),
        per(oneshot_best)
    );
    println!(
        "ask/oneshot round-trip time ratio: {:.2}",
        ask_best.as_secs_f64() / oneshot_best.as_secs_f64()
    );
    match pending_memory(cli.pending) {
        Some((bytes, took)) => println!(
            "{} processes each holding a pending await, 1 worker: {:.0} bytes each, {:.2} GiB in all (set up in {:.1?})",
            cli.pending,
            bytes,
            bytes * cli.pending as f64 / (1u64 << 30) as f64,
            took
        ),
        None => println!("pending-await memory: /proc/self/statm is not readable here"),
    }
    let rate = overlap(cli.naps);
    println!(
        "1,000 processes awaiting a 10 ms sleep per message, 1 worker: {rate:.0} messages/s (sequential would be 100/s)"
    );
}
