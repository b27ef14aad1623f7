//! Runs, figures and comparisons.

use serde::{Deserialize, Serialize};

use crate::{Error, Result, RunId};

/// The threshold, in percent, used when none is given (as in the console's API).
pub const DEFAULT_THRESHOLD_PCT: f64 = 5.0;

/// One measured figure of a run, as the bench suite reports it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// Unique within a run, e.g. `"ping-pong whirl/tokio"`.
    pub name: String,
    /// The measurement; must be finite.
    pub value: f64,
    /// Its unit, e.g. `"msgs/s"`, `"B/proc"`, `"x"` (a ratio).
    pub unit: String,
    /// Whether a larger value is an improvement (rates) or a regression (bytes, latency).
    pub higher_is_better: bool,
}

impl Figure {
    /// A figure from its parts.
    pub fn new(
        name: impl Into<String>,
        value: f64,
        unit: impl Into<String>,
        higher_is_better: bool,
    ) -> Self {
        Figure {
            name: name.into(),
            value,
            unit: unit.into(),
            higher_is_better,
        }
    }
}

/// Where, when and on what a run was measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunMeta {
    /// The abbreviated commit hash (`git rev-parse --short HEAD`), or `"unknown"`.
    pub commit: String,
    /// Whether tracked files had uncommitted changes (`git status --porcelain
    /// --untracked-files=no` was not empty).
    pub dirty: bool,
    /// The host name.
    pub machine: String,
    /// The number of CPUs available to the suite.
    pub cpus: u32,
    /// When the run was recorded, RFC 3339 in UTC, e.g. `"2026-11-26T03:00:00Z"`.
    pub date: String,
    /// Which suite produced the figures, e.g. `"bench quick"`; only runs of the same suite
    /// are meaningfully comparable.
    pub suite: String,
}

impl RunMeta {
    /// The machine as the console shows it: `"host (2 cpus)"`.
    pub fn machine_label(&self) -> String {
        let plural = if self.cpus == 1 { "" } else { "s" };
        format!("{} ({} cpu{plural})", self.machine, self.cpus)
    }
}

/// A recorded run: its id, metadata and figures (in the order the suite reported them).
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// Its id.
    pub id: RunId,
    /// Where, when and on what it was measured.
    pub meta: RunMeta,
    /// Its figures.
    pub figures: Vec<Figure>,
}

impl Run {
    /// The figure with this name, if the run has one.
    pub fn figure(&self, name: &str) -> Option<&Figure> {
        self.figures.iter().find(|f| f.name == name)
    }
}

/// One side of a [`Comparison`]: which run it is.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunSummary {
    /// The run's id.
    pub id: RunId,
    /// Its commit.
    pub commit: String,
    /// Its date (RFC 3339, UTC).
    pub date: String,
}

impl RunSummary {
    fn of(run: &Run) -> Self {
        RunSummary {
            id: run.id,
            commit: run.meta.commit.clone(),
            date: run.meta.date.clone(),
        }
    }
}

/// One figure present in both runs of a [`Comparison`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompareRow {
    /// The figure's name.
    pub name: String,
    /// Its unit (run `b`'s, should the runs disagree).
    pub unit: String,
    /// Its direction (run `b`'s, should the runs disagree).
    pub higher_is_better: bool,
    /// Its value in run `a` (the baseline).
    pub a: f64,
    /// Its value in run `b`.
    pub b: f64,
    /// `(b - a) / |a| * 100`; `None` (JSON `null`) when `a` is 0 and `b` is not.
    pub change_pct: Option<f64>,
    /// Whether `b` is worse than `a`, in the figure's own direction, by more than the
    /// threshold (any worsening from 0 counts as beyond it).
    pub regression: bool,
}

impl CompareRow {
    /// Whether `b` is better than `a` by more than `threshold_pct` (the opposite of a regression).
    pub fn improvement(&self, threshold_pct: f64) -> bool {
        let better = if self.higher_is_better {
            self.b > self.a
        } else {
            self.b < self.a
        };
        better && self.change_pct.is_none_or(|c| c.abs() > threshold_pct)
    }
}

/// Two runs compared figure by figure; serializes to the console API's
/// `GET /api/bench/compare` body.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// The baseline run.
    pub a: RunSummary,
    /// The run judged against it.
    pub b: RunSummary,
    /// The threshold, in percent.
    pub threshold_pct: f64,
    /// The figures present in both runs, in run `b`'s order.
    pub rows: Vec<CompareRow>,
    /// How many rows are regressions.
    pub regressions: usize,
}

impl Comparison {
    /// Compares `b` against the baseline `a`. A row is a regression when the figure got
    /// worse (down if `higher_is_better`, else up) by more than `threshold_pct` percent;
    /// figures present in only one run are left out.
    pub fn of(a: &Run, b: &Run, threshold_pct: f64) -> Result<Self> {
        check_threshold(threshold_pct)?;
        let rows: Vec<CompareRow> = b
            .figures
            .iter()
            .filter_map(|fb| {
                let fa = a.figure(&fb.name)?;
                let (va, vb) = (fa.value, fb.value);
                let change_pct = if va == vb {
                    Some(0.0)
                } else if va == 0.0 {
                    None
                } else {
                    Some((vb - va) / va.abs() * 100.0)
                };
                let worse = if fb.higher_is_better {
                    vb < va
                } else {
                    vb > va
                };
                let regression = worse && change_pct.is_none_or(|c| c.abs() > threshold_pct);
                Some(CompareRow {
                    name: fb.name.clone(),
                    unit: fb.unit.clone(),
                    higher_is_better: fb.higher_is_better,
                    a: va,
                    b: vb,
                    change_pct,
                    regression,
                })
            })
            .collect();
        Ok(Comparison {
            a: RunSummary::of(a),
            b: RunSummary::of(b),
            threshold_pct,
            regressions: rows.iter().filter(|r| r.regression).count(),
            rows,
        })
    }
}

/// Fails unless `threshold_pct` is finite and not negative.
pub(crate) fn check_threshold(threshold_pct: f64) -> Result<()> {
    if threshold_pct.is_finite() && threshold_pct >= 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidThreshold(threshold_pct))
    }
}
