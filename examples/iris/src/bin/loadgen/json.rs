//! The report as one JSON object on one line, for scripts: serialized with serde_json from a
//! view of the report whose shape is the contract (field names, `null` for numbers that do not
//! exist).

use serde::Serialize;

use crate::report::{Report, Row};

/// The whole report.
#[derive(Serialize)]
struct Json<'a> {
    url: &'a str,
    sessions_planned: Planned,
    think_ms: u128,
    think: &'static str,
    warmup_s: Option<f64>,
    duration_s: Option<f64>,
    timeout_ms: u128,
    seed: u64,
    /// Every class, even with no sessions, so scripts can index by name.
    classes: Classes,
    total: RowJson,
}

/// The classes as one object, in report order.
struct Classes(Vec<(&'static str, RowJson)>);

impl Serialize for Classes {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(name, row)| (name, row)))
    }
}

#[derive(Serialize)]
struct Planned {
    admin: usize,
    user: usize,
    anonymous: usize,
}

/// One class (or the total).
#[derive(Serialize)]
struct RowJson {
    sessions: usize,
    requests: u64,
    status_200: u64,
    status_503: u64,
    status_other: u64,
    errors: u64,
    conn_errors: u64,
    timeouts: u64,
    malformed: u64,
    connects: u64,
    throughput_rps: Option<f64>,
    ok_rps: Option<f64>,
    p50_ms: Option<f64>,
    p90_ms: Option<f64>,
    p99_ms: Option<f64>,
    max_ms: Option<f64>,
    jain: Option<f64>,
    jain_responses: Option<f64>,
}

/// Renders the report. Numbers that do not exist (latency without responses, Jain's index
/// without data) and non-finite ones are `null`; the others are rounded to 4 decimals.
pub fn render(report: &Report) -> String {
    let classes = Classes(
        report
            .rows
            .iter()
            .map(|row| (row.name, row_json(report, row)))
            .collect(),
    );
    let json = Json {
        url: &report.url,
        sessions_planned: Planned {
            admin: report.planned[0],
            user: report.planned[1],
            anonymous: report.planned[2],
        },
        think_ms: report.think.as_millis(),
        think: if report.think_fixed {
            "fixed"
        } else {
            "exponential"
        },
        warmup_s: number(Some(report.warmup.as_secs_f64())),
        duration_s: number(Some(report.measured.as_secs_f64())),
        timeout_ms: report.timeout.as_millis(),
        seed: report.seed,
        classes,
        total: row_json(report, &report.total),
    };
    // Serializing plain structs of numbers and strings cannot fail.
    serde_json::to_string(&json).unwrap_or_default()
}

fn row_json(report: &Report, row: &Row) -> RowJson {
    let c = &row.counts;
    RowJson {
        sessions: row.sessions,
        requests: c.requests,
        status_200: c.ok,
        status_503: c.unavailable,
        status_other: c.other,
        errors: c.errors(),
        conn_errors: c.conn_errors,
        timeouts: c.timeouts,
        malformed: c.malformed,
        connects: c.connects,
        throughput_rps: number(Some(report.rate(c.responses()))),
        ok_rps: number(Some(report.rate(c.ok))),
        p50_ms: number(row.quantile_ms(0.5)),
        p90_ms: number(row.quantile_ms(0.9)),
        p99_ms: number(row.quantile_ms(0.99)),
        max_ms: number(row.max_ms()),
        jain: number(row.jain_ok),
        jain_responses: number(row.jain_responses),
    }
}

/// JSON has no NaN or infinity, so those become `null` like missing values; the rest is
/// rounded to 4 decimals.
fn number(v: Option<f64>) -> Option<f64> {
    v.filter(|v| v.is_finite())
        .map(|v| (v * 10_000.0).round() / 10_000.0 + 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_rounded_and_non_finite_ones_are_null() {
        assert_eq!(number(Some(1.5)), Some(1.5));
        assert_eq!(number(Some(2.0 / 3.0)), Some(0.6667));
        assert_eq!(number(Some(-0.0)).map(f64::to_bits), Some(0.0f64.to_bits()));
        assert_eq!(number(Some(f64::NAN)), None);
        assert_eq!(number(Some(f64::INFINITY)), None);
        assert_eq!(number(None), None);
        let text = serde_json::to_string(&RowJson {
            sessions: 1,
            requests: 2,
            status_200: 1,
            status_503: 1,
            status_other: 0,
            errors: 0,
            conn_errors: 0,
            timeouts: 0,
            malformed: 0,
            connects: 1,
            throughput_rps: Some(2.0),
            ok_rps: Some(1.0),
            p50_ms: None,
            p90_ms: None,
            p99_ms: None,
            max_ms: None,
            jain: None,
            jain_responses: None,
        })
        .expect("serializes");
        let back: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(back["p50_ms"], serde_json::Value::Null);
        assert_eq!(back["throughput_rps"], 2.0);
    }
}
