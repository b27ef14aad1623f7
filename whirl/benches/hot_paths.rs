//! Criterion benchmarks of the hot paths, so that a regression shows per commit:
//!
//! * `post/idle`: a post that finds its receiver idle (takes the token, schedules it);
//! * `post/held`: a post to a receiver busy in a handler (the inbox push alone);
//! * `post/live`: a post to a receiver draining on its own worker at the same time (the
//!   streaming shape);
//! * `call/round_trip`: a blocking request/reply from outside the runtime;
//! * `spawn/ephemeral`: spawning a process (which ends in its start hook);
//! * `admission/*`: a post to a held receiver through each predicate (tuned never to reject),
//!   to compare with `post/held`.
//!
//! ```text
//! cargo bench -p whirl --bench hot_paths
//! cargo bench -p whirl --bench hot_paths -- post/   # one group
//! ```
//!
//! Each measurement times only the operation (`iter_custom`); waiting for the runtime to go
//! idle between batches is not counted.

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use whirl::admission::{
    ControllerParams, CostBudget, PriorityThresholds, QueueLength, ResponseTime, TokenBucket,
};
use whirl::prelude::*;
use whirl::time::CoarseClock;
use whirl::Group;

#[derive(Message)]
struct Tick;

#[derive(Message)]
struct Get(ReplyTo<u64>);

/// Blocks the receiver until the bench drops the other end of the socket: an owned socket
/// shares nothing with the sender, and the kernel does the waiting.
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
    fn get(&mut self, Get(reply): Get) {
        let _ = reply.send(self.ticks);
    }

    #[handle]
    fn hold(&mut self, Hold(mut stream): Hold) {
        let _ = stream.read(&mut [0; 1]);
    }
}

/// Ends in its start hook: what is measured is spawning it.
#[process]
struct Ephemeral;

#[process]
impl Ephemeral {
    #[started]
    fn start(&mut self, ctx: &mut Ctx<Self>) {
        ctx.complete();
    }

    #[handle]
    fn tick(&mut self, _: Tick) {}
}

/// A connected pair of loopback sockets: (the end the bench keeps, the end the sink reads).
fn latch() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback listener");
    let release = TcpStream::connect(listener.local_addr().expect("its address"))
        .expect("a loopback connection");
    let (held, _) = listener.accept().expect("the loopback connection");
    (release, held)
}

fn post(sink: &Addr<Sink>, msg: Tick) {
    if sink.post(msg).is_err() {
        panic!("the sink refused a message");
    }
}

/// Times `iters` posts to `sink` while it is blocked in a handler.
fn held_posts(rt: &Runtime, sink: &Addr<Sink>, iters: u64) -> Duration {
    let (release, held) = latch();
    if sink.post(Hold(held)).is_err() {
        panic!("the hold was refused");
    }
    let start = Instant::now();
    for _ in 0..iters {
        post(sink, Tick);
    }
    let elapsed = start.elapsed();
    drop(release);
    rt.block_until_idle();
    elapsed
}

fn posts(c: &mut Criterion) {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let sink = rt.spawn(Sink { ticks: 0 });
    rt.block_until_idle();
    let mut group = c.benchmark_group("post");
    group.bench_function("idle", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                rt.block_until_idle();
                let start = Instant::now();
                post(&sink, Tick);
                total += start.elapsed();
            }
            rt.block_until_idle();
            total
        })
    });
    group.bench_function("held", |b| {
        b.iter_custom(|iters| held_posts(&rt, &sink, iters))
    });
    group.bench_function("live", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                post(&sink, Tick);
            }
            let elapsed = start.elapsed();
            rt.block_until_idle();
            elapsed
        })
    });
    group.finish();
    rt.shutdown_graceful();
}

fn calls(c: &mut Criterion) {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let sink = rt.spawn(Sink { ticks: 0 });
    rt.block_until_idle();
    c.bench_function("call/round_trip", |b| {
        b.iter(|| match sink.request_with(Get).call() {
            Ok(n) => n,
            Err(err) => panic!("call failed: {err}"),
        })
    });
    rt.shutdown_graceful();
}

fn spawns(c: &mut Criterion) {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    c.bench_function("spawn/ephemeral", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                let _ = rt.spawn(Ephemeral);
            }
            let elapsed = start.elapsed();
            rt.block_until_idle();
            elapsed
        })
    });
    rt.shutdown_graceful();
}

/// The predicates, each tuned never to reject.
fn predicate_group(rt: &Runtime, name: &str) -> Group {
    let builder = rt.group("bench").threads(1);
    match name {
        "none" => builder,
        "QueueLength" => builder.predicate(QueueLength::max(u64::MAX)),
        "PriorityThresholds" => builder.predicate(PriorityThresholds::new(u64::MAX)),
        "TokenBucket" => builder.predicate(TokenBucket::new(1e9, 1 << 40)),
        "CostBudget" => builder.predicate(CostBudget::new(u64::MAX)),
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

fn admission(c: &mut Criterion) {
    let mut group = c.benchmark_group("admission");
    for name in [
        "none",
        "QueueLength",
        "PriorityThresholds",
        "TokenBucket",
        "CostBudget",
        "ResponseTime",
    ] {
        let rt = Runtime::builder()
            .threads(1)
            .build()
            .expect("the runtime starts");
        let bench_group = predicate_group(&rt, name);
        let sink = rt.spawner().group(&bench_group).spawn(Sink { ticks: 0 });
        rt.block_until_idle();
        group.bench_with_input(BenchmarkId::from_parameter(name), &sink, |b, sink| {
            b.iter_custom(|iters| held_posts(&rt, sink, iters))
        });
        rt.shutdown_graceful();
    }
    group.finish();
}

criterion_group! {
    name = hot_paths;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = posts, calls, spawns, admission
}
criterion_main!(hot_paths);
