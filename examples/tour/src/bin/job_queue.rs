//! A job queue behind a router whose workers crash, and nothing waiting is lost.
//!
//! `main` submits jobs for many customers to one address, a [`Router`] over a pool of
//! workers. The router picks a worker by customer (consistent hashing), so each customer's
//! jobs run in order on one worker. Now and then a worker crashes right after finishing a job
//! (its connection broke, say). There is no dispatcher, no per-worker name lookup and no retry
//! loop on `Terminated` in this file: the router restarts the worker, hands the replacement
//! the jobs that were queued for the crashed one (they are not dead-lettered), and keeps the
//! jobs routed to it meanwhile in a buffer until the replacement is up.
//!
//! The submitter keeps at most 20 000 jobs outstanding. The program runs the same load three
//! times: with no crashes (the baseline), with crashes,
//! and with the pool grown from 4 to 8 workers and shrunk back while jobs flow. It prints
//! jobs submitted, completed and lost (lost is 0, or the program fails), jobs handled out of
//! their customer's order (0 with crashes, or the program fails: a restart keeps each
//! customer's order; growing the pool may reorder the jobs already queued for the customers
//! that move to a new worker, and the third run counts them), the jobs per worker, the
//! router's counters, and the throughput of each run with its ratio to the baseline, all
//! measured in this run.
//!
//! What a crash does not save is the job being handled when the worker fails mid-way: its
//! handler consumed it. Here workers crash between jobs; a queue that must survive crashes in
//! the middle of a job asks for a reply (`request_with(|reply| ..)` with `call` or `ask`) and submits again
//! when none comes.
//!
//! ```text
//! cargo run --release -p tour --bin job_queue [-- JOBS]
//! ```

use std::collections::HashMap;
use std::time::{Duration, Instant};

use whirl::prelude::*;
use whirl::routing::{Router, RouterStats, Strategy};

/// One job: a customer, its sequence number for that customer, and a little work.
#[derive(Message)]
struct Job {
    id: u64,
    customer: u64,
    seq: u64,
    rounds: u32,
    /// Whether the worker should crash once it has finished this job.
    crash_after: bool,
    done: Addr<Collector>,
}

/// A job finished, by which worker.
#[derive(Message)]
struct Done {
    worker: usize,
    customer: u64,
    seq: u64,
}

/// What the collector has seen.
#[derive(Message)]
struct Report(ReplyTo<Tally>);

/// The collector's counts: plain data, so it may travel in a reply.
#[derive(Clone, Default, whirl::Isolated)]
struct Tally {
    completed: u64,
    out_of_order: u64,
    per_worker: Vec<u64>,
}

#[process]
struct Collector {
    completed: u64,
    out_of_order: u64,
    next_seq: HashMap<u64, u64>,
    per_worker: Vec<u64>,
}

#[process]
impl Collector {
    #[handle]
    fn done(
        &mut self,
        Done {
            worker,
            customer,
            seq,
        }: Done,
    ) {
        self.completed += 1;
        let expected = self.next_seq.entry(customer).or_insert(0);
        if seq != *expected {
            self.out_of_order += 1;
        }
        *expected = seq + 1;
        if self.per_worker.len() <= worker {
            self.per_worker.resize(worker + 1, 0);
        }
        self.per_worker[worker] += 1;
    }

    #[handle]
    fn report(&mut self, Report(reply): Report) {
        let _ = reply.send(Tally {
            completed: self.completed,
            out_of_order: self.out_of_order,
            per_worker: self.per_worker.clone(),
        });
    }
}

#[process]
struct Worker {
    index: usize,
}

#[process]
impl Worker {
    #[handle]
    fn job(&mut self, job: Job) -> Result<(), Failure> {
        // The work: a few rounds of a hash, kept so it is not optimised away.
        let mut x = job.id ^ 0x9E37_79B9_7F4A_7C15;
        for _ in 0..job.rounds {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        std::hint::black_box(x);
        let _ = job.done.post(Done {
            worker: self.index,
            customer: job.customer,
            seq: job.seq,
        });
        if job.crash_after {
            return Err(Failure::new("lost the database connection"));
        }
        Ok(())
    }
}

fn worker(index: usize, _: &()) -> Worker {
    Worker { index }
}

/// One run's figures.
struct Run {
    submitted: u64,
    tally: Tally,
    elapsed: Duration,
    stats: RouterStats,
    crashes: u64,
    retried_posts: u64,
}

const CUSTOMERS: u64 = 1_000;
const WORKERS: usize = 4;
const CRASH_EVERY: u64 = 20_000;
/// Jobs submitted but not yet completed, at most (checked every 1000 jobs).
const WINDOW: u64 = 20_000;
/// Runs of each configuration.
const ROUNDS: usize = 3;

fn run(rt: &Runtime, name: &str, jobs: u64, crash_every: Option<u64>, resize: bool) -> Run {
    let pool = rt
        .group(name)
        .threads(WORKERS)
        .build()
        .expect("a new group name");
    let collector = rt.spawn(Collector {
        completed: 0,
        out_of_order: 0,
        next_seq: HashMap::new(),
        per_worker: Vec::new(),
    });
    let router = Router::builder(&pool, worker, ())
        .strategy(Strategy::consistent_hash(|job: &Job| job.customer))
        .members(WORKERS)
        .buffer(100_000)
        // Up to 100 restarts a second at once; beyond that, each waits 10 ms.
        .restart_limit(100, Duration::from_secs(1), Duration::from_millis(10))
        .start();
    let mut next_seq = vec![0u64; CUSTOMERS as usize];
    let mut crashes = 0;
    let mut retried_posts = 0;
    let started = Instant::now();
    for id in 0..jobs {
        // Customers in a scrambled order, so every worker has work all the time.
        let customer = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) % CUSTOMERS;
        let crash_after = crash_every.is_some_and(|every| id % every == every / 2);
        crashes += u64::from(crash_after);
        let mut job = Job {
            id,
            customer,
            seq: next_seq[customer as usize],
            rounds: 200,
            crash_after,
            done: collector.clone(),
        };
        next_seq[customer as usize] += 1;
        // Backpressure, as a real queue has: at most `WINDOW` jobs outstanding.
        if id % 1_000 == 0 {
            while id
                - collector
                    .request_with(Report)
                    .call()
                    .expect("the collector runs")
                    .completed
                > WINDOW
            {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        // A full buffer (a worker restarting under a flood) hands the job back: try again.
        loop {
            match router.post(job) {
                Ok(()) => break,
                Err(PostError::Rejected(back)) => {
                    retried_posts += 1;
                    job = back;
                    std::thread::sleep(Duration::from_micros(100));
                }
                Err(e) => panic!("the router refused a job: {e}"),
            }
        }
        if resize && id == jobs / 3 {
            router.resize(WORKERS * 2).expect("the router runs");
        }
        if resize && id == jobs * 2 / 3 {
            router.resize(WORKERS).expect("the router runs");
        }
    }
    // Wait until every job is reported, or nothing has moved for 10 s (then some are lost).
    let mut last = (0, Instant::now());
    let tally = loop {
        let tally = collector
            .request_with(Report)
            .call()
            .expect("the collector runs");
        if tally.completed >= jobs {
            break tally;
        }
        if tally.completed != last.0 {
            last = (tally.completed, Instant::now());
        } else if last.1.elapsed() > Duration::from_secs(10) {
            break tally;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let elapsed = started.elapsed();
    let stats = router.stats();
    router.stop().expect("the router runs");
    Run {
        submitted: jobs,
        tally,
        elapsed,
        stats,
        crashes,
        retried_posts,
    }
}

fn throughput(run: &Run) -> f64 {
    run.tally.completed as f64 / run.elapsed.as_secs_f64()
}

fn print(name: &str, run: &Run) {
    let lost = run.submitted.saturating_sub(run.tally.completed);
    println!("{name}:");
    println!(
        "  jobs submitted {}, completed {}, lost {lost}; customers' jobs out of order: {}",
        run.submitted, run.tally.completed, run.tally.out_of_order
    );
    println!(
        "  worker crashes injected {}; restarts {}; jobs carried over from crashed or retired \
         workers' queues {} (a job counts once per crash it waits through); jobs that waited \
         for a restart {}; posts retried after a full buffer {}",
        run.crashes, run.stats.restarts, run.stats.salvaged, run.stats.buffered, run.retried_posts
    );
    let total: u64 = run.tally.per_worker.iter().sum();
    let per_worker: Vec<String> = run
        .tally
        .per_worker
        .iter()
        .enumerate()
        .map(|(i, n)| format!("w{i} {n} ({:.1}%)", 100.0 * *n as f64 / total.max(1) as f64))
        .collect();
    println!("  jobs per worker: {}", per_worker.join(", "));
    println!(
        "  this run: {:.0} jobs/s over {:.2} s ({} resizes)",
        throughput(run),
        run.elapsed.as_secs_f64(),
        run.stats.resizes
    );
}

fn main() {
    let jobs: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let rt = Runtime::new();

    // Each configuration runs ROUNDS times, interleaved, so that warm-up and the machine's
    // other work fall on all three alike; the report shows each one's last run and the median
    // throughput.
    let mut runs: [Vec<Run>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for round in 0..ROUNDS {
        runs[0].push(run(&rt, &format!("baseline-{round}"), jobs, None, false));
        let crashing = format!("crashing-{round}");
        runs[1].push(run(&rt, &crashing, jobs, Some(CRASH_EVERY), false));
        runs[2].push(run(&rt, &format!("resizing-{round}"), jobs, None, true));
    }
    let names = [
        "baseline (no crashes)".to_owned(),
        format!("a worker crash every {CRASH_EVERY} jobs"),
        "the pool grown to 8 workers at 1/3 and shrunk to 4 at 2/3".to_owned(),
    ];
    let mut medians = [0.0; 3];
    for (i, name) in names.iter().enumerate() {
        let last = runs[i].last().expect("ROUNDS > 0");
        print(name, last);
        let mut rates: Vec<f64> = runs[i].iter().map(throughput).collect();
        rates.sort_by(f64::total_cmp);
        medians[i] = rates[rates.len() / 2];
        let rates: Vec<String> = rates.iter().map(|r| format!("{r:.0}")).collect();
        println!(
            "  median of {ROUNDS} runs: {:.0} jobs/s (all: {})",
            medians[i],
            rates.join(", ")
        );
    }
    println!(
        "median throughput / baseline: with crashes {:.2}, with resizes {:.2}",
        medians[1] / medians[0],
        medians[2] / medians[0]
    );
    rt.shutdown_graceful();

    let lost: u64 = runs
        .iter()
        .flatten()
        .map(|r| r.submitted - r.tally.completed.min(r.submitted))
        .sum();
    let disorder: u64 = runs[..2]
        .iter()
        .flatten()
        .map(|r| r.tally.out_of_order)
        .sum();
    if lost > 0 || disorder > 0 {
        eprintln!("FAILED: {lost} jobs lost, {disorder} out of order");
        std::process::exit(1);
    }
}
