//! iris_http's own metrics, and the one registry `/metrics` encodes.
//!
//! Every label has a bounded set of values, so that no client can grow the number of series:
//! requests are counted by method class (`GET`, `HEAD`, `POST`, `other`) and status class
//! (`1xx` ... `5xx`, `other`), never by path or exact status. The handles are
//! `prometheus-client`'s atomics: updating one is an atomic add, no lock, from whichever
//! process answers.
//!
//! | metric | type | what |
//! |---|---|---|
//! | `iris_http_requests_total{method,status}` | counter | answers written |
//! | `iris_http_requests_in_flight` | gauge | requests received and not yet answered |
//! | `iris_http_connections_open` | gauge | HTTP connections open |
//! | `iris_http_h2_connections_open` | gauge | of those, HTTP/2 connections |
//! | `iris_http_h2_calm_goaways_total` | counter | HTTP/2 connections ended with `GOAWAY` `ENHANCE_YOUR_CALM` (rapid reset, CONTINUATION or header floods) |
//! | `iris_http_sent_bytes_total` | counter | bytes of answers (heads and bodies) written |
//! | `iris_http_request_duration_seconds` | histogram | request received to answer written |
//! | `iris_http_access_log_dropped_lines_total` | counter | access-log lines lost (writer behind) |
//! | `iris_http_draining` | gauge | 1 once a drain has begun |
//! | `iris_http_reloads_total{what,result}` | counter | SIGHUP reloads of the configuration and the certificate, `ok` or `failed` |
//!
//! [`Metrics::registry`] is the one place the registry is built: these, and the runtime's
//! own (`whirl::prometheus::register`: each group's counters, queue and handling-time
//! histograms, per-class counts, `process_*`, `whirl_build_info`), read at scrape time.

use std::fmt::Write as _;
use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};
use whirl::Runtime;
use whirl_http::Method;

/// A request's method, as counted: the three the site serves, and the rest.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, whirl::Isolated)]
pub enum MethodClass {
    Get,
    Head,
    Post,
    Other,
}

impl MethodClass {
    pub const ALL: [MethodClass; 4] = [
        MethodClass::Get,
        MethodClass::Head,
        MethodClass::Post,
        MethodClass::Other,
    ];

    pub fn of(method: &Method) -> MethodClass {
        match method {
            Method::Get => MethodClass::Get,
            Method::Head => MethodClass::Head,
            Method::Post => MethodClass::Post,
            _ => MethodClass::Other,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            MethodClass::Get => "GET",
            MethodClass::Head => "HEAD",
            MethodClass::Post => "POST",
            MethodClass::Other => "other",
        }
    }
}

impl EncodeLabelValue for MethodClass {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        encoder.write_str(self.as_str())
    }
}

/// A status code's class: its first digit.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub struct StatusClass(u8);

impl StatusClass {
    /// `1xx` to `5xx`; anything else (which the server never sends) is `other`.
    pub fn of(status: u16) -> StatusClass {
        match status {
            100..=599 => StatusClass(u8::try_from(status / 100).unwrap_or(0)),
            _ => StatusClass(0),
        }
    }
}

impl EncodeLabelValue for StatusClass {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        match self.0 {
            0 => encoder.write_str("other"),
            digit => write!(encoder, "{digit}xx"),
        }
    }
}

/// The labels of `iris_http_requests_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub method: MethodClass,
    pub status: StatusClass,
}

/// What a reload reloaded.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Reloadable {
    Config,
    Certificate,
}

impl EncodeLabelValue for Reloadable {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        encoder.write_str(match self {
            Reloadable::Config => "config",
            Reloadable::Certificate => "certificate",
        })
    }
}

/// How a reload went.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Failed,
}

impl EncodeLabelValue for Outcome {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        encoder.write_str(match self {
            Outcome::Ok => "ok",
            Outcome::Failed => "failed",
        })
    }
}

/// The labels of `iris_http_reloads_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReloadLabels {
    pub what: Reloadable,
    pub result: Outcome,
}

/// iris_http's metrics (see the module documentation). Cloning shares them.
#[derive(Clone, Debug)]
pub struct Metrics {
    pub requests: Family<RequestLabels, Counter>,
    pub in_flight: Gauge,
    pub connections: Gauge,
    pub h2_connections: Gauge,
    pub h2_calm_goaways: Counter,
    pub sent_bytes: Counter,
    pub duration: Histogram,
    pub access_log_dropped: Counter,
    pub draining: Gauge,
    pub reloads: Family<ReloadLabels, Counter>,
}

impl Metrics {
    /// Fresh metrics; `access_log_dropped` is the access log's own count of lost lines
    /// (a fresh counter when there is no access log).
    pub fn new(access_log_dropped: Counter) -> Metrics {
        let metrics = Metrics {
            requests: Family::default(),
            in_flight: Gauge::default(),
            connections: Gauge::default(),
            h2_connections: Gauge::default(),
            h2_calm_goaways: Counter::default(),
            sent_bytes: Counter::default(),
            // 100 µs to 6.5 s, doubling.
            duration: Histogram::new(exponential_buckets(0.0001, 2.0, 17)),
            access_log_dropped,
            draining: Gauge::default(),
            reloads: Family::default(),
        };
        // Every series exists from the start, at zero: a rate over a series that appears
        // with its first event misses that event.
        for method in MethodClass::ALL {
            for digit in 1..=5 {
                let status = StatusClass(digit);
                drop(
                    metrics
                        .requests
                        .get_or_create(&RequestLabels { method, status }),
                );
            }
        }
        for what in [Reloadable::Config, Reloadable::Certificate] {
            for result in [Outcome::Ok, Outcome::Failed] {
                drop(
                    metrics
                        .reloads
                        .get_or_create(&ReloadLabels { what, result }),
                );
            }
        }
        metrics
    }

    /// Counts an answer written: `bytes` of it, `took` since its request was received.
    pub fn answered(&self, method: MethodClass, status: u16, bytes: u64, took: Duration) {
        let status = StatusClass::of(status);
        self.requests
            .get_or_create(&RequestLabels { method, status })
            .inc();
        self.sent_bytes.inc_by(bytes);
        self.duration.observe(took.as_secs_f64());
    }

    /// Counts a reload of `what`.
    pub fn reloaded(&self, what: Reloadable, result: Outcome) {
        self.reloads
            .get_or_create(&ReloadLabels { what, result })
            .inc();
    }

    /// The registry `/metrics` encodes: these metrics under `iris_http_`, and `rt`'s. Built
    /// once, when the server starts.
    pub fn registry(&self, rt: &Runtime) -> Registry {
        let mut registry = Registry::default();
        whirl::prometheus::register(&mut registry, rt);
        let iris = registry.sub_registry_with_prefix("iris_http");
        iris.register(
            "requests",
            "HTTP answers written, by method class and status class",
            self.requests.clone(),
        );
        iris.register(
            "requests_in_flight",
            "Requests received and not yet answered",
            self.in_flight.clone(),
        );
        iris.register(
            "connections_open",
            "HTTP connections open",
            self.connections.clone(),
        );
        iris.register(
            "h2_connections_open",
            "HTTP/2 connections open (of iris_http_connections_open)",
            self.h2_connections.clone(),
        );
        iris.register(
            "h2_calm_goaways",
            "HTTP/2 connections ended with GOAWAY ENHANCE_YOUR_CALM (rapid reset, CONTINUATION or header floods)",
            self.h2_calm_goaways.clone(),
        );
        iris.register_with_unit(
            "sent",
            "Bytes of answers written, heads and bodies",
            Unit::Bytes,
            self.sent_bytes.clone(),
        );
        iris.register_with_unit(
            "request_duration",
            "From a request received whole to its answer written",
            Unit::Seconds,
            self.duration.clone(),
        );
        iris.register(
            "access_log_dropped_lines",
            "Access-log lines lost because the writer fell behind or could not write",
            self.access_log_dropped.clone(),
        );
        iris.register(
            "draining",
            "1 once the server has begun draining (SIGTERM or SIGINT), else 0",
            self.draining.clone(),
        );
        iris.register(
            "reloads",
            "Reloads on SIGHUP, of the configuration and of the certificate, by result",
            self.reloads.clone(),
        );
        registry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_has_every_metric_with_bounded_labels() {
        let metrics = Metrics::new(Counter::default());
        metrics.answered(MethodClass::Get, 200, 120, Duration::from_micros(1500));
        metrics.answered(MethodClass::Other, 405, 80, Duration::from_micros(10));
        metrics.reloaded(Reloadable::Certificate, Outcome::Failed);
        let rt = Runtime::new();
        let registry = metrics.registry(&rt);
        let text = whirl::prometheus::encode(&registry, whirl::prometheus::Format::OpenMetrics)
            .expect("encodes");
        rt.shutdown_timeout(Duration::from_secs(1));
        for line in [
            "# TYPE iris_http_requests counter",
            "iris_http_requests_total{method=\"GET\",status=\"2xx\"} 1",
            "iris_http_requests_total{method=\"other\",status=\"4xx\"} 1",
            "iris_http_requests_total{method=\"POST\",status=\"5xx\"} 0",
            "iris_http_sent_bytes_total 200",
            "# TYPE iris_http_request_duration_seconds histogram",
            "iris_http_request_duration_seconds_count 2",
            "iris_http_reloads_total{what=\"certificate\",result=\"failed\"} 1",
            "iris_http_reloads_total{what=\"config\",result=\"ok\"} 0",
            "iris_http_access_log_dropped_lines_total 0",
            "iris_http_draining 0",
            "iris_http_connections_open 0",
            "iris_http_requests_in_flight 0",
            "# TYPE whirl_build info",
            "# EOF",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "no line `{line}` in:\n{text}"
            );
        }
    }

    #[test]
    fn status_classes_are_first_digits() {
        let class = |status| {
            let mut text = String::new();
            let labels = RequestLabels {
                method: MethodClass::Head,
                status: StatusClass::of(status),
            };
            let family: Family<RequestLabels, Counter> = Family::default();
            family.get_or_create(&labels).inc();
            let mut registry = Registry::default();
            registry.register("r", "r", family);
            prometheus_client::encoding::text::encode(&mut text, &registry).expect("encodes");
            text
        };
        assert!(class(101).contains("status=\"1xx\""));
        assert!(class(304).contains("status=\"3xx\""));
        assert!(class(599).contains("status=\"5xx\""));
        assert!(class(600).contains("status=\"other\""));
        assert!(class(42).contains("status=\"other\""));
    }
}
