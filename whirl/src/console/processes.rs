//! The process table and the process page: `GET /api/processes` (the first `limit` live
//! processes in one order, [`Runtime::processes`](crate::Runtime::processes)) and
//! `GET /api/process/<id>` (one process in detail,
//! [`Runtime::process_info`](crate::Runtime::process_info)), as JSON (shapes in `API.md`).
//!
//! Answered by the connection process itself, on the console's worker: the walk reads a few
//! atomics per live process (about 130 ms for a million), which only the console's
//! own connections wait for.

use std::time::SystemTime;

use serde::Serialize;

use crate::control::{FailureRecord, ProcessInfo, ProcessQuery, ProcessSort};
use crate::{ProcessId, RuntimeObserver};

/// Rows a request may ask for at most.
pub(crate) const MAX_LIMIT: usize = 1000;
/// Rows when a request does not say.
const DEFAULT_LIMIT: usize = 100;

#[derive(Serialize)]
struct Row<'a> {
    id: String,
    pid: u64,
    names: &'a [String],
    #[serde(rename = "type")]
    type_name: &'static str,
    group: &'a str,
    queue_length: u64,
    turns: u64,
    handled: u64,
    failures: u64,
    idle_ms: u64,
    messages_per_second: u64,
}

impl<'a> From<&'a ProcessInfo> for Row<'a> {
    fn from(p: &'a ProcessInfo) -> Self {
        Row {
            id: p.id.to_string(),
            pid: p.id.as_u64(),
            names: &p.names,
            type_name: p.type_name,
            group: &p.group,
            queue_length: p.queue_length,
            turns: p.turns,
            handled: p.handled,
            failures: p.failures,
            idle_ms: u64::try_from(p.idle.as_millis()).unwrap_or(u64::MAX),
            messages_per_second: p.messages_per_second,
        }
    }
}

#[derive(Serialize)]
struct List<'a> {
    sort: &'static str,
    limit: usize,
    group: Option<&'a str>,
    processes: Vec<Row<'a>>,
}

#[derive(Serialize)]
struct SupervisorView {
    id: String,
    child: String,
    restarts: u64,
    failures: u64,
}

#[derive(Serialize)]
struct FailureView<'a> {
    t_ms: u64,
    process: String,
    #[serde(rename = "type")]
    type_name: &'static str,
    group: &'a str,
    reason: &'a str,
}

#[derive(Serialize)]
struct Detail<'a> {
    process: Row<'a>,
    monitors: Vec<String>,
    monitored_by: Vec<String>,
    other_watchers: usize,
    links: Vec<String>,
    supervisor: Option<SupervisorView>,
    recent_failures: Vec<FailureView<'a>>,
}

fn ids(ids: &[ProcessId]) -> Vec<String> {
    ids.iter().map(ToString::to_string).collect()
}

fn error(status: u16, message: &str) -> (u16, String) {
    let body = serde_json::json!({ "error": message }).to_string();
    (status, body)
}

/// `%XX` and `+` decoded; `None` if the result is not UTF-8.
fn decode(value: &str) -> Option<String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// `GET /api/processes?sort=&limit=&group=`.
pub(crate) fn list(observer: &RuntimeObserver, query: &str) -> (u16, String) {
    let mut sort = ProcessSort::QueueLength;
    let mut limit = DEFAULT_LIMIT;
    let mut group = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "sort" => {
                match ProcessSort::from_name(value) {
                    Some(s) => sort = s,
                    None => return error(
                        400,
                        "unknown sort: use queue, turns, handled, failures, activity, rate or id",
                    ),
                }
            }
            "limit" => match value.parse::<usize>() {
                Ok(n) => limit = n.clamp(1, MAX_LIMIT),
                Err(_) => return error(400, "limit is not a number"),
            },
            "group" => match decode(value) {
                Some(g) if !g.is_empty() => group = Some(g),
                Some(_) => {}
                None => return error(400, "group is not valid UTF-8"),
            },
            _ => {}
        }
    }
    let mut q = ProcessQuery::top(sort, limit);
    if let Some(g) = &group {
        q = q.group(g.clone());
    }
    let Some(rows) = observer.processes(&q) else {
        return error(503, "the runtime is shutting down");
    };
    let body = List {
        sort: sort.name(),
        limit,
        group: group.as_deref(),
        processes: rows.iter().map(Row::from).collect(),
    };
    (
        200,
        serde_json::to_string(&body).unwrap_or_else(|_| "{}".to_owned()),
    )
}

/// `GET /api/process/<id>`, `id` as `12` or `<12>` (or `%3C12%3E`).
pub(crate) fn detail(observer: &RuntimeObserver, id: &str, epoch: SystemTime) -> (u16, String) {
    let Some(id) = decode(id).and_then(|s| s.parse::<ProcessId>().ok()) else {
        return error(400, "not a process id");
    };
    let Some(d) = observer.process_info(id) else {
        return error(404, "no such live process");
    };
    let since = |at: SystemTime| {
        at.duration_since(epoch)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    };
    let failure = |f: &'_ FailureRecord| -> (u64, String) { (since(f.at), f.process.to_string()) };
    let body = Detail {
        process: Row::from(&d.info),
        monitors: ids(&d.monitors),
        monitored_by: ids(&d.monitored_by),
        other_watchers: d.other_watchers,
        links: ids(&d.links),
        supervisor: d.supervision.as_ref().map(|s| SupervisorView {
            id: s.supervisor.to_string(),
            child: s.child.clone(),
            restarts: s.restarts,
            failures: s.failures,
        }),
        recent_failures: d
            .recent_failures
            .iter()
            .map(|f| {
                let (t_ms, process) = failure(f);
                FailureView {
                    t_ms,
                    process,
                    type_name: f.type_name,
                    group: &f.group,
                    reason: &f.reason,
                }
            })
            .collect(),
    };
    (
        200,
        serde_json::to_string(&body).unwrap_or_else(|_| "{}".to_owned()),
    )
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn decodes_query_values() {
        assert_eq!(decode("a+b%2Fc").as_deref(), Some("a b/c"));
        assert_eq!(decode("%3C12%3E").as_deref(), Some("<12>"));
        assert_eq!(decode("%").as_deref(), Some("%"));
        assert_eq!(decode("%zz"), None);
        assert_eq!(decode("%ff"), None);
    }
}
