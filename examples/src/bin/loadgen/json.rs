//! The report as one JSON object on one line, written by hand: the shape is fixed and small,
//! so a serialization dependency would buy nothing.

use std::fmt::Write;

use crate::report::{Report, Row};

/// Renders the report. Every class appears, even with no sessions, so scripts can index by
/// name; numbers that do not exist (latency without responses, Jain's index without data) are
/// `null`.
pub fn render(report: &Report) -> String {
    let mut out = String::from("{");
    let _ = write!(
        out,
        "\"url\":{},\"sessions_planned\":{{\"admin\":{},\"user\":{},\"anonymous\":{}}},\
         \"think_ms\":{},\"think\":\"{}\",\"warmup_s\":{},\"duration_s\":{},\"timeout_ms\":{},\
         \"seed\":{},",
        string(&report.url),
        report.planned[0],
        report.planned[1],
        report.planned[2],
        report.think.as_millis(),
        if report.think_fixed {
            "fixed"
        } else {
            "exponential"
        },
        number(Some(report.warmup.as_secs_f64())),
        number(Some(report.measured.as_secs_f64())),
        report.timeout.as_millis(),
        report.seed,
    );
    out.push_str("\"classes\":{");
    for (i, row) in report.rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{}:", string(row.name));
        row_object(&mut out, report, row);
    }
    out.push_str("},\"total\":");
    row_object(&mut out, report, &report.total);
    out.push('}');
    out
}

fn row_object(out: &mut String, report: &Report, row: &Row) {
    let c = &row.counts;
    let _ = write!(
        out,
        "{{\"sessions\":{},\"requests\":{},\"status_200\":{},\"status_503\":{},\
         \"status_other\":{},\"errors\":{},\"conn_errors\":{},\"timeouts\":{},\"malformed\":{},\
         \"connects\":{},\"throughput_rps\":{},\"ok_rps\":{},\"p50_ms\":{},\"p90_ms\":{},\
         \"p99_ms\":{},\"max_ms\":{},\"jain\":{},\"jain_responses\":{}}}",
        row.sessions,
        c.requests,
        c.ok,
        c.unavailable,
        c.other,
        c.errors(),
        c.conn_errors,
        c.timeouts,
        c.malformed,
        c.connects,
        number(Some(report.rate(c.responses()))),
        number(Some(report.rate(c.ok))),
        number(row.quantile_ms(0.5)),
        number(row.quantile_ms(0.9)),
        number(row.quantile_ms(0.99)),
        number(row.max_ms()),
        number(row.jain_ok),
        number(row.jain_responses),
    );
}

/// JSON has no NaN or infinity, so those become `null` like missing values.
fn number(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => {
            let s = format!("{v:.4}");
            let s = s.trim_end_matches('0').trim_end_matches('.');
            if s == "-0" {
                "0".to_string()
            } else {
                s.to_string()
            }
        }
        _ => "null".to_string(),
    }
}

fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_strings_are_valid_json() {
        assert_eq!(number(Some(1.5)), "1.5");
        assert_eq!(number(Some(2.0)), "2");
        assert_eq!(number(Some(0.0)), "0");
        assert_eq!(number(Some(f64::NAN)), "null");
        assert_eq!(number(None), "null");
        assert_eq!(string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }
}
