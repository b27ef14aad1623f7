//! Cohort scheduling (`whirl::scheduler::Cohort`): a three-stage pipeline plus a sink in one
//! group delivers every message, each sender's in order, and its stages run back to back: the
//! handlers append their stage to one shared trace, and the trace under `Cohort` is made of
//! runs as long as the batch, where under `Fifo` the stages alternate.

use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use whirl::prelude::*;
use whirl::scheduler::{Cohort, Fifo, Scheduler};
use whirl::SharedClient;

const DEADLINE: Duration = Duration::from_secs(30);

/// Sources feeding the pipeline: one chain of stage processes each.
const CHAINS: usize = 24;
/// Messages per source.
const PER_CHAIN: u64 = 40;

/// What the handlers record: the stage of each message handled, in handling order, and what
/// the sink saw.
#[derive(Default)]
struct Trace {
    stages: Mutex<Vec<u8>>,
    sink: Mutex<SinkSeen>,
}

#[derive(Default)]
struct SinkSeen {
    next: Vec<u64>,
    handled: u64,
    out_of_order: u64,
}

type Shared = SharedClient<Arc<Trace>>;

/// The `seq`-th message of source `from`.
#[derive(Message)]
struct Item {
    from: usize,
    seq: u64,
}

fn record(trace: &Shared, stage: u8) {
    if let Ok(mut stages) = trace.stages.lock() {
        stages.push(stage);
    }
}

#[process]
struct Parse {
    next: Addr<Lookup>,
    trace: Shared,
}

#[process]
impl Parse {
    #[handle]
    fn item(&mut self, item: Item) {
        record(&self.trace, 1);
        self.next.post(item).expect("the next stage is alive");
    }
}

#[process]
struct Lookup {
    next: Addr<Render>,
    trace: Shared,
}

#[process]
impl Lookup {
    #[handle]
    fn item(&mut self, item: Item) {
        record(&self.trace, 2);
        self.next.post(item).expect("the next stage is alive");
    }
}

#[process]
struct Render {
    next: Addr<Sink>,
    trace: Shared,
}

#[process]
impl Render {
    #[handle]
    fn item(&mut self, item: Item) {
        record(&self.trace, 3);
        self.next.post(item).expect("the sink is alive");
    }
}

#[process]
struct Sink {
    trace: Shared,
}

#[process]
impl Sink {
    #[handle]
    fn item(&mut self, Item { from, seq }: Item) {
        record(&self.trace, 4);
        if let Ok(mut seen) = self.trace.sink.lock() {
            if seen.next.len() <= from {
                seen.next.resize(from + 1, 0);
            }
            if seen.next[from] != seq {
                seen.out_of_order += 1;
            }
            seen.next[from] = seq + 1;
            seen.handled += 1;
        }
    }
}

#[derive(Message)]
struct Block;

/// Holds the group's only worker until the test has queued all the input, so that every run
/// starts from the same queue.
#[process]
struct Blocker {
    entered: SharedClient<Arc<Barrier>>,
    gate: SharedClient<Arc<Barrier>>,
}

#[process]
impl Blocker {
    #[handle]
    fn block(&mut self, _: Block) {
        self.entered.wait();
        self.gate.wait();
    }
}

/// What one run of the pipeline showed.
struct Outcome {
    /// Stages in handling order.
    stages: Vec<u8>,
    handled: u64,
    out_of_order: u64,
}

impl Outcome {
    /// The lengths of the maximal runs of one stage in the trace.
    fn runs(&self) -> Vec<usize> {
        let mut runs = Vec::new();
        let mut iter = self.stages.iter().peekable();
        while let Some(stage) = iter.next() {
            let mut len = 1;
            while iter.next_if_eq(&stage).is_some() {
                len += 1;
            }
            runs.push(len);
        }
        runs
    }

    fn mean_run(&self) -> f64 {
        let runs = self.runs();
        self.stages.len() as f64 / runs.len().max(1) as f64
    }
}

/// Runs the pipeline in a group of `threads` workers with `scheduler`, one message per turn.
/// With `gated`, all the input is queued while the only worker is held, then released.
fn run(scheduler: impl Scheduler, threads: usize, gated: bool) -> Outcome {
    let rt = Runtime::new();
    let group = rt
        .group("pipeline")
        .threads(threads)
        .budget(1)
        .scheduler(scheduler)
        .build()
        .expect("a new group");
    let trace = Arc::new(Trace::default());
    let shared = || SharedClient::new(Arc::clone(&trace), "the test's trace");
    let sink = rt.spawner().group(&group).spawn(Sink { trace: shared() });
    let sources: Vec<Addr<Parse>> = (0..CHAINS)
        .map(|_| {
            let render = rt.spawner().group(&group).spawn(Render {
                next: sink.clone(),
                trace: shared(),
            });
            let lookup = rt.spawner().group(&group).spawn(Lookup {
                next: render,
                trace: shared(),
            });
            rt.spawner().group(&group).spawn(Parse {
                next: lookup,
                trace: shared(),
            })
        })
        .collect();
    let gate = Arc::new(Barrier::new(2));
    if gated {
        let entered = Arc::new(Barrier::new(2));
        let blocker = rt.spawner().group(&group).spawn(Blocker {
            entered: SharedClient::new(Arc::clone(&entered), "the test's barrier"),
            gate: SharedClient::new(Arc::clone(&gate), "the test's barrier"),
        });
        blocker.post(Block).expect("the blocker is alive");
        // The group's only worker is now inside `block`.
        entered.wait();
    }
    for seq in 0..PER_CHAIN {
        for (from, source) in sources.iter().enumerate() {
            source
                .post(Item { from, seq })
                .expect("the source is alive");
        }
    }
    if gated {
        gate.wait();
    }
    let total = CHAINS as u64 * PER_CHAIN;
    let start = Instant::now();
    let handled = || trace.sink.lock().map_or(0, |s| s.handled);
    while handled() < total && start.elapsed() < DEADLINE {
        std::thread::sleep(Duration::from_millis(5));
    }
    rt.shutdown_graceful();
    let sink = trace.sink.lock().expect("the sink's record");
    let stages = trace.stages.lock().expect("the trace").clone();
    Outcome {
        stages,
        handled: sink.handled,
        out_of_order: sink.out_of_order,
    }
}

#[test]
fn cohort_delivers_everything_in_order_and_runs_stages_back_to_back() {
    const BATCH: usize = 16;
    let total = CHAINS as u64 * PER_CHAIN;
    let fifo = run(Fifo::new(), 1, true);
    let cohort = run(Cohort::new().batch(BATCH as u32), 1, true);
    for (name, outcome) in [("fifo", &fifo), ("cohort", &cohort)] {
        assert_eq!(
            outcome.handled, total,
            "{name}: every message reaches the sink"
        );
        assert_eq!(
            outcome.out_of_order, 0,
            "{name}: each source's order is kept"
        );
        assert_eq!(
            outcome.stages.len() as u64,
            total * 4,
            "{name}: 4 stages each"
        );
    }
    // Under Cohort a stage runs at most a batch of turns (one message each) in a row, and
    // mostly whole batches: every stage has more than a batch ready most of the time.
    let runs = cohort.runs();
    assert!(
        runs.iter().all(|&len| len <= BATCH),
        "a run longer than the batch: {runs:?}"
    );
    let full = runs.iter().filter(|&&len| len == BATCH).count();
    assert!(
        full * 2 > runs.len(),
        "most runs should be whole batches: {runs:?}"
    );
    // Under Fifo the stages interleave.
    assert!(
        fifo.mean_run() < 2.0,
        "fifo's mean run: {} (runs {:?})",
        fifo.mean_run(),
        fifo.runs()
    );
    assert!(cohort.mean_run() > 8.0 * fifo.mean_run());
}

#[test]
fn cohort_with_several_workers_delivers_everything_in_order() {
    let total = CHAINS as u64 * PER_CHAIN;
    for _ in 0..3 {
        let outcome = run(Cohort::new().batch(4), 3, false);
        assert_eq!(outcome.handled, total);
        assert_eq!(outcome.out_of_order, 0);
        assert_eq!(outcome.stages.len() as u64, total * 4);
    }
}
