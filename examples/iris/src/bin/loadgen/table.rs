//! The human-readable report: a header saying what was measured, then an aligned table.

use std::fmt::Write;

use crate::report::{Report, Row};

const COLUMNS: [&str; 17] = [
    "class", "sessions", "requests", "200", "503", "other", "conn_err", "timeout", "bad", "conns",
    "req/s", "200/s", "p50 ms", "p90 ms", "p99 ms", "max ms", "jain",
];

/// Renders the header and the table. Classes without sessions are left out of the table (the
/// JSON keeps them, so scripts see a fixed shape).
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let think = if report.think_fixed {
        format!("fixed {} ms", report.think.as_millis())
    } else {
        format!("exponential, mean {} ms", report.think.as_millis())
    };
    let [admins, users, anonymous] = report.planned;
    let _ = writeln!(
        out,
        "loadgen {}: {admins} admin + {users} user + {anonymous} anonymous sessions, closed loop, \
         think {think}",
        report.url
    );
    let _ = writeln!(
        out,
        "warm-up {:.1} s (not counted), measured {:.1} s, socket timeout {} ms, seed {}",
        report.warmup.as_secs_f64(),
        report.measured.as_secs_f64(),
        report.timeout.as_millis(),
        report.seed
    );
    out.push_str(
        "latency: request write to last body byte, for responses of any status; includes the \
         connect when the request needed a (re)connect; errors excluded; logins not counted\n",
    );
    out.push_str(
        "jain: fairness of per-session 200 counts within the class (total: across all \
         sessions); exponential think time alone gives about m/(m+1) for m per session\n",
    );
    out.push('\n');

    let mut rows: Vec<Vec<String>> = vec![COLUMNS.iter().map(|c| c.to_string()).collect()];
    for row in report.all_rows() {
        if row.sessions > 0 || row.name == "total" {
            rows.push(cells(report, row));
        }
    }
    let widths: Vec<usize> = (0..COLUMNS.len())
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    for r in &rows {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            if i == 0 {
                let _ = write!(line, "{cell:<w$}", w = widths[i]);
            } else {
                let _ = write!(line, "  {cell:>w$}", w = widths[i]);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn cells(report: &Report, row: &Row) -> Vec<String> {
    let c = &row.counts;
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
    vec![
        row.name.to_string(),
        row.sessions.to_string(),
        c.requests.to_string(),
        c.ok.to_string(),
        c.unavailable.to_string(),
        c.other.to_string(),
        c.conn_errors.to_string(),
        c.timeouts.to_string(),
        c.malformed.to_string(),
        c.connects.to_string(),
        format!("{:.1}", report.rate(c.responses())),
        format!("{:.1}", report.rate(c.ok)),
        ms(row.quantile_ms(0.5)),
        ms(row.quantile_ms(0.9)),
        ms(row.quantile_ms(0.99)),
        ms(row.max_ms()),
        row.jain_ok.map_or("-".to_string(), |j| format!("{j:.3}")),
    ]
}
