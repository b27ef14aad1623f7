//! What traces across processes cost (see `whirl::Runtime`'s tracing docs): a stream of
//! messages through a chain of three processes, posted from inside a span, timed per message
//! under four subscribers, each in a process of its own (a global subscriber is set once per
//! process), and printed as ratios to the first:
//!
//! * `none`: no subscriber at all;
//! * `info`: a subscriber (the registry with an `EnvFilter` of `info`) that does not want
//!   message spans: posts pay one cached interest check, nothing is captured;
//! * `message spans`: the same with `whirl::message=debug`: each post keeps a handle on the
//!   span it was made in, and each message is handled in a span of its own;
//! * `message spans + fmt`: the same, with a formatting layer writing events to a sink (what a
//!   service logging at DEBUG pays).
//!
//! ```text
//! cargo bench -p whirl --bench message_spans
//! ```

use std::process::Command;
use std::time::{Duration, Instant};

use tracing_subscriber::layer::SubscriberExt;
use whirl::prelude::*;

const MODES: [&str; 4] = ["none", "info", "message spans", "message spans + fmt"];
const MESSAGES: u32 = 200_000;
const ROUNDS: usize = 7;

#[derive(Message)]
struct Hop(u32);

#[process]
struct End {
    seen: u64,
}

#[process]
impl End {
    #[handle]
    fn hop(&mut self, Hop(n): Hop) {
        self.seen += u64::from(n);
    }
}

#[process]
struct Link<P: Process + Handles<Hop>> {
    next: Addr<P>,
}

#[process]
impl<P: Process + Handles<Hop>> Link<P> {
    #[handle]
    fn hop(&mut self, hop: Hop) {
        let _ = self.next.post(hop);
    }
}

/// Nanoseconds per message through the chain, the median of `ROUNDS`.
fn measure() -> f64 {
    let rt = Runtime::builder()
        .threads(2)
        .build()
        .expect("the runtime starts");
    let end = rt.spawn(End { seen: 0 });
    let middle = rt.spawn(Link { next: end });
    let front = rt.spawn(Link { next: middle });
    let mut rounds: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let span = tracing::info_span!("request");
            let _inside = span.enter();
            let start = Instant::now();
            for i in 0..MESSAGES {
                if front.post(Hop(i)).is_err() {
                    panic!("the chain refused a message");
                }
            }
            rt.block_until_idle();
            start.elapsed().as_nanos() as f64 / f64::from(MESSAGES)
        })
        .collect();
    rt.shutdown_timeout(Duration::from_secs(1));
    rounds.sort_by(f64::total_cmp);
    rounds[ROUNDS / 2]
}

fn child(mode: &str) {
    let filter = |f: &str| tracing_subscriber::EnvFilter::new(f);
    let fmt = || {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::sink)
            .with_ansi(false)
    };
    match mode {
        "none" => {}
        "info" => tracing::subscriber::set_global_default(
            tracing_subscriber::registry().with(filter("info")),
        )
        .expect("one subscriber"),
        "message spans" => tracing::subscriber::set_global_default(
            tracing_subscriber::registry().with(filter("info,whirl::message=debug")),
        )
        .expect("one subscriber"),
        _ => tracing::subscriber::set_global_default(
            tracing_subscriber::registry()
                .with(filter("info,whirl::message=debug"))
                .with(fmt()),
        )
        .expect("one subscriber"),
    }
    println!("{}", measure());
}

fn main() {
    if let Ok(mode) = std::env::var("WHIRL_MESSAGE_SPANS_MODE") {
        return child(&mode);
    }
    // `cargo bench` passes `--bench`; a filter argument is ignored.
    let exe = std::env::current_exe().expect("the bench knows its own path");
    println!(
        "message spans: {MESSAGES} messages through 3 processes, posted inside a span, \
         2 workers, median of {ROUNDS} rounds"
    );
    let mut baseline = None;
    for mode in MODES {
        let out = Command::new(&exe)
            .env("WHIRL_MESSAGE_SPANS_MODE", mode)
            .output()
            .expect("the bench runs itself");
        let text = String::from_utf8_lossy(&out.stdout);
        let ns: f64 = text.trim().parse().unwrap_or_else(|_| {
            panic!(
                "mode {mode}: no figure in {text:?} ({})",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        let base = *baseline.get_or_insert(ns);
        println!(
            "  {mode:<22} {ns:>8.1} ns/message   {:>5.2}x `none`",
            ns / base
        );
    }
}
