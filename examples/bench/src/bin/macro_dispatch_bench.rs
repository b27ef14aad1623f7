//! Does `#[process]` cost anything at run time? Two processes do the same work on the same four
//! messages: one written with the macros, one with a hand-written message enum, `Process` impl
//! and `Handles` impls. A driver process on the same single worker posts each round, so a round
//! measures post, schedule and dispatch without cross-thread wake-ups. Both run in the same
//! runtime, in alternating rounds, and the program prints each one's median rate and the ratio.
//!
//! ```sh
//! cargo run --release -p bench --bin macro_dispatch_bench [messages per round] [rounds]
//! ```
//!
//! The generated code is the hand-written code (an enum with one variant per handler, a `match`
//! calling inherent methods, `#[inline]` conversions), so the ratio should be 1 within noise.
//! The rates move with machine load; the code does not: in the release build, the two
//! monomorphised `Runnable::run` turns (post-inlining, handlers included) disassemble to the
//! same instructions, which `objdump -d` on this binary shows.

use std::hint::black_box;
use std::time::{Duration, Instant};

use whirl::prelude::*;

#[derive(Message)]
struct Add(u64);

#[derive(Message)]
struct Xor(u64);

#[derive(Message)]
struct Rotate(u32);

#[derive(Message, Debug)]
struct Read(ReplyTo<u64>);

/// The accumulator, written with the macros.
#[process]
struct MacroAcc {
    acc: u64,
}

#[process]
impl MacroAcc {
    #[handle]
    fn add(&mut self, Add(n): Add) {
        self.acc = self.acc.wrapping_add(n);
    }

    #[handle]
    fn xor(&mut self, Xor(n): Xor) {
        self.acc ^= n;
    }

    #[handle]
    fn rotate(&mut self, Rotate(n): Rotate) {
        self.acc = self.acc.rotate_left(n);
    }

    #[handle]
    fn read(&mut self, Read(reply): Read) {
        let _ = reply.send(self.acc);
    }
}

/// The same accumulator, written by hand.
struct HandAcc {
    acc: u64,
}

// SAFETY: one `u64`. (`#[process]` implements this for `MacroAcc`; `Driver` asks it of its
// target.) (I8)
unsafe impl Isolated for HandAcc {}

enum HandMsg {
    Add(Add),
    Xor(Xor),
    Rotate(Rotate),
    Read(Read),
}

// SAFETY: each variant holds a `#[derive(Message)]` type, checked `Isolated` there (I8).
unsafe impl Isolated for HandMsg {}
impl Message for HandMsg {}

// SAFETY: this is the hand-written baseline the bench measures `#[process]` against, so it
// cannot use the macro's check; it holds what the macro would verify. The state is one `u64`,
// and every message is a `#[derive(Message)]` type (checked there): numbers and a reply
// handle for a `u64`. The `Handles` impls below also require each to be a `Message`. (I8)
unsafe impl Process for HandAcc {
    type Message = HandMsg;

    fn handle(&mut self, msg: HandMsg, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        match msg {
            HandMsg::Add(Add(n)) => self.acc = self.acc.wrapping_add(n),
            HandMsg::Xor(Xor(n)) => self.acc ^= n,
            HandMsg::Rotate(Rotate(n)) => self.acc = self.acc.rotate_left(n),
            HandMsg::Read(Read(reply)) => {
                let _ = reply.send(self.acc);
            }
        }
        Ok(())
    }
}

impl Handles<Add> for HandAcc {
    fn into_message(msg: Add) -> HandMsg {
        HandMsg::Add(msg)
    }
}

impl Handles<Xor> for HandAcc {
    fn into_message(msg: Xor) -> HandMsg {
        HandMsg::Xor(msg)
    }
}

impl Handles<Rotate> for HandAcc {
    fn into_message(msg: Rotate) -> HandMsg {
        HandMsg::Rotate(msg)
    }
}

impl Handles<Read> for HandAcc {
    fn into_message(msg: Read) -> HandMsg {
        HandMsg::Read(msg)
    }
}

/// Asks a driver to run one round against its target.
#[derive(Message, Debug)]
struct Drive {
    messages: u64,
    reply: ReplyTo<u64>,
}

/// Posts the round's messages from inside the runtime, on the same single worker as the target,
/// so that a round measures post, schedule and dispatch without cross-thread wake-ups.
#[process]
struct Driver<P: Process> {
    target: Addr<P>,
}

#[process]
impl<P> Driver<P>
where
    // `#[process]` requires a generic state's parameters to be `Isolated` (it cannot see that
    // `P` is only used inside `Addr<P>`).
    P: Handles<Add> + Handles<Xor> + Handles<Rotate> + Handles<Read> + Isolated,
{
    #[handle]
    fn drive(&mut self, Drive { messages, reply }: Drive) -> Result<(), Failure> {
        let lost = || Failure::new("the benchmark target is gone");
        for i in 0..messages {
            match i % 3 {
                0 => self.target.post(Add(black_box(i))).map_err(|_| lost())?,
                1 => self
                    .target
                    .post(Xor(black_box(i << 7)))
                    .map_err(|_| lost())?,
                _ => self
                    .target
                    .post(Rotate(black_box((i % 61) as u32)))
                    .map_err(|_| lost())?,
            }
        }
        // The target answers the caller once it has handled everything posted before.
        self.target.post(Read(reply)).map_err(|_| lost())
    }
}

/// One round: returns the elapsed time and the target's accumulator (so the work cannot be
/// optimised away).
fn round<P>(driver: &Addr<Driver<P>>, messages: u64) -> (Duration, u64)
where
    P: Handles<Add> + Handles<Xor> + Handles<Rotate> + Handles<Read> + Isolated,
{
    let start = Instant::now();
    let acc = driver
        .request_with(|reply| Drive { messages, reply })
        .call()
        .unwrap_or_else(|e| panic!("the round failed: {e}"));
    (start.elapsed(), acc)
}

fn rate((elapsed, acc): (Duration, u64), messages: u64) -> f64 {
    black_box(acc);
    messages as f64 / elapsed.as_secs_f64()
}

fn median(mut rates: Vec<f64>) -> f64 {
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let messages: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(21);

    // One worker runs drivers and targets alike: no work stealing, no cross-thread wake-ups
    // within a round.
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let with_macro = rt.spawn(MacroAcc { acc: 0 });
    let by_hand = rt.spawn(HandAcc { acc: 0 });
    let macro_driver = rt.spawn(Driver {
        target: with_macro.clone(),
    });
    let hand_driver = rt.spawn(Driver {
        target: by_hand.clone(),
    });

    // Warm up both paths (allocator, inbox blocks, caches).
    round(&macro_driver, messages / 10);
    round(&hand_driver, messages / 10);

    let (mut macro_rates, mut hand_rates, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds {
        // Alternate which goes first, so drift in machine load hits both alike; compare each
        // pair of adjacent runs.
        let (macro_rate, hand_rate) = if r % 2 == 0 {
            let m = rate(round(&macro_driver, messages), messages);
            (m, rate(round(&hand_driver, messages), messages))
        } else {
            let h = rate(round(&hand_driver, messages), messages);
            (rate(round(&macro_driver, messages), messages), h)
        };
        macro_rates.push(macro_rate);
        hand_rates.push(hand_rate);
        ratios.push(macro_rate / hand_rate);
    }
    let same = with_macro.request_with(Read).call().ok() == by_hand.request_with(Read).call().ok();
    assert!(
        same,
        "both processes must have computed the same accumulator"
    );

    println!("{messages} messages per round, {rounds} rounds of each, one worker:");
    println!(
        "  #[process] dispatch:   {:>7.2} M messages/s (median)",
        median(macro_rates) / 1e6
    );
    println!(
        "  hand-written dispatch: {:>7.2} M messages/s (median)",
        median(hand_rates) / 1e6
    );
    let (lowest, highest) = ratios
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &r| (lo.min(r), hi.max(r)));
    println!(
        "  ratio macro / hand:    {:>7.3} (median of adjacent pairs; range {lowest:.3}..{highest:.3})",
        median(ratios)
    );
    println!(
        "  message enum size: macro {} bytes, hand {} bytes",
        std::mem::size_of::<<MacroAcc as Process>::Message>(),
        std::mem::size_of::<HandMsg>()
    );
    rt.shutdown_graceful();
}
