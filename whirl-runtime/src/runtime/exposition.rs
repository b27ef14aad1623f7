//! The two text formats a Prometheus scraper may ask for, and the conversion between them.
//!
//! `prometheus-client` encodes OpenMetrics: counter families are named without their
//! `_total` suffix, `info` is a type, units have `# UNIT` lines, and the text ends with
//! `# EOF`. Prometheus itself asks for that format (its `Accept` header names
//! `application/openmetrics-text`), but `promtool check metrics`, `curl` and older scrapers
//! read the classic text format (`text/plain; version=0.0.4`), where a family's `# HELP` and
//! `# TYPE` name its samples exactly and `info` does not exist. [`Format::negotiate`] picks
//! the format from the request's `Accept` header, as the official client libraries do, and
//! [`encode`] writes either; the classic text is the OpenMetrics text with the family lines
//! renamed (counters get `_total`, an `info` family becomes the gauge `<name>_info`) and the
//! lines the classic format does not have dropped (`# UNIT`, `# EOF`, exemplars).

use std::fmt;

use prometheus_client::registry::Registry;

/// A text format of the Prometheus exposition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0 text, what Prometheus asks for.
    OpenMetrics,
    /// The classic Prometheus text format 0.0.4, what `promtool check metrics` reads.
    Classic,
}

impl Format {
    /// The format a request's `Accept` header asks for: OpenMetrics when it names
    /// `application/openmetrics-text`, the classic text format otherwise (no header, `*/*`,
    /// `text/plain`).
    pub fn negotiate(accept: Option<&str>) -> Format {
        let asks = accept.is_some_and(|a| {
            a.split(',').any(|range| {
                let mut parts = range.split(';').map(str::trim);
                let wanted = parts
                    .next()
                    .is_some_and(|m| m.eq_ignore_ascii_case("application/openmetrics-text"));
                // `q=0` declines the type.
                wanted && !parts.any(|p| p.replace(' ', "") == "q=0")
            })
        });
        if asks {
            Format::OpenMetrics
        } else {
            Format::Classic
        }
    }

    /// The `Content-Type` of a response in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Classic => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// Encodes `registry` in `format`. Fails only if a collector fails.
pub fn encode(registry: &Registry, format: Format) -> Result<String, fmt::Error> {
    let mut open_metrics = String::new();
    prometheus_client::encoding::text::encode(&mut open_metrics, registry)?;
    Ok(match format {
        Format::OpenMetrics => open_metrics,
        Format::Classic => classic(&open_metrics),
    })
}

/// The classic text format of OpenMetrics text (see the module docs).
fn classic(open_metrics: &str) -> String {
    let mut out = String::with_capacity(open_metrics.len());
    // A family's `# HELP` comes before its `# TYPE`, which decides the family's name.
    let mut help: Option<(&str, &str)> = None;
    for line in open_metrics.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            help = Some(rest.split_once(' ').unwrap_or((rest, "")));
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "untyped"));
            let (name, kind) = match kind {
                "counter" => (format!("{name}_total"), "counter"),
                "info" => (format!("{name}_info"), "gauge"),
                "gauge" | "histogram" | "summary" => (name.to_owned(), kind),
                _ => (name.to_owned(), "untyped"),
            };
            if let Some((_, text)) = help.take() {
                out.push_str(&format!("# HELP {name} {}\n", text.replace("\\\"", "\"")));
            }
            out.push_str(&format!("# TYPE {name} {kind}\n"));
            continue;
        }
        if line.starts_with('#') {
            // `# UNIT`, `# EOF`: not in the classic format.
            continue;
        }
        // A sample, without its exemplar if it has one.
        out.push_str(line.split_once(" # ").map_or(line, |(sample, _)| sample));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_gets_open_metrics_and_everyone_else_the_classic_text() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                          version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Format::negotiate(Some(prometheus)), Format::OpenMetrics);
        assert_eq!(Format::negotiate(None), Format::Classic);
        assert_eq!(Format::negotiate(Some("*/*")), Format::Classic);
        assert_eq!(Format::negotiate(Some("text/plain")), Format::Classic);
        assert_eq!(
            Format::negotiate(Some("application/openmetrics-text; q=0, text/plain")),
            Format::Classic
        );
    }

    #[test]
    fn the_classic_text_names_families_by_their_samples() {
        let open = "# HELP a_requests Requests \\\"served\\\".\n# TYPE a_requests counter\n\
                    a_requests_total{code=\"2xx\"} 3 # {trace=\"x\"} 1.0\n\
                    # HELP a_build The build.\n# TYPE a_build info\na_build_info{version=\"1\"} 1\n\
                    # HELP a_wait Waits.\n# TYPE a_wait histogram\n# UNIT a_wait seconds\n\
                    a_wait_sum 0.5\na_wait_count 2\na_wait_bucket{le=\"+Inf\"} 2\n# EOF\n";
        assert_eq!(
            classic(open),
            "# HELP a_requests_total Requests \"served\".\n# TYPE a_requests_total counter\n\
             a_requests_total{code=\"2xx\"} 3\n\
             # HELP a_build_info The build.\n# TYPE a_build_info gauge\na_build_info{version=\"1\"} 1\n\
             # HELP a_wait Waits.\n# TYPE a_wait histogram\n\
             a_wait_sum 0.5\na_wait_count 2\na_wait_bucket{le=\"+Inf\"} 2\n"
        );
    }
}
