//! Prometheus exposition (feature `prometheus`): what `whirl::prometheus::register` puts in a
//! `prometheus-client` registry, read back as a scraper reads it.
//!
//! * Real histograms: one family with `# TYPE histogram`, cumulative buckets ending at
//!   `+Inf` with the count, and a `_sum` that only grows from one scrape to the next, so
//!   `rate(_sum) / rate(_count)` is a mean the buckets agree with.
//! * Counters count what their names say; principals are counted per class unless asked.
//! * `process_*` and `whirl_build_info` are there; a runtime that shut down exports nothing.
//! * `promtool check metrics` finds no problem (skipped, saying so, where promtool is not
//!   installed, unless `WHIRL_REQUIRE_PROMTOOL` is set, as CI sets it).
#![cfg(feature = "prometheus")]

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::wait_until;
use prometheus_client::registry::Registry;
use whirl::prelude::*;
use whirl::prometheus::{Format, RuntimeCollector};
use whirl::{Principal, Runtime};

#[derive(Message)]
struct Work(u64);

#[process]
struct Worker;

#[process]
impl Worker {
    #[handle]
    fn work(&mut self, Work(spin): Work) {
        let until = std::time::Instant::now() + Duration::from_micros(spin);
        while std::time::Instant::now() < until {
            std::hint::spin_loop();
        }
    }
}

/// One scrape: every sample by name and labels (as written), and the `# TYPE` lines.
struct Scrape {
    text: String,
    samples: BTreeMap<(String, String), f64>,
    types: BTreeMap<String, String>,
}

impl Scrape {
    fn of(registry: &Registry) -> Scrape {
        Scrape::as_(registry, Format::OpenMetrics)
    }

    fn as_(registry: &Registry, format: Format) -> Scrape {
        let text = whirl::prometheus::encode(registry, format).expect("encodes");
        let mut samples = BTreeMap::new();
        let mut types = BTreeMap::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
                types.insert(name.to_owned(), kind.to_owned());
                continue;
            }
            if line.starts_with('#') {
                continue;
            }
            let (series, value) = line.rsplit_once(' ').expect("a sample has a value");
            let (name, labels) = match series.split_once('{') {
                Some((name, labels)) => (name, labels.trim_end_matches('}')),
                None => (series, ""),
            };
            let value = value
                .parse()
                .unwrap_or_else(|_| panic!("a number in {line:?}"));
            samples.insert((name.to_owned(), labels.to_owned()), value);
        }
        Scrape {
            text,
            samples,
            types,
        }
    }

    fn get(&self, name: &str, labels: &str) -> Option<f64> {
        self.samples
            .get(&(name.to_owned(), labels.to_owned()))
            .copied()
    }

    fn value(&self, name: &str, labels: &str) -> f64 {
        self.get(name, labels)
            .unwrap_or_else(|| panic!("no {name}{{{labels}}} in\n{}", self.text))
    }

    fn names(&self, name: &str) -> usize {
        self.samples.keys().filter(|(n, _)| n == name).count()
    }

    /// The histogram's buckets for `group`, as (le, cumulative count), in order.
    fn buckets(&self, name: &str, group: &str) -> Vec<(String, f64)> {
        let suffix = format!("\",group=\"{group}\"");
        let mut buckets: Vec<(String, f64)> = self
            .samples
            .iter()
            .filter(|((n, l), _)| n == &format!("{name}_bucket") && l.ends_with(&suffix))
            .filter_map(|((_, l), v)| Some((l.strip_prefix("le=\"")?, *v)))
            .map(|(l, v)| (l[..l.len() - suffix.len()].to_owned(), v))
            .collect();
        let bound = |le: &str| le.parse::<f64>().unwrap_or(f64::INFINITY);
        buckets.sort_by(|a, b| bound(&a.0).total_cmp(&bound(&b.0)));
        buckets
    }
}

fn promtool_check(text: &str) {
    let required = std::env::var_os("WHIRL_REQUIRE_PROMTOOL").is_some();
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) if !required => {
            eprintln!("promtool is not installed ({e}): `promtool check metrics` skipped");
            return;
        }
        Err(e) => panic!("WHIRL_REQUIRE_PROMTOOL is set and promtool cannot run: {e}"),
    };
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(text.as_bytes())
        .expect("promtool reads the exposition");
    let out = child.wait_with_output().expect("promtool finishes");
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn histograms_are_real_and_their_sums_only_grow() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let group = rt.group("prom-work").threads(1).build().expect("a group");
    let worker = rt.spawner().group(&group).spawn(Worker);
    let mut registry = Registry::default();
    whirl::prometheus::register(&mut registry, &rt);

    let mut last_sum = 0.0;
    let mut last_count = 0.0;
    let mut last_buckets = Vec::new();
    let mut handled = 0.0;
    for round in 1..=4u64 {
        // Turns are sampled (the first of each worker in a millisecond, one in 64 besides):
        // post batches, a few milliseconds apart, until this round has measurements.
        wait_until("the round's measurements to be published", || {
            for i in 0..200 {
                worker.post(Work(i % 50 * round)).expect("no predicate");
            }
            handled += 200.0;
            rt.block_until_idle();
            std::thread::sleep(Duration::from_millis(2));
            Scrape::of(&registry).value("whirl_group_handling_seconds_count", "group=\"prom-work\"")
                > last_count
        });
        let scrape = Scrape::of(&registry);
        let g = "group=\"prom-work\"";
        assert_eq!(
            scrape
                .types
                .get("whirl_group_handling_seconds")
                .map(String::as_str),
            Some("histogram"),
            "{}",
            scrape.text
        );
        assert_eq!(
            scrape.value("whirl_group_handled_total", g),
            200.0 * round as f64
        );
        let (sum, count) = (
            scrape.value("whirl_group_handling_seconds_sum", g),
            scrape.value("whirl_group_handling_seconds_count", g),
        );
        assert!(
            sum > last_sum,
            "round {round}: the sum went from {last_sum} to {sum}"
        );
        assert!(count > last_count);
        let buckets = scrape.buckets("whirl_group_handling_seconds", "prom-work");
        assert_eq!(buckets.len(), whirl::control::LATENCY_BUCKETS.len() + 1);
        assert!(
            buckets.windows(2).all(|w| w[0].1 <= w[1].1),
            "cumulative: {buckets:?}"
        );
        assert_eq!(
            buckets.last().map(|b| (b.0.as_str(), b.1)),
            Some(("+Inf", count))
        );
        // The mean over this round, as `rate(_sum) / rate(_count)` computes it, agrees with
        // the buckets' increase over the round: it lies between the bounds of the buckets
        // that hold the round's 1st and 99th percentiles, as `histogram_quantile` reads them.
        let mean = (sum - last_sum) / (count - last_count);
        let (low, high) = (
            quantile_bounds(&last_buckets, &buckets, 0.01).0,
            quantile_bounds(&last_buckets, &buckets, 0.99).1,
        );
        assert!(
            low <= mean && mean <= high,
            "round {round}: mean {mean} s outside [{low}, {high}]: {buckets:?}"
        );
        last_buckets = buckets;
        (last_sum, last_count) = (sum, count);
    }
    promtool_check(&Scrape::as_(&registry, Format::Classic).text);
}

/// The bounds of the bucket that holds quantile `q` of the observations made between two
/// scrapes of a histogram's buckets (`before` is empty for the first).
fn quantile_bounds(before: &[(String, f64)], after: &[(String, f64)], q: f64) -> (f64, f64) {
    let earlier = |i: usize| before.get(i).map_or(0.0, |b| b.1);
    let total = after.last().map_or(0.0, |b| b.1) - earlier(after.len() - 1);
    let bound = |i: usize| after[i].0.parse::<f64>().unwrap_or(f64::INFINITY);
    for (i, (_, cumulative)) in after.iter().enumerate() {
        if cumulative - earlier(i) >= q * total {
            let low = if i == 0 { 0.0 } else { bound(i - 1) };
            return (low, bound(i));
        }
    }
    (0.0, f64::INFINITY)
}

#[test]
fn principals_are_counted_per_class_unless_asked() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let group = rt
        .group("prom-sessions")
        .threads(1)
        .build()
        .expect("a group");
    for session in 0..50u64 {
        let principal = Principal::builder(1_000 + session)
            .class(u16::from(session % 2 == 0) + 1)
            .build()
            .expect("a valid principal");
        let p = rt
            .spawner()
            .group(&group)
            .principal(principal)
            .spawn(Worker);
        p.post(Work(0)).expect("no predicate");
        p.post(Work(0)).expect("no predicate");
    }
    rt.block_until_idle();
    let mut registry = Registry::default();
    whirl::prometheus::register(&mut registry, &rt);
    let handled = |s: &Scrape, class: u16| {
        s.get(
            "whirl_class_handled_total",
            &format!("group=\"prom-sessions\",class=\"{class}\",priority=\"0\""),
        )
    };
    wait_until("every principal's turns to be published", || {
        let s = Scrape::of(&registry);
        handled(&s, 1) == Some(50.0) && handled(&s, 2) == Some(50.0)
    });
    let scrape = Scrape::of(&registry);
    assert_eq!(scrape.names("whirl_principal_handled_total"), 0);
    assert!(
        scrape.value(
            "whirl_class_handling_seconds_total",
            "group=\"prom-sessions\",class=\"1\",priority=\"0\""
        ) > 0.0
    );

    let mut per_principal = Registry::default();
    per_principal.register_collector(Box::new(RuntimeCollector::new(&rt).per_principal(true)));
    let scrape = Scrape::of(&per_principal);
    assert_eq!(scrape.names("whirl_principal_handled_total"), 50);
    assert_eq!(
        scrape.get(
            "whirl_principal_handled_total",
            "group=\"prom-sessions\",principal=\"1007\""
        ),
        Some(2.0)
    );
    promtool_check(&Scrape::as_(&registry, Format::Classic).text);
}

#[test]
fn the_process_and_the_build_are_described_and_a_gone_runtime_is_not() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let mut registry = Registry::default();
    whirl::prometheus::register(&mut registry, &rt);
    let scrape = Scrape::of(&registry);
    assert_eq!(
        scrape.get(
            "whirl_build_info",
            &format!("version=\"{}\"", env!("CARGO_PKG_VERSION"))
        ),
        Some(1.0)
    );
    if cfg!(target_os = "linux") {
        assert!(scrape.value("process_cpu_seconds_total", "") > 0.0);
        assert!(scrape.value("process_resident_memory_bytes", "") > 0.0);
        assert!(scrape.value("process_open_fds", "") > 0.0);
        assert!(scrape.value("process_start_time_seconds", "") > 1.6e9);
        assert_eq!(
            scrape.types.get("process_cpu_seconds").map(String::as_str),
            Some("counter")
        );
    }
    assert_eq!(scrape.value("whirl_live_processes", ""), 0.0);
    promtool_check(&Scrape::as_(&registry, Format::Classic).text);

    drop(rt);
    let scrape = Scrape::of(&registry);
    assert_eq!(scrape.names("whirl_live_processes"), 0, "{}", scrape.text);
    assert_eq!(scrape.names("whirl_build_info"), 1);
}
