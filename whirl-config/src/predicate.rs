//! Predicates from the file: builds the admission library's predicates from a
//! [`PredicateSpec`], keeping a [`Tuning`] handle on every node whose parameters can change
//! while the group runs, and applies a reloaded file's parameters through those handles.
//!
//! Each node is built behind an `Arc`, the group holding one reference and the tuning tree the
//! other; the live setters are the predicates' own (`QueueLength::set_max`,
//! `PriorityThresholds::set_thresholds`, `CostBudget::set_budget`, `TokenBucket::set_rate`),
//! which store into the atomics `admit` reads, so a reload costs the post path nothing. A
//! change of shape (another kind, another number of operands) or of a parameter without a
//! setter is reported as needing a restart.

use std::sync::Arc;

use whirl::admission::{
    And, ControllerParams, CostBudget, MessagePredicate, Not, Or, Overload, PriorityThresholds,
    QueueLength, ResponseTime, SessionConsistent, TokenBucket, UtilityPerCost,
};

use crate::schema::PredicateSpec;

/// A built predicate, type-erased.
pub(crate) type Built = Arc<dyn MessagePredicate>;

/// The live handles of a built predicate tree, shaped like its spec.
pub(crate) enum Tuning {
    QueueLength(Arc<QueueLength>),
    Priority(Arc<PriorityThresholds>),
    CostBudget(Arc<CostBudget>),
    TokenBucket(Arc<TokenBucket>),
    /// Nothing to tune (every parameter needs a restart).
    Fixed,
    Session(Box<Tuning>),
    /// An overload gate: its parameters need a restart, its inner predicate's do not.
    Overload(Box<Tuning>),
    List(Vec<Tuning>),
    Not(Box<Tuning>),
}

impl Tuning {
    /// The first priority thresholds in this tree (depth first), which an overload gate
    /// scales.
    fn first_thresholds(&self) -> Option<&Arc<PriorityThresholds>> {
        match self {
            Tuning::Priority(p) => Some(p),
            Tuning::Session(t) | Tuning::Overload(t) | Tuning::Not(t) => t.first_thresholds(),
            Tuning::List(ts) => ts.iter().find_map(Tuning::first_thresholds),
            _ => None,
        }
    }
}

fn thresholds(max: u64, at_least: &[(u8, u64)]) -> PriorityThresholds {
    let mut sorted = at_least.to_vec();
    sorted.sort_by_key(|&(priority, _)| priority);
    sorted
        .into_iter()
        .fold(PriorityThresholds::new(max), |p, (priority, max)| {
            p.at_least(priority, max)
        })
}

/// The error for a predicate whose values make its group refuse every message: accepted,
/// such a file would shed everything without a word (a sockets group refusing every TLS
/// handshake).
fn admits_nothing(predicate: &str, what: &str) -> String {
    format!(
        "`{predicate}` with {what} refuses every message: give it at least 1, or remove the predicate to admit everything"
    )
}

/// Builds `spec`; `Err` says what is wrong with a value the predicate refuses.
pub(crate) fn build(spec: &PredicateSpec) -> Result<(Built, Tuning), String> {
    Ok(match spec {
        PredicateSpec::QueueLength { max } => {
            if *max == 0 {
                return Err(admits_nothing("queue_length", "max = 0"));
            }
            let p = Arc::new(QueueLength::max(*max));
            (p.clone() as Built, Tuning::QueueLength(p))
        }
        PredicateSpec::PriorityThresholds { max, at_least } => {
            if *max == 0 && at_least.iter().all(|&(_, level)| level == 0) {
                return Err(admits_nothing(
                    "priority_thresholds",
                    "max = 0 at every priority",
                ));
            }
            let p = Arc::new(thresholds(*max, at_least));
            (p.clone() as Built, Tuning::Priority(p))
        }
        PredicateSpec::CostBudget { budget } => {
            if *budget == 0 {
                return Err(admits_nothing("cost_budget", "budget = 0"));
            }
            let p = Arc::new(CostBudget::new(*budget));
            (p.clone() as Built, Tuning::CostBudget(p))
        }
        PredicateSpec::TokenBucket {
            rate,
            depth,
            charge_cost,
        } => {
            if !(rate.is_finite() && *rate > 0.0) {
                return Err(format!("expected a positive rate, found {rate}"));
            }
            if *depth == 0 {
                return Err(admits_nothing("token_bucket", "depth = 0"));
            }
            let p = Arc::new(TokenBucket::new(*rate, *depth).charge_cost(*charge_cost));
            (p.clone() as Built, Tuning::TokenBucket(p))
        }
        PredicateSpec::ResponseTime { target } => {
            if target.0.is_zero() {
                return Err("expected a positive response-time target".into());
            }
            (
                Arc::new(ResponseTime::new(target.0)) as Built,
                Tuning::Fixed,
            )
        }
        PredicateSpec::UtilityPerCost {
            capacity,
            lowest,
            highest,
        } => (
            Arc::new(UtilityPerCost::new(*capacity, *lowest, *highest)) as Built,
            Tuning::Fixed,
        ),
        PredicateSpec::SessionConsistent {
            hold,
            ceiling,
            max_sessions,
            inner,
        } => {
            let (inner, tuning) = build(inner)?;
            let mut p = SessionConsistent::new(inner, hold.0);
            if let Some(ceiling) = ceiling {
                p = p.ceiling(*ceiling);
            }
            if let Some(n) = max_sessions {
                p = p.max_sessions(*n);
            }
            (Arc::new(p) as Built, Tuning::Session(Box::new(tuning)))
        }
        PredicateSpec::Overload {
            target,
            window,
            calm,
            inner,
        } => {
            if target.0.is_zero() {
                return Err("expected a positive response-time target".into());
            }
            if *window == Some(0) {
                return Err("expected a window of at least one completion".into());
            }
            let (inner, tuning) = build(inner)?;
            let mut params = ControllerParams::seda(target.0);
            if let Some(n) = window {
                params.nreq = *n;
            }
            let mut p = Overload::with_clock(inner, params, whirl::time::CoarseClock::shared());
            if let Some(calm) = calm {
                p = p.calm(calm.0);
            }
            if let Some(thresholds) = tuning.first_thresholds() {
                p = p.scaling(Arc::clone(thresholds));
            }
            (Arc::new(p) as Built, Tuning::Overload(Box::new(tuning)))
        }
        PredicateSpec::All(list) | PredicateSpec::Any(list) => {
            let all = matches!(spec, PredicateSpec::All(_));
            let mut built = Vec::with_capacity(list.len());
            let mut tunings = Vec::with_capacity(list.len());
            for item in list {
                let (p, t) = build(item)?;
                built.push(p);
                tunings.push(t);
            }
            // Right-nested pairs: `a and (b and c)`, evaluated left to right.
            let combined = built.into_iter().rev().reduce(|right, left| match all {
                true => Arc::new(And(left, right)) as Built,
                false => Arc::new(Or(left, right)) as Built,
            });
            let combined = combined.unwrap_or_else(|| match all {
                // The empty conjunction admits everything, the empty disjunction nothing.
                true => Arc::new(|_: &whirl::admission::Offer<'_>| true) as Built,
                false => Arc::new(|_: &whirl::admission::Offer<'_>| false) as Built,
            });
            (combined, Tuning::List(tunings))
        }
        PredicateSpec::Not(inner) => {
            let (inner, tuning) = build(inner)?;
            (Arc::new(Not(inner)) as Built, Tuning::Not(Box::new(tuning)))
        }
    })
}

/// What a reload did to one predicate tree.
#[derive(Default)]
pub(crate) struct Retuned {
    /// Parameters changed live, as dotted paths.
    pub applied: Vec<String>,
    /// Changes that need a restart, as dotted paths.
    pub restart: Vec<String>,
}

/// Applies `new`'s parameters to the predicate built from `old` (whose handles are
/// `tuning`), naming settings below `path`.
pub(crate) fn retune(
    old: &PredicateSpec,
    new: &PredicateSpec,
    tuning: &Tuning,
    path: &str,
    out: &mut Retuned,
) {
    use PredicateSpec as S;
    if old == new {
        return;
    }
    let mut param = |name: &str, changed: bool, apply: Option<&dyn Fn()>| {
        if !changed {
            return;
        }
        let at = format!("{path}.{name}");
        match apply {
            Some(apply) => {
                apply();
                out.applied.push(at);
            }
            None => out.restart.push(at),
        }
    };
    match (old, new, tuning) {
        (S::QueueLength { .. }, S::QueueLength { max }, Tuning::QueueLength(p)) => {
            param("max", true, Some(&|| p.set_max(*max)));
        }
        (
            S::PriorityThresholds {
                max: old_max,
                at_least: old_levels,
            },
            S::PriorityThresholds { max, at_least },
            Tuning::Priority(p),
        ) => {
            let changed = old_max != max || old_levels != at_least;
            param(
                "thresholds",
                changed,
                Some(&|| p.set_thresholds(&thresholds(*max, at_least))),
            );
        }
        (S::CostBudget { .. }, S::CostBudget { budget }, Tuning::CostBudget(p)) => {
            param("budget", true, Some(&|| p.set_budget(*budget)));
        }
        (
            S::TokenBucket {
                rate: old_rate,
                depth: old_depth,
                charge_cost: old_charge,
            },
            S::TokenBucket {
                rate,
                depth,
                charge_cost,
            },
            Tuning::TokenBucket(p),
        ) => {
            let valid = rate.is_finite() && *rate > 0.0;
            if valid {
                param("rate", old_rate != rate, Some(&|| p.set_rate(*rate)));
            } else {
                param("rate", old_rate != rate, None);
            }
            param("depth", old_depth != depth, None);
            param("charge_cost", old_charge != charge_cost, None);
        }
        (
            S::SessionConsistent {
                hold: old_hold,
                ceiling: old_ceiling,
                max_sessions: old_max,
                inner: old_inner,
            },
            S::SessionConsistent {
                hold,
                ceiling,
                max_sessions,
                inner,
            },
            Tuning::Session(t),
        ) => {
            param("hold", old_hold != hold, None);
            param("ceiling", old_ceiling != ceiling, None);
            param("max_sessions", old_max != max_sessions, None);
            retune(old_inner, inner, t, &format!("{path}.inner"), out);
        }
        (S::All(old_list), S::All(list), Tuning::List(ts))
        | (S::Any(old_list), S::Any(list), Tuning::List(ts))
            if old_list.len() == list.len() && ts.len() == list.len() =>
        {
            let key = if matches!(new, S::All(_)) {
                "all"
            } else {
                "any"
            };
            for (i, ((o, n), t)) in old_list.iter().zip(list).zip(ts).enumerate() {
                retune(o, n, t, &format!("{path}.{key}[{i}]"), out);
            }
        }
        (
            S::Overload {
                target: old_target,
                window: old_window,
                calm: old_calm,
                inner: old_inner,
            },
            S::Overload {
                target,
                window,
                calm,
                inner,
            },
            Tuning::Overload(t),
        ) => {
            param("target", old_target != target, None);
            param("window", old_window != window, None);
            param("calm", old_calm != calm, None);
            retune(old_inner, inner, t, &format!("{path}.inner"), out);
        }
        (S::Not(o), S::Not(n), Tuning::Not(t)) => {
            retune(o, n, t, &format!("{path}.not"), out);
        }
        // Another kind, another arity, or a predicate without live setters.
        _ => out.restart.push(path.to_string()),
    }
}
