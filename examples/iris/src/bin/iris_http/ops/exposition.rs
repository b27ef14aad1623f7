//! The two text formats a scraper may ask `/metrics` for, and which one it gets.
//!
//! `prometheus-client` encodes OpenMetrics 1.0 text, which Prometheus asks for first (its
//! `Accept` header names `application/openmetrics-text`). Other tools (`curl`, `promtool
//! check metrics`, older scrapers) read the older Prometheus text format 0.0.4, where a
//! counter's `# HELP` and `# TYPE` name the sample (`x_total`), not the family (`x`), and
//! there is neither `# UNIT` nor `# EOF`. As Go's client library does, a scraper that does
//! not accept OpenMetrics gets 0.0.4, rewritten line by line from the OpenMetrics text by
//! [`to_prometheus_text`]: the samples are the same bytes.

/// The `Content-Type` of OpenMetrics text.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The `Content-Type` of the Prometheus text format.
pub const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Whether a request with this `Accept` header should get OpenMetrics text.
pub fn wants_openmetrics(accept: Option<&[u8]>) -> bool {
    let Some(accept) = accept else {
        return false;
    };
    String::from_utf8_lossy(accept).split(',').any(|range| {
        let mut params = range.split(';');
        let media = params.next().unwrap_or_default().trim();
        let refused = params.any(|p| {
            let p = p.trim();
            p.strip_prefix("q=")
                .and_then(|q| q.trim().parse::<f32>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        media.eq_ignore_ascii_case("application/openmetrics-text") && !refused
    })
}

/// `openmetrics` (as `prometheus-client` encodes it) in the Prometheus text format 0.0.4.
pub fn to_prometheus_text(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    // A family's `# HELP`, held until its `# TYPE` says what name it goes under.
    let mut help: Option<(&str, &str)> = None;
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, text) = rest.split_once(' ').unwrap_or((rest, ""));
            help = Some((name, text));
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (family, kind) = rest.split_once(' ').unwrap_or((rest, "unknown"));
            let (name, kind) = match kind {
                "counter" => (format!("{family}_total"), "counter"),
                "info" => (format!("{family}_info"), "gauge"),
                "stateset" => (family.to_owned(), "gauge"),
                "gauge" | "histogram" | "summary" => (family.to_owned(), kind),
                _ => (family.to_owned(), "untyped"),
            };
            if let Some((_, text)) = help.take().filter(|(of, _)| *of == family) {
                out.push_str(&format!("# HELP {name} {}\n", unescape_quotes(text)));
            }
            out.push_str(&format!("# TYPE {name} {kind}\n"));
            continue;
        }
        if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// OpenMetrics escapes `"` in help text; the older format does not (a `\"` would be read
/// as a backslash and a quote).
fn unescape_quotes(text: &str) -> String {
    text.replace("\\\"", "\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openmetrics_is_chosen_only_when_accepted() {
        let prometheus = b"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert!(wants_openmetrics(Some(prometheus)));
        assert!(!wants_openmetrics(None));
        assert!(!wants_openmetrics(Some(b"*/*")));
        assert!(!wants_openmetrics(Some(b"text/plain")));
        assert!(!wants_openmetrics(Some(
            b"application/openmetrics-text;q=0"
        )));
    }

    #[test]
    fn counters_and_infos_are_named_by_their_samples() {
        let openmetrics = "# HELP a_requests Requests \\\"served\\\".\n\
                           # TYPE a_requests counter\n\
                           a_requests_total{m=\"GET\"} 3\n\
                           # HELP a_sent Bytes.\n\
                           # TYPE a_sent counter\n\
                           # UNIT a_sent bytes\n\
                           a_sent_total 10\n\
                           # HELP b_build Build.\n\
                           # TYPE b_build info\n\
                           b_build_info{version=\"1\"} 1\n\
                           # HELP c_open Open.\n\
                           # TYPE c_open gauge\n\
                           c_open 2\n\
                           # EOF\n";
        let text = to_prometheus_text(openmetrics);
        assert_eq!(
            text,
            "# HELP a_requests_total Requests \"served\".\n\
             # TYPE a_requests_total counter\n\
             a_requests_total{m=\"GET\"} 3\n\
             # HELP a_sent_total Bytes.\n\
             # TYPE a_sent_total counter\n\
             a_sent_total 10\n\
             # HELP b_build_info Build.\n\
             # TYPE b_build_info gauge\n\
             b_build_info{version=\"1\"} 1\n\
             # HELP c_open Open.\n\
             # TYPE c_open gauge\n\
             c_open 2\n"
        );
    }
}
