//! The results of a run, per class and in total, in the shape both output formats print.

use std::time::Duration;

use hdrhistogram::Histogram;

use crate::cli::Config;
use crate::session::Outcome;
use crate::stats::{jain, new_histogram, Class, Counts};

/// One line of the report: a class, or the total.
pub struct Row {
    /// Class name, or `total`.
    pub name: &'static str,
    /// Sessions that ended in this class.
    pub sessions: usize,
    /// Summed counts over the measured window.
    pub counts: Counts,
    /// Latency of responses (any status) in microseconds.
    pub hist: Histogram<u64>,
    /// Jain's index over the sessions' 200 counts: served work is what users feel, and under
    /// overload a session receiving fast 503s would otherwise look well served.
    pub jain_ok: Option<f64>,
    /// Jain's index over the sessions' response counts of any status.
    pub jain_responses: Option<f64>,
}

impl Row {
    fn new(name: &'static str, outcomes: &[&Outcome], hist: Histogram<u64>) -> Row {
        let mut counts = Counts::default();
        for o in outcomes {
            counts.add(&o.counts);
        }
        let ok: Vec<u64> = outcomes.iter().map(|o| o.counts.ok).collect();
        let responses: Vec<u64> = outcomes.iter().map(|o| o.counts.responses()).collect();
        Row {
            name,
            sessions: outcomes.len(),
            counts,
            hist,
            jain_ok: jain(&ok),
            jain_responses: jain(&responses),
        }
    }

    /// Latency at quantile `q` in milliseconds; `None` without responses.
    pub fn quantile_ms(&self, q: f64) -> Option<f64> {
        (!self.hist.is_empty()).then(|| self.hist.value_at_quantile(q) as f64 / 1000.0)
    }

    /// Largest latency in milliseconds; `None` without responses.
    pub fn max_ms(&self) -> Option<f64> {
        (!self.hist.is_empty()).then(|| self.hist.max() as f64 / 1000.0)
    }
}

/// Everything printed at the end of a run.
pub struct Report {
    /// The server URL.
    pub url: String,
    /// Sessions asked for: admin, user, anonymous.
    pub planned: [usize; 3],
    /// Mean (or fixed) think time.
    pub think: Duration,
    /// Whether think time was fixed.
    pub think_fixed: bool,
    /// Warm-up length.
    pub warmup: Duration,
    /// Measured window length, the denominator of every rate.
    pub measured: Duration,
    /// Socket timeout.
    pub timeout: Duration,
    /// Base seed, to repeat a run's think times and path choices.
    pub seed: u64,
    /// One row per class, in [`Class::ALL`] order.
    pub rows: Vec<Row>,
    /// All sessions together; its Jain's index is across every session.
    pub total: Row,
}

impl Report {
    /// Builds the report from the sessions' outcomes and the per-class histograms.
    pub fn new(cfg: &Config, outcomes: &[Outcome], hists: [Histogram<u64>; 4]) -> Report {
        let mut total_hist = new_histogram();
        for h in &hists {
            // Same bounds everywhere, so adding cannot fail.
            let _ = total_hist.add(h);
        }
        let rows = Class::ALL
            .iter()
            .zip(hists)
            .map(|(&class, hist)| {
                let mine: Vec<&Outcome> = outcomes.iter().filter(|o| o.class == class).collect();
                Row::new(class.name(), &mine, hist)
            })
            .collect();
        let all: Vec<&Outcome> = outcomes.iter().collect();
        Report {
            url: format!("http://{}", cfg.target.authority),
            planned: [cfg.admins, cfg.users, cfg.anonymous],
            think: cfg.think,
            think_fixed: cfg.think_fixed,
            warmup: cfg.warmup,
            measured: cfg.duration,
            timeout: cfg.timeout,
            seed: cfg.seed,
            rows,
            total: Row::new("total", &all, total_hist),
        }
    }

    /// `n` per second of the measured window.
    pub fn rate(&self, n: u64) -> f64 {
        n as f64 / self.measured.as_secs_f64()
    }

    /// The class rows followed by the total.
    pub fn all_rows(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().chain(std::iter::once(&self.total))
    }
}
