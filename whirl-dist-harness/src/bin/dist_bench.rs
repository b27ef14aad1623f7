//! whirl-dist against raw Zenoh, two peers on loopback in one OS process.
//!
//! Each round measures two things three times: through whirl-dist over mutual TLS 1.3 (on
//! TCP) and a MAC per frame (its default; certificates from a CA made in memory), through
//! whirl-dist over plaintext TCP (`NodeConfig::insecure_plaintext`), each with two [`Node`]s, a
//! counting process exported on node B, addressed from node A; then through plain Zenoh
//! sessions over TCP opened with the same settings (peer mode, B listening on a free
//! `127.0.0.1` port, A connecting to it, multicast and gossip scouting off, the same lease and
//! keep-alive). The ratios say what security costs (mutual TLS and MACs against plaintext) and what
//! whirl keeps of its engine (against raw Zenoh):
//!
//! 1. **Remote post throughput.** A posts `--posts` small messages (a `u64`) to B's process,
//!    whose handler only counts. A post refused with `Rejected` (the credit window is full) is
//!    retried after `std::thread::yield_now()`. The clock runs from the first post until B's
//!    process has handled all of them (an ask queued behind the posts returns the count).
//!    Baseline: a Zenoh publisher (congestion control `Block`) on A puts as many payloads of
//!    the same byte size as whirl's post frames to a key B subscribes to with a counting
//!    callback; the clock stops when B has counted them all.
//! 2. **Ask round trip.** After a warm-up, `--asks` sequential `call`s of a small request
//!    answered with a `u64`; p50, p99 and mean latency (hdrhistogram). Baseline: sequential
//!    `session.get(key).wait()` against a queryable on B that answers each query with a payload
//!    of the size of whirl's reply frame, the first reply received. For reference the bench also
//!    times a raw put/put ping-pong (A puts, B's subscriber callback puts back, A's subscriber
//!    wakes the caller), which is the transport pattern whirl's ask is built on.
//!
//! Only one side is alive at a time: each side's nodes or sessions are opened for its
//! measurement and closed after it. Rounds alternate (secure, plain, raw, secure, ...) so drift
//! of the machine hits all sides alike; the summary gives medians over the rounds with their
//! range.
//!
//! Run it in release mode:
//!
//! ```text
//! cargo run --release -p whirl-dist-harness --bin dist_bench
//! cargo run --release -p whirl-dist-harness --bin dist_bench -- --posts 200000 --asks 5000 --rounds 1
//! ```
//!
//! Options: `--rounds N` (3), `--posts N` (1,000,000), `--asks N` (20,000), `--warmup-asks N`
//! (2,000); and for exploring whirl's side, `--window N` (the nodes' credit window, default
//! 8,192), `--backoff-us N` (sleep N µs before retrying a rejected post instead of
//! `yield_now`) and `--workers N` (node B's runtime threads, default 1).
//!
//! **Reading the ratios.** Raw Zenoh is the engine whirl-dist runs on, so it is the ceiling:
//! the ratios give the share of the engine's performance whirl keeps. For throughput the ratio
//! is whirl / raw (higher is better, 1.0 = no overhead); for latency it is raw / whirl (also
//! higher is better, 1.0 = no overhead, 0.5 = whirl's round trip takes twice as long). What
//! whirl adds on top of the engine: encoding and the typed header, the credit window and its
//! acknowledgements, the node's writer pool (a thread hop on the sending side), the
//! export table and a post into the receiving runtime (a hop to a worker thread), and for an
//! ask the reply's trip back through the receiving node's writer pool; with TLS, the TLS
//! records and a 25-byte MAC on every frame.
//!
//! Exit code: 0 after a complete run, 2 on a setup or measurement failure (a node or session
//! that does not open, a peer never seen, an ask that fails or times out).

use std::net::{TcpListener, UdpSocket};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use whirl::prelude::*;
use whirl_dist::{
    Node, NodeConfig, NodeId, Pid, Remote, RemoteAddr, RemoteCallError, RemotePostError, Request,
};
use zenoh::pubsub::Publisher;
use zenoh::qos::{CongestionControl, Priority};
use zenoh::query::ConsolidationMode;
use zenoh::{Session, Wait};

/// How long to wait for anything that should happen but is not being timed.
const SETUP_DEADLINE: Duration = Duration::from_secs(20);

/// The time limit of one timed ask or query (far above any plausible round trip).
const ASK_TIMEOUT: Duration = Duration::from_secs(10);

/// whirl-dist against raw Zenoh on loopback: remote post throughput and ask round trip.
#[derive(Parser, Debug)]
#[command(name = "dist_bench")]
struct Args {
    /// Rounds; each runs whirl, then raw Zenoh.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Messages per throughput measurement.
    #[arg(long, default_value_t = 1_000_000)]
    posts: u64,
    /// Timed asks (and queries, and ping-pongs) per latency measurement.
    #[arg(long, default_value_t = 20_000)]
    asks: u64,
    /// Untimed asks before the timed ones (also posts/10, at most 50,000, before the timed
    /// posts).
    #[arg(long, default_value_t = 2_000)]
    warmup_asks: u64,
    /// Worker threads of node B's whirl runtime (the counting process is one process, so one
    /// worker handles it; more only add idle workers).
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// How a whirl post refused with `Rejected` waits before its retry: 0 (the default) calls
    /// `std::thread::yield_now()`; N sleeps N microseconds.
    #[arg(long, default_value_t = 0)]
    backoff_us: u64,
    /// The credit window of both whirl nodes (messages unacknowledged per peer).
    #[arg(long, default_value_t = NodeConfig::DEFAULT_WINDOW)]
    window: usize,
}

// ---------------------------------------------------------------------------------------------
// The messages and the process on node B

/// A posted message: only counted.
#[derive(Message, Serialize, Deserialize)]
struct Tick(u64);
impl Remote for Tick {
    const TAG: &'static str = "dist_bench.Tick/1";
}

/// Asks how many `Tick`s were handled so far.
#[derive(Message, Serialize, Deserialize)]
struct Handled;
impl Remote for Handled {
    const TAG: &'static str = "dist_bench.Handled/1";
}
impl Request for Handled {
    type Reply = u64;
}

/// The timed request: answered with its number plus one.
#[derive(Message, Serialize, Deserialize)]
struct Echo(u64);
impl Remote for Echo {
    const TAG: &'static str = "dist_bench.Echo/1";
}
impl Request for Echo {
    type Reply = u64;
}

#[process]
struct Sink {
    handled: u64,
}

#[process]
impl Sink {
    #[handle]
    fn tick(&mut self, _: Tick) {
        self.handled += 1;
    }

    #[handle]
    fn handled(&mut self, _: Handled) -> u64 {
        self.handled
    }

    #[handle]
    fn echo(&mut self, Echo(n): Echo) -> u64 {
        n.wrapping_add(1)
    }
}

// ---------------------------------------------------------------------------------------------
// Frame sizes, for payloads of the same size in the baseline

/// The wire tag whirl-dist derives from a stable name (64-bit FNV-1a).
fn tag_of(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The size of a whirl-dist frame: a version byte and the 16-byte sender id, then the header
/// and the payload in postcard. `header` is a tuple with the shape of the header variant
/// (postcard encodes an enum's variant index as a one-byte varint here, like the leading
/// `u8`, and every integer as a varint), so only the length matters.
fn frame_size<H: Serialize, P: Serialize>(header: &H, payload: &P) -> Result<usize, String> {
    let header = postcard::to_stdvec(header).map_err(|e| format!("size a header: {e}"))?;
    let payload = postcard::to_stdvec(payload).map_err(|e| format!("size a payload: {e}"))?;
    Ok(17 + header.len() + payload.len())
}

/// Byte sizes of whirl's frames for the measured messages.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    post: usize,
    ask: usize,
    reply: usize,
}

impl Sizes {
    /// The sizes for a process numbered `local` on its node, at the middle of the runs (the
    /// integers are varints: a few bytes either way).
    fn of(local: u64, args: &Args) -> Result<Sizes, String> {
        let seq = args.posts / 2;
        let req = args.asks / 2;
        // Header::Post { to, tag, route: None, principal: None }
        let post = frame_size(
            &(0u8, local, tag_of(Tick::TAG), None::<u64>, None::<()>),
            &Tick(seq),
        )?;
        // Header::Ask { to, tag, req, principal: None }
        let ask = frame_size(
            &(1u8, local, tag_of(Echo::TAG), req, None::<()>),
            &Echo(req),
        )?;
        // Header::Reply { req, outcome: Answered }
        let reply = frame_size(&(4u8, req, 0u8), &req.wrapping_add(1))?;
        Ok(Sizes { post, ask, reply })
    }
}

// ---------------------------------------------------------------------------------------------
// Figures

/// Latency percentiles of one measurement, in nanoseconds.
#[derive(Clone, Copy, Debug)]
struct Latency {
    p50: f64,
    p99: f64,
    mean: f64,
}

impl Latency {
    fn of(histogram: &Histogram<u64>) -> Latency {
        Latency {
            p50: histogram.value_at_quantile(0.50) as f64,
            p99: histogram.value_at_quantile(0.99) as f64,
            mean: histogram.mean(),
        }
    }
}

/// What one side measured in one round.
#[derive(Clone, Copy, Debug)]
struct Figures {
    /// Messages per second.
    throughput: f64,
    /// whirl: posts refused with `Rejected` and retried. Raw: none.
    retries: u64,
    /// whirl: the ask; raw: the query.
    ask: Latency,
    /// Raw only: the put/put ping-pong.
    ping_pong: Option<Latency>,
}

fn histogram() -> Result<Histogram<u64>, String> {
    // 1 ns to 60 s, three significant digits.
    Histogram::new_with_bounds(1, 60_000_000_000, 3).map_err(|e| format!("histogram: {e}"))
}

fn record(histogram: &mut Histogram<u64>, elapsed: Duration) {
    let ns = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX).max(1);
    histogram.saturating_record(ns);
}

// ---------------------------------------------------------------------------------------------
// Setup helpers

/// A loopback port free on both TCP and UDP (QUIC endpoints are UDP ports).
fn free_port() -> Result<u16, String> {
    loop {
        let udp = UdpSocket::bind("127.0.0.1:0").map_err(|e| format!("bind a free port: {e}"))?;
        let port = udp
            .local_addr()
            .map_err(|e| format!("read the free port: {e}"))?
            .port();
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
}

/// How the whirl nodes of a measurement are linked.
#[derive(Clone, Copy, Debug)]
enum Transport {
    /// TLS 1.3 over TCP with mutual authentication, frames MAC'd per pair (whirl-dist's
    /// default).
    Secure,
    /// TCP, no encryption or authentication (`NodeConfig::insecure_plaintext`).
    Plaintext,
}

impl Transport {
    fn endpoint(self, port: u16) -> String {
        match self {
            Transport::Secure => format!("tls/127.0.0.1:{port}"),
            Transport::Plaintext => format!("tcp/127.0.0.1:{port}"),
        }
    }
}

/// Waits until `ok` holds, polling; `Err` naming `what` after the setup deadline.
fn wait_until(what: &str, mut ok: impl FnMut() -> Result<bool, String>) -> Result<(), String> {
    let deadline = Instant::now() + SETUP_DEADLINE;
    while !ok()? {
        if Instant::now() >= deadline {
            return Err(format!("{what}: not within {SETUP_DEADLINE:?}"));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// A fresh cluster name per round and side, so nothing of an earlier one is seen.
fn cluster_name(round: usize) -> Result<String, String> {
    let id = NodeId::random().map_err(|e| format!("entropy for a cluster name: {e}"))?;
    Ok(format!("dist-bench-{round}-{}", &id.to_string()[..8]))
}

// ---------------------------------------------------------------------------------------------
// whirl

/// Two linked whirl nodes (B listens, A connects), each having seen the other Up, and the
/// counting process exported on B.
struct WhirlPair {
    a: Node,
    b: Node,
    runtime: Runtime,
    pid: Pid,
}

impl WhirlPair {
    /// Two nodes over `transport`: QUIC with mutual TLS and per-frame MACs (certificates from
    /// a CA made here), or plaintext TCP.
    fn start(round: usize, args: &Args, transport: Transport) -> Result<WhirlPair, String> {
        let cluster = cluster_name(round)?;
        let port = free_port()?;
        let ca = match transport {
            Transport::Plaintext => None,
            Transport::Secure => Some(
                whirl_dist::certs::ClusterCa::new("dist-bench-ca")
                    .map_err(|e| format!("a CA: {e}"))?,
            ),
        };
        let secure = |config: NodeConfig, name: &str| -> Result<NodeConfig, String> {
            let Some(ca) = &ca else {
                return Ok(config.insecure_plaintext("dist_bench's plaintext baseline"));
            };
            let cert = ca
                .node(name, 1)
                .map_err(|e| format!("a certificate: {e}"))?;
            Ok(config.tls(
                cert.certificate.into_bytes(),
                cert.key.into_bytes(),
                ca.certificate_pem().into_bytes(),
            ))
        };
        let at = |port| transport.endpoint(port);
        let b = secure(NodeConfig::new(&cluster), "b")?;
        let b = Node::start(b.listen([at(port)]).window(args.window))
            .map_err(|e| format!("node B does not start: {e}"))?;
        let a = secure(NodeConfig::new(&cluster), "a")?;
        let a = a.listen(Vec::<String>::new()).connect([at(port)]);
        let a = Node::start(a.window(args.window))
            .map_err(|e| format!("node A does not start: {e}"))?;
        let (a_id, b_id) = (a.id(), b.id());
        wait_until("A and B see each other Up", || {
            Ok(a.members().contains(&b_id) && b.members().contains(&a_id))
        })?;
        let runtime = Runtime::builder()
            .threads(args.workers)
            .build()
            .map_err(|e| format!("node B's runtime does not start: {e}"))?;
        let sink = runtime.spawn(Sink { handled: 0 });
        let pid = b
            .export(&sink)
            .accept::<Tick>()
            .answer::<Handled>()
            .answer::<Echo>()
            .build()
            .map_err(|e| format!("export the counting process: {e}"))?;
        Ok(WhirlPair { a, b, runtime, pid })
    }

    fn shutdown(self) -> Result<(), String> {
        let WhirlPair { a, b, runtime, .. } = self;
        let a = a.shutdown().map_err(|e| format!("node A shutdown: {e}"));
        let b = b.shutdown().map_err(|e| format!("node B shutdown: {e}"));
        runtime.shutdown_timeout(Duration::from_secs(5));
        a.and(b)
    }
}

/// Posts `Tick`s numbered `from..to`, retrying each refused one until it goes.
fn post_ticks(ticks: &RemoteAddr<Tick>, from: u64, to: u64, backoff_us: u64) -> Result<(), String> {
    for seq in from..to {
        let mut msg = Tick(seq);
        loop {
            match ticks.post(msg) {
                Ok(()) => break,
                Err(RemotePostError::Rejected(back)) => {
                    msg = back;
                    match backoff_us {
                        0 => std::thread::yield_now(),
                        us => std::thread::sleep(Duration::from_micros(us)),
                    }
                }
                Err(e) => return Err(format!("post #{seq} failed: {e:?}")),
            }
        }
    }
    Ok(())
}

/// Asks the process how many `Tick`s it handled until the count reaches `target`.
fn wait_handled(handled: &RemoteAddr<Handled>, target: u64) -> Result<(), String> {
    let deadline = Instant::now() + SETUP_DEADLINE + ASK_TIMEOUT;
    loop {
        let count = match handled.request(Handled).timeout(ASK_TIMEOUT).call() {
            Ok(count) => count,
            // The window is still full of posts: ask again once some are acknowledged.
            Err(RemoteCallError::Post(RemotePostError::Rejected(_))) => 0,
            Err(e) => return Err(format!("ask for the count of handled posts: {e:?}")),
        };
        if count >= target {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!("only {count} of {target} posts handled"));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn echo_call(echo: &RemoteAddr<Echo>, n: u64) -> Result<(), String> {
    match echo.request(Echo(n)).timeout(ASK_TIMEOUT).call() {
        Ok(answer) if answer == n.wrapping_add(1) => Ok(()),
        Ok(answer) => Err(format!("ask #{n} answered {answer}")),
        Err(e) => Err(format!("ask #{n} failed: {e:?}")),
    }
}

fn run_whirl(round: usize, args: &Args, transport: Transport) -> Result<(Figures, Sizes), String> {
    let pair = WhirlPair::start(round, args, transport)?;
    let sizes = Sizes::of(pair.pid.local(), args)?;
    let ticks = pair.a.remote::<Tick>(pair.pid);
    let handled = pair.a.remote::<Handled>(pair.pid);
    let echo = pair.a.remote::<Echo>(pair.pid);

    // Throughput.
    let warmup = (args.posts / 10).min(50_000);
    post_ticks(&ticks, 0, warmup, args.backoff_us)?;
    wait_handled(&handled, warmup)?;
    let refused_before = pair.a.counts().refused;
    let started = Instant::now();
    post_ticks(&ticks, warmup, warmup + args.posts, args.backoff_us)?;
    wait_handled(&handled, warmup + args.posts)?;
    let elapsed = started.elapsed();
    let retries = pair.a.counts().refused - refused_before;

    // Round trip.
    for n in 0..args.warmup_asks {
        echo_call(&echo, n)?;
    }
    let mut latencies = histogram()?;
    for n in 0..args.asks {
        let sent = Instant::now();
        echo_call(&echo, n)?;
        record(&mut latencies, sent.elapsed());
    }
    pair.shutdown()?;
    Ok((
        Figures {
            throughput: args.posts as f64 / elapsed.as_secs_f64(),
            retries,
            ask: Latency::of(&latencies),
            ping_pong: None,
        },
        sizes,
    ))
}

// ---------------------------------------------------------------------------------------------
// Raw Zenoh

/// A raw Zenoh peer-mode session with whirl's settings (see `NodeConfig::to_zenoh`).
fn raw_session(listen: &[String], connect: &[String]) -> Result<Session, String> {
    let list = |items: &[String]| {
        let quoted: Vec<String> = items.iter().map(|e| format!("\"{e}\"")).collect();
        format!("[{}]", quoted.join(","))
    };
    let lease_ms = NodeConfig::DEFAULT_LEASE.as_millis().to_string();
    let mut config = zenoh::Config::default();
    for (key, value) in [
        ("mode", "\"peer\"".to_owned()),
        ("listen/endpoints", list(listen)),
        ("connect/endpoints", list(connect)),
        (
            "connect/retry",
            "{ period_init_ms: 250, period_max_ms: 1000, period_increase_factor: 2 }".to_owned(),
        ),
        ("scouting/multicast/enabled", "false".to_owned()),
        ("scouting/gossip/enabled", "false".to_owned()),
        ("transport/link/tx/lease", lease_ms),
        ("transport/link/tx/keep_alive", "4".to_owned()),
    ] {
        config
            .insert_json5(key, &value)
            .map_err(|e| format!("zenoh config {key} = {value}: {e}"))?;
    }
    zenoh::open(config)
        .wait()
        .map_err(|e| format!("a raw zenoh session does not open: {e}"))
}

fn wait_matching(publisher: &Publisher<'_>, what: &str) -> Result<(), String> {
    wait_until(what, || {
        publisher
            .matching_status()
            .wait()
            .map(|status| status.matching())
            .map_err(|e| format!("{what}: matching status: {e}"))
    })
}

fn zerr(what: &'static str) -> impl Fn(zenoh::Error) -> String {
    move |e| format!("{what}: {e}")
}

/// One query to `key`: `Ok(true)` if a reply arrived, `Ok(false)` if the query ended without
/// one (no queryable known yet).
fn query(a: &Session, key: &str, payload: &[u8]) -> Result<bool, String> {
    let replies = a
        .get(key)
        .payload(payload.to_vec())
        .consolidation(ConsolidationMode::None)
        .timeout(ASK_TIMEOUT)
        .wait()
        .map_err(zerr("raw query"))?;
    match replies.recv() {
        Ok(reply) => match reply.result() {
            Ok(_) => Ok(true),
            Err(e) => Err(format!("raw query answered with an error: {e:?}")),
        },
        Err(_) => Ok(false),
    }
}

fn run_raw(round: usize, args: &Args, sizes: Sizes) -> Result<Figures, String> {
    let cluster = cluster_name(round)?;
    let port = free_port()?;
    let tcp = Transport::Plaintext.endpoint(port);
    let b = raw_session(std::slice::from_ref(&tcp), &[])?;
    let a = raw_session(&[], &[tcp])?;
    let elapsed = raw_throughput(&a, &b, &cluster, args, sizes)?;
    let queries = raw_queries(&a, &b, &cluster, args, sizes)?;
    let pings = raw_ping_pong(&a, &b, &cluster, args, sizes)?;
    a.close().wait().map_err(zerr("close session A"))?;
    b.close().wait().map_err(zerr("close session B"))?;
    Ok(Figures {
        throughput: args.posts as f64 / elapsed.as_secs_f64(),
        retries: 0,
        ask: Latency::of(&queries),
        ping_pong: Some(Latency::of(&pings)),
    })
}

/// Raw throughput: A puts `args.posts` payloads (after a warm-up) to a key B counts; returns
/// how long they took to arrive.
fn raw_throughput(
    a: &Session,
    b: &Session,
    cluster: &str,
    args: &Args,
    sizes: Sizes,
) -> Result<Duration, String> {
    let data_key = format!("bench/{cluster}/data");
    let counted = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&counted);
    let subscriber = b
        .declare_subscriber(data_key.clone())
        .callback(move |_sample| {
            counter.fetch_add(1, Relaxed);
        })
        .wait()
        .map_err(zerr("declare the data subscriber"))?;
    let publisher = a
        .declare_publisher(data_key)
        .congestion_control(CongestionControl::Block)
        .priority(Priority::Data)
        .wait()
        .map_err(zerr("declare the data publisher"))?;
    wait_matching(&publisher, "A's publisher sees B's subscriber")?;
    let payload = vec![0xa5u8; sizes.post];
    let put_all = |count: u64| -> Result<(), String> {
        for _ in 0..count {
            publisher
                .put(payload.clone())
                .wait()
                .map_err(zerr("raw put"))?;
        }
        Ok(())
    };
    let wait_counted = |target: u64| {
        let deadline = Instant::now() + SETUP_DEADLINE;
        loop {
            let count = counted.load(Relaxed);
            if count >= target {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!("only {count} of {target} raw puts arrived"));
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    };
    let warmup = (args.posts / 10).min(50_000);
    put_all(warmup)?;
    wait_counted(warmup)?;
    let started = Instant::now();
    put_all(args.posts)?;
    wait_counted(warmup + args.posts)?;
    let elapsed = started.elapsed();
    drop(publisher);
    subscriber
        .undeclare()
        .wait()
        .map_err(zerr("undeclare the data subscriber"))?;
    Ok(elapsed)
}

/// Raw query round trips: sequential queries from A to a queryable on B, after a warm-up.
fn raw_queries(
    a: &Session,
    b: &Session,
    cluster: &str,
    args: &Args,
    sizes: Sizes,
) -> Result<Histogram<u64>, String> {
    let query_key = format!("bench/{cluster}/query");
    let reply_payload = vec![0x5au8; sizes.reply];
    let queryable = b
        .declare_queryable(query_key.clone())
        .callback(move |q| {
            if let Err(e) = q.reply(q.key_expr().clone(), reply_payload.clone()).wait() {
                eprintln!("dist_bench: a raw reply failed: {e}");
            }
        })
        .wait()
        .map_err(zerr("declare the queryable"))?;
    let ask_payload = vec![0xa5u8; sizes.ask];
    wait_until("a raw query is answered", || {
        query(a, &query_key, &ask_payload)
    })?;
    let answered = |n: u64| match query(a, &query_key, &ask_payload)? {
        true => Ok(()),
        false => Err(format!("raw query #{n} ended without a reply")),
    };
    for n in 0..args.warmup_asks {
        answered(n)?;
    }
    let mut queries = histogram()?;
    for n in 0..args.asks {
        let sent = Instant::now();
        answered(n)?;
        record(&mut queries, sent.elapsed());
    }
    queryable
        .undeclare()
        .wait()
        .map_err(zerr("undeclare the queryable"))?;
    Ok(queries)
}

/// A raw put/put ping-pong, for reference: A puts, B's subscriber puts back, A's subscriber
/// wakes the caller.
fn raw_ping_pong(
    a: &Session,
    b: &Session,
    cluster: &str,
    args: &Args,
    sizes: Sizes,
) -> Result<Histogram<u64>, String> {
    let ping_key = format!("bench/{cluster}/ping");
    let pong_key = format!("bench/{cluster}/pong");
    let pong_payload = vec![0x5au8; sizes.reply];
    let pong = b
        .declare_publisher(pong_key.clone())
        .congestion_control(CongestionControl::Block)
        .priority(Priority::InteractiveHigh)
        .wait()
        .map_err(zerr("declare the pong publisher"))?;
    let (tx, rx) = crossbeam_channel::bounded::<()>(16);
    let pong_subscriber = a
        .declare_subscriber(pong_key)
        .callback(move |_sample| {
            let _ = tx.try_send(());
        })
        .wait()
        .map_err(zerr("declare the pong subscriber"))?;
    wait_matching(&pong, "B's pong publisher sees A's subscriber")?;
    let ping_subscriber = b
        .declare_subscriber(ping_key.clone())
        .callback(move |_sample| {
            if let Err(e) = pong.put(pong_payload.clone()).wait() {
                eprintln!("dist_bench: a raw pong failed: {e}");
            }
        })
        .wait()
        .map_err(zerr("declare the ping subscriber"))?;
    let ping = a
        .declare_publisher(ping_key)
        .congestion_control(CongestionControl::Block)
        .priority(Priority::Data)
        .wait()
        .map_err(zerr("declare the ping publisher"))?;
    wait_matching(&ping, "A's ping publisher sees B's subscriber")?;
    let ping_payload = vec![0xa5u8; sizes.ask];
    let ping_pong = |n: u64| -> Result<(), String> {
        ping.put(ping_payload.clone())
            .wait()
            .map_err(zerr("raw ping"))?;
        rx.recv_timeout(ASK_TIMEOUT)
            .map_err(|e| format!("raw pong #{n}: {e}"))
    };
    for n in 0..args.warmup_asks {
        ping_pong(n)?;
    }
    let mut pings = histogram()?;
    for n in 0..args.asks {
        let sent = Instant::now();
        ping_pong(n)?;
        record(&mut pings, sent.elapsed());
    }
    drop(ping);
    ping_subscriber
        .undeclare()
        .wait()
        .map_err(zerr("undeclare the ping subscriber"))?;
    pong_subscriber
        .undeclare()
        .wait()
        .map_err(zerr("undeclare the pong subscriber"))?;
    Ok(pings)
}

// ---------------------------------------------------------------------------------------------
// Report

fn us(ns: f64) -> String {
    format!("{:.1} µs", ns / 1000.0)
}

fn rate(per_s: f64) -> String {
    if per_s >= 1e6 {
        format!("{:.2} M msg/s", per_s / 1e6)
    } else {
        format!("{:.0} k msg/s", per_s / 1e3)
    }
}

/// The measured sides of a round, in print order: whirl over mutual TLS (and a MAC per
/// frame), whirl over plaintext TCP, raw Zenoh over plaintext TCP.
const SIDES: [&str; 3] = ["whirl mtls", "whirl plaintext", "raw zenoh tcp"];

fn print_round(round: usize, rounds: usize, sides: &[Figures; 3], sizes: Sizes) {
    println!();
    println!(
        "round {round}/{rounds}  (frames: post {} B, ask {} B, reply {} B; + 25 B MAC with TLS)",
        sizes.post, sizes.ask, sizes.reply
    );
    println!(
        "  {:<34} {:>16} {:>16} {:>16}",
        "", SIDES[0], SIDES[1], SIDES[2]
    );
    let row = |name: &str, cell: &dyn Fn(&Figures) -> String| {
        println!(
            "  {:<34} {:>16} {:>16} {:>16}",
            name,
            cell(&sides[0]),
            cell(&sides[1]),
            cell(&sides[2])
        );
    };
    row("post throughput", &|f| rate(f.throughput));
    row("posts refused and retried", &|f| f.retries.to_string());
    row("ask round trip p50 (raw: query)", &|f| us(f.ask.p50));
    row("ask round trip p99 (raw: query)", &|f| us(f.ask.p99));
    row("ask round trip mean (raw: query)", &|f| us(f.ask.mean));
    if let Some(pp) = sides[2].ping_pong {
        println!(
            "  {:<34} {:>16} {:>16} {:>16}",
            "raw put/put ping-pong p50 / p99",
            "-",
            "-",
            format!("{:.1} / {:.1} µs", pp.p50 / 1000.0, pp.p99 / 1000.0)
        );
    }
}

/// Median (mean of the middle two for an even count), min and max.
fn spread(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = match n % 2 {
        1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    };
    (median, values[0], values[n - 1])
}

/// Picks one figure out of a side's [`Figures`].
type Pick = fn(&Figures) -> f64;

fn summary(results: &[[Figures; 3]]) {
    let side = |k: usize, f: Pick| spread(results.iter().map(|r| f(&r[k])).collect());
    println!();
    println!(
        "summary over {} round(s): median (min–max); ratios of the medians, 1.0 = no overhead",
        results.len()
    );
    let measures: [(&str, Pick, bool); 4] = [
        ("remote post throughput", |f| f.throughput, true),
        ("ask round trip p50", |f| f.ask.p50, false),
        ("ask round trip p99", |f| f.ask.p99, false),
        ("ask round trip mean", |f| f.ask.mean, false),
    ];
    for (name, pick, is_rate) in measures {
        let show = |v: f64| if is_rate { rate(v) } else { us(v) };
        let cells: Vec<String> = (0..3)
            .map(|k| {
                let (m, lo, hi) = side(k, pick);
                format!("{} {} ({}–{})", SIDES[k], show(m), show(lo), show(hi))
            })
            .collect();
        let (secure, plain, raw) = (side(0, pick).0, side(1, pick).0, side(2, pick).0);
        // Higher is better in both ratios: throughput over, latency under.
        let better = |a: f64, b: f64| if is_rate { a / b } else { b / a };
        println!(
            "{name}: {}; ratio mtls/plaintext {:.2}, mtls/raw {:.2}, plaintext/raw {:.2}",
            cells.join(", "),
            better(secure, plain),
            better(secure, raw),
            better(plain, raw)
        );
    }
    let pp: Vec<&Latency> = results
        .iter()
        .filter_map(|r| r[2].ping_pong.as_ref())
        .collect();
    if !pp.is_empty() {
        let (p50, lo50, hi50) = spread(pp.iter().map(|l| l.p50).collect());
        let (p99, lo99, hi99) = spread(pp.iter().map(|l| l.p99).collect());
        println!(
            "(reference) raw zenoh put/put ping-pong: p50 {} ({}–{}), p99 {} ({}–{})",
            us(p50),
            us(lo50),
            us(hi50),
            us(p99),
            us(lo99),
            us(hi99),
        );
    }
}

fn run(args: &Args) -> Result<(), String> {
    if args.rounds == 0 || args.posts == 0 || args.asks == 0 {
        return Err("--rounds, --posts and --asks must be at least 1".to_owned());
    }
    println!(
        "dist_bench: {} round(s), {} posts, {} asks ({} warm-up), B's runtime with {} worker(s), \
         credit window {}, retry {}",
        args.rounds,
        args.posts,
        args.asks,
        args.warmup_asks,
        args.workers,
        args.window,
        match args.backoff_us {
            0 => "after yield_now".to_owned(),
            us => format!("after {us} µs"),
        }
    );
    let mut results = Vec::with_capacity(args.rounds);
    for round in 1..=args.rounds {
        let (secure, sizes) = run_whirl(round, args, Transport::Secure)
            .map_err(|e| format!("whirl over mutual TLS, round {round}: {e}"))?;
        let (plain, _) = run_whirl(round, args, Transport::Plaintext)
            .map_err(|e| format!("whirl over TCP, round {round}: {e}"))?;
        let raw =
            run_raw(round, args, sizes).map_err(|e| format!("raw zenoh, round {round}: {e}"))?;
        let sides = [secure, plain, raw];
        print_round(round, args.rounds, &sides, sizes);
        results.push(sides);
    }
    summary(&results);
    Ok(())
}

fn main() -> ExitCode {
    // Zenoh's own logs, if RUST_LOG asks for them.
    zenoh::try_init_log_from_env();
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("dist_bench: {message}");
            ExitCode::from(2)
        }
    }
}
