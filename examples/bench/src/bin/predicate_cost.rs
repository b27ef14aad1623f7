//! What a message predicate adds to `post`: posts `N` messages to a process in a group
//! without a predicate, then with `QueueLength`, a `TokenBucket` and the `ResponseTime`
//! controller (each tuned never to reject), and prints ns/post and the ratio to the baseline.
//! Issue 4's bar, after SEDA (0.5 µs enqueue, 0.7 µs with a predicate): at most +40%.
//!
//! Two receiver modes: `held` (the receiver is blocked in a handler, so a post is the
//! predicate plus the inbox push, as SEDA's enqueue microbenchmark) and `live` (the receiver
//! drains concurrently on its own worker). Variants are interleaved over several rounds, in a
//! rotating order, and
//! the median and the best run are reported (the best is the least disturbed by other load on
//! the machine).
//!
//! ```text
//! cargo run --release -p bench --bin predicate_cost [-- N ROUNDS]
//! ```

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use whirl::admission::{ControllerParams, QueueLength, ResponseTime, TokenBucket};
use whirl::prelude::*;
use whirl::time::CoarseClock;
use whirl::Group;

#[derive(Message)]
struct Tick;

/// Blocks the receiver until the other end of the socket is closed. An owned socket, not a
/// channel: the message shares nothing with the sender, and the kernel does the waiting.
#[derive(Message)]
struct Hold(TcpStream);

#[process]
struct Sink {
    ticks: u64,
}

#[process]
impl Sink {
    #[handle]
    fn tick(&mut self, _: Tick) {
        self.ticks += 1;
    }

    #[handle]
    fn hold(&mut self, Hold(mut stream): Hold) {
        // Returns at end of stream (or on an error): when the bench drops its end.
        let _ = stream.read(&mut [0; 1]);
    }
}

/// A connected pair of loopback sockets: the bench keeps one end, the sink blocks reading the
/// other until the bench drops its end.
fn latch() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback listener");
    let release = TcpStream::connect(listener.local_addr().expect("its address"))
        .expect("a loopback connection");
    let (held, _) = listener.accept().expect("the loopback connection");
    (release, held)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Held,
    Live,
}

const VARIANTS: [&str; 4] = ["none", "QueueLength", "TokenBucket", "ResponseTime"];

/// A single-threaded group with predicate `variant`, tuned never to reject.
fn group(rt: &Runtime, variant: usize) -> Group {
    let builder = rt.group("bench").threads(1);
    match variant {
        0 => builder,
        1 => builder.predicate(QueueLength::max(u64::MAX)),
        2 => builder.predicate(TokenBucket::new(1e9, 1 << 40)),
        _ => {
            let mut params = ControllerParams::seda(Duration::from_millis(10));
            params.rate_max = 1e9;
            params.initial_rate = 1e9;
            params.depth = 1 << 40;
            builder.predicate(ResponseTime::with_clock(params, CoarseClock::shared()))
        }
    }
    .build()
    .expect("a fresh runtime has no group named `bench`")
}

/// Nanoseconds per post of `n` posts with predicate `variant`.
fn run(variant: usize, mode: Mode, n: u64) -> f64 {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let group = group(&rt, variant);
    let sink = rt.spawner().group(&group).spawn(Sink { ticks: 0 });
    rt.block_until_idle();
    let release = match mode {
        Mode::Held => {
            let (release, held) = latch();
            if sink.post(Hold(held)).is_err() {
                panic!("the hold was not admitted");
            }
            Some(release)
        }
        Mode::Live => None,
    };
    let start = Instant::now();
    for _ in 0..n {
        if sink.post(Tick).is_err() {
            panic!("{} rejected a message", VARIANTS[variant]);
        }
    }
    let elapsed = start.elapsed();
    drop(release);
    rt.block_until_idle();
    rt.shutdown_graceful();
    elapsed.as_nanos() as f64 / n as f64
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(7);
    // PREDICATE_COST_ONLY=k runs only variant k (and the baseline).
    let only: Option<usize> = std::env::var("PREDICATE_COST_ONLY")
        .ok()
        .and_then(|v| v.parse().ok());
    println!("{n} posts per run, median of {rounds} interleaved rounds");
    for (mode, label) in [(Mode::Held, "held"), (Mode::Live, "live")] {
        let mut samples = vec![Vec::new(); VARIANTS.len()];
        for round in 0..rounds {
            // Rotate the order so that no variant always runs after the same one.
            for i in 0..VARIANTS.len() {
                let v = (round + i) % VARIANTS.len();
                if only.is_none_or(|o| o == v || v == 0) {
                    samples[v].push(run(v, mode, n));
                }
            }
        }
        let best: Vec<f64> = samples
            .iter()
            .map(|s| s.iter().copied().fold(f64::NAN, f64::min))
            .collect();
        let medians: Vec<f64> = samples.into_iter().map(median).collect();
        println!("\nreceiver {label}:");
        println!(
            "{:<14} {:>12} {:>7} {:>12} {:>7}",
            "predicate", "median ns", "ratio", "best ns", "ratio"
        );
        for v in 0..VARIANTS.len() {
            println!(
                "{:<14} {:>12.1} {:>7.2} {:>12.1} {:>7.2}",
                VARIANTS[v],
                medians[v],
                medians[v] / medians[0],
                best[v],
                best[v] / best[0]
            );
        }
    }
}
