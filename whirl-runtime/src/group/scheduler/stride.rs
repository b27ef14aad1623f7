//! Stride scheduling (Waldspurger and Weihl, 1995) across principal classes.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use parking_lot::Mutex;

use super::{Ready, Scheduler, TurnReport};

/// The stride of a class with one ticket; a class with `t` tickets has stride `STRIDE1 / t`.
const STRIDE1: u64 = 1 << 32;

/// The least a turn is charged for, in nanoseconds, however short it measured.
const MIN_CHARGE_NANOS: u128 = 1_000;

/// Proportional share of handling time across principal classes: stride scheduling
/// (Waldspurger and Weihl, 1995), charged by measured turn time.
///
/// * A process's class is its principal's [`class`](crate::Principal::class); processes
///   without a principal use the [`unassigned`](Stride::unassigned) class (default 0).
/// * Each class holds [`tickets`](Stride::tickets) (default 1), a FIFO of ready processes and
///   a *pass*. [`pop`](Scheduler::pop) serves the non-empty class with the least pass (ties:
///   the lower class number).
/// * A class's stride is `2^32 / tickets`. A turn lasting `elapsed` advances its class's pass
///   by `stride × elapsed` in nanoseconds, at least 1 µs worth, so a class of no-op handlers
///   cannot take unbounded turns. Passes are `u128`: a year of handling time at one ticket
///   is about 2^87, so they cannot overflow. The 1 µs minimum is charged when the turn is
///   handed out (so several workers popping at once spread over the classes) and the rest
///   when [`turn_finished`](Scheduler::turn_finished) reports it. Over time each active class
///   gets handling time in proportion to its tickets.
/// * **No credit for idle time**: the *global pass* is the pass of the most recently served
///   class (kept monotonic, like the virtual time of start-time fair queueing). A class that
///   was idle (empty queue) and gets a newly woken process has its pass raised to at least the
///   global pass, so it competes from now on instead of catching up on the time it was idle.
///   A [yielded](Ready::yielded) process that comes back keeps its class's pass: it was just
///   served, so its class was not idle. Since a class never leaves more than one turn ahead of
///   the global pass, a returning class also carries at most one turn of debt.
///
/// `pop` scans the classes seen so far (a short sorted vector), so this suits tens of classes,
/// not thousands.
///
/// ```
/// use whirl::scheduler::{Scheduler, Stride};
///
/// // Class 1 gets three times the handling time of class 2; unclassified work is class 2.
/// let scheduler = Stride::new().tickets(1, 3).tickets(2, 1).unassigned(2);
/// assert!(scheduler.wants_turn_times());
/// assert!(scheduler.is_empty());
/// ```
pub struct Stride {
    unassigned: u16,
    inner: Mutex<Classes>,
    /// Queued processes: raised before a push and lowered after a pop, so it never
    /// understates what is queued (it may overstate it for an instant).
    len: AtomicUsize,
}

struct Class {
    class: u16,
    tickets: u32,
    stride: u64,
    pass: u128,
    queue: VecDeque<Ready>,
}

#[derive(Default)]
struct Classes {
    /// The classes seen or configured so far, by class number.
    classes: Vec<Class>,
    /// The pass of the most recently served class (monotonic).
    global_pass: u128,
}

impl Classes {
    /// The index of `class`, creating it with one ticket on first sight.
    fn index(&mut self, class: u16) -> usize {
        match self.classes.binary_search_by_key(&class, |c| c.class) {
            Ok(i) => i,
            Err(i) => {
                let new = Class {
                    class,
                    tickets: 1,
                    stride: STRIDE1,
                    pass: self.global_pass,
                    queue: VecDeque::new(),
                };
                self.classes.insert(i, new);
                i
            }
        }
    }
}

impl Stride {
    /// A scheduler where every class holds one ticket and unassigned work is class 0.
    pub fn new() -> Self {
        Stride {
            unassigned: 0,
            inner: Mutex::new(Classes::default()),
            len: AtomicUsize::new(0),
        }
    }

    /// This scheduler with `tickets` tickets for class `class` (at least 1: 0 counts as 1).
    pub fn tickets(mut self, class: u16, tickets: u32) -> Self {
        let inner = self.inner.get_mut();
        let i = inner.index(class);
        let c = &mut inner.classes[i];
        c.tickets = tickets.max(1);
        c.stride = STRIDE1 / u64::from(c.tickets);
        self
    }

    /// This scheduler with processes that serve no principal in class `class` (default 0).
    pub fn unassigned(mut self, class: u16) -> Self {
        self.unassigned = class;
        self
    }
}

impl Default for Stride {
    fn default() -> Self {
        Self::new()
    }
}

impl Scheduler for Stride {
    fn push(&self, ready: Ready) {
        let class = ready.principal().map_or(self.unassigned, |p| p.class());
        let mut inner = self.inner.lock();
        let i = inner.index(class);
        let global_pass = inner.global_pass;
        let c = &mut inner.classes[i];
        if c.queue.is_empty() && !ready.yielded() {
            c.pass = c.pass.max(global_pass);
        }
        self.len.fetch_add(1, SeqCst);
        c.queue.push_back(ready);
    }

    fn pop(&self, _worker: usize) -> Option<Ready> {
        let mut inner = self.inner.lock();
        let c = inner
            .classes
            .iter_mut()
            .filter(|c| !c.queue.is_empty())
            .reduce(|best, c| if c.pass < best.pass { c } else { best })?;
        let served = c.pass;
        c.pass = c
            .pass
            .saturating_add(u128::from(c.stride) * MIN_CHARGE_NANOS);
        let ready = c.queue.pop_front();
        self.len.fetch_sub(1, SeqCst);
        inner.global_pass = inner.global_pass.max(served);
        ready
    }

    fn len(&self) -> usize {
        self.len.load(SeqCst)
    }

    fn wants_turn_times(&self) -> bool {
        true
    }

    fn turn_finished(&self, turn: &TurnReport<'_>) {
        let class = turn.principal.map_or(self.unassigned, |p| p.class());
        let extra = turn.elapsed.as_nanos().saturating_sub(MIN_CHARGE_NANOS);
        let mut inner = self.inner.lock();
        let i = inner.index(class);
        let c = &mut inner.classes[i];
        c.pass = c.pass.saturating_add(u128::from(c.stride) * extra);
    }

    fn describe(&self) -> String {
        let inner = self.inner.lock();
        let mut out = String::from("stride:");
        for (n, c) in inner.classes.iter().enumerate() {
            let sep = if n == 0 { " " } else { "; " };
            // pass / STRIDE1 is handling time per ticket, in nanoseconds.
            let pass_us = c.pass / u128::from(STRIDE1) / 1000;
            let (class, tickets, queued) = (c.class, c.tickets, c.queue.len());
            let _ = write!(
                out,
                "{sep}class {class} ({tickets} tickets) pass {pass_us}µs/ticket, queued {queued}"
            );
        }
        out
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::group::scheduler::testing::{check_every_ready_once, ready};
    use crate::principal::Principal;

    fn in_class(id: u64, class: u16) -> Ready {
        ready(
            id,
            Some(
                Principal::builder(id)
                    .class(class)
                    .build()
                    .expect("a valid principal"),
            ),
            false,
        )
    }

    fn class_of(r: &Ready) -> u16 {
        r.principal().map_or(u16::MAX, |p| p.class())
    }

    /// Runs `turns` turns on one worker, each process yielding (always ready) and costing
    /// `cost(class)`; returns the turns and the time per class index in `classes`.
    fn run(
        s: &Stride,
        classes: &[u16],
        turns: usize,
        cost: impl Fn(u16) -> Duration,
    ) -> Vec<(usize, Duration)> {
        let mut got = vec![(0, Duration::ZERO); classes.len()];
        for _ in 0..turns {
            let r = s.pop(0).unwrap();
            let class = class_of(&r);
            let elapsed = cost(class);
            s.turn_finished(&TurnReport {
                principal: r.principal(),
                handled: 1,
                elapsed,
            });
            let k = classes.iter().position(|&c| c == class).unwrap();
            got[k].0 += 1;
            got[k].1 += elapsed;
            s.push(Ready::new(r.into_task(), true));
        }
        got
    }

    #[test]
    fn turns_follow_tickets() {
        let s = Stride::new().tickets(1, 3);
        for id in 0..4 {
            s.push(in_class(id, 1 + (id % 2) as u16));
        }
        let got = run(&s, &[1, 2], 4000, |_| Duration::from_micros(100));
        assert!((2960..=3040).contains(&got[0].0), "{got:?}");
        assert_eq!(got[0].0 + got[1].0, 4000);
        assert_eq!(got[0].1, Duration::from_micros(100) * got[0].0 as u32);
        assert!(s.describe().starts_with("stride: class 1 (3 tickets) pass"));
    }

    #[test]
    fn time_shares_follow_tickets_with_unequal_turns() {
        let s = Stride::new();
        for id in 0..4 {
            s.push(in_class(id, 1 + (id % 2) as u16));
        }
        let cost = |c| Duration::from_micros(if c == 1 { 1000 } else { 250 });
        let got = run(&s, &[1, 2], 5000, cost);
        let (a, b) = (got[0].1.as_secs_f64(), got[1].1.as_secs_f64());
        assert!((a / b - 1.0).abs() < 0.02, "{got:?}");
        assert!((3900..=4100).contains(&got[1].0), "{got:?}");
    }

    #[test]
    fn concurrent_pops_spread_before_turns_finish() {
        let s = Stride::new();
        for id in 0..4 {
            s.push(in_class(id, 1 + (id / 2) as u16));
        }
        let (a, b) = (s.pop(0).unwrap(), s.pop(1).unwrap());
        assert_eq!((class_of(&a), class_of(&b)), (1, 2));
    }

    #[test]
    fn no_op_turns_are_charged_a_minimum() {
        let s = Stride::new();
        s.push(in_class(1, 1));
        s.push(in_class(2, 2));
        let cost = |c| Duration::from_micros(if c == 1 { 0 } else { 100 });
        let got = run(&s, &[1, 2], 10_100, cost);
        // 1 µs per no-op turn: 100 of them per 100 µs turn of class 2.
        assert!((95..=105).contains(&got[1].0), "{got:?}");
    }

    #[test]
    fn idle_class_gets_no_credit_and_little_debt() {
        let s = Stride::new();
        s.push(in_class(1, 1));
        let every = |_| Duration::from_micros(100);
        run(&s, &[1], 1000, every);
        // Class 2 wakes after class 1 ran alone for 100 ms: an even split from now on.
        s.push(in_class(2, 2));
        let got = run(&s, &[1, 2], 200, every);
        assert_eq!((got[0].0, got[1].0), (100, 100));
        // Class 1 leaves, class 2 runs alone, class 1 comes back: an even split again.
        let one = loop {
            let r = s.pop(0).unwrap();
            if class_of(&r) == 1 {
                break r;
            }
            s.push(Ready::new(r.into_task(), true));
        };
        run(&s, &[2], 1000, every);
        s.push(Ready::new(one.into_task(), false));
        let got = run(&s, &[1, 2], 200, every);
        assert!((99..=101).contains(&got[0].0), "{got:?}");
    }

    #[test]
    fn unassigned_class_uses_its_tickets() {
        let s = Stride::new().tickets(5, 3).unassigned(5);
        s.push(ready(1, None, false));
        s.push(in_class(2, 0));
        let got = run(&s, &[u16::MAX, 0], 400, |_| Duration::from_micros(10));
        assert!((299..=301).contains(&got[0].0), "{got:?}");
    }

    #[test]
    fn every_item_exactly_once_and_len() {
        let s = Stride::new().tickets(3, 7).tickets(0, 0);
        check_every_ready_once(
            &s,
            0x2545_F491_4F6C_DD1D,
            2,
            |id, r| match (r >> 8) % 5 {
                4 => ready(id, None, r & 0x10000 == 0),
                c => in_class(id, [0, 1, 3, 900][c as usize]),
            },
            |s, item, r| {
                s.turn_finished(&TurnReport {
                    principal: item.principal(),
                    handled: 1,
                    elapsed: Duration::from_nanos((r >> 20) % 1_000_000),
                })
            },
        );
    }
}
