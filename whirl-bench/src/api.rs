//! The console's JSON bodies (`whirl-console/API.md`, section "Benchmarks") and a handler
//! answering the two endpoints.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::{Error, Figure, Result, RunId, Store, DEFAULT_THRESHOLD_PCT};

/// The path of the run history endpoint.
pub const RUNS_PATH: &str = "/api/bench/runs";
/// The path of the comparison endpoint (`?a=ID&b=ID&threshold=PCT`).
pub const COMPARE_PATH: &str = "/api/bench/compare";

#[derive(Serialize)]
struct RunsBody<'a> {
    runs: Vec<RunBody<'a>>,
}

#[derive(Serialize)]
struct RunBody<'a> {
    id: RunId,
    commit: &'a str,
    machine: String,
    date: &'a str,
    suite: &'a str,
    figures: &'a [Figure],
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: &'a str,
}

/// The body of `GET /api/bench/runs`: every run with its figures, oldest first.
///
/// ```json
/// { "runs": [ { "id": 3, "commit": "997878d", "machine": "host (2 cpus)",
///               "date": "2026-11-26T03:00:00Z", "suite": "bench quick",
///               "figures": [ { "name": "ping-pong whirl/tokio", "value": 2.4, "unit": "x",
///                              "higher_is_better": true } ] } ] }
/// ```
pub fn runs_json(store: &Store) -> Result<String> {
    let runs = store.runs()?;
    let body = RunsBody {
        runs: runs
            .iter()
            .map(|run| RunBody {
                id: run.id,
                commit: &run.meta.commit,
                machine: run.meta.machine_label(),
                date: &run.meta.date,
                suite: &run.meta.suite,
                figures: &run.figures,
            })
            .collect(),
    };
    Ok(serde_json::to_string(&body)?)
}

/// The body of `GET /api/bench/compare?a=&b=&threshold=`: the serialized
/// [`Comparison`](crate::Comparison) of `b` against `a`.
///
/// ```json
/// { "a": { "id": 1, "commit": "...", "date": "..." }, "b": { "id": 3, "commit": "...", "date": "..." },
///   "threshold_pct": 5.0,
///   "rows": [ { "name": "ping-pong whirl/tokio", "unit": "x", "higher_is_better": true,
///               "a": 2.4, "b": 2.1, "change_pct": -12.5, "regression": true } ],
///   "regressions": 1 }
/// ```
///
/// `change_pct` is `null` when the figure was 0 in run `a` and is not in run `b`.
pub fn compare_json(store: &Store, a: RunId, b: RunId, threshold_pct: f64) -> Result<String> {
    Ok(serde_json::to_string(&store.compare(
        a,
        b,
        threshold_pct,
    )?)?)
}

/// `{"error": message}`.
fn error_body(message: &str) -> String {
    serde_json::to_string(&ErrorBody { error: message })
        .unwrap_or_else(|_| r#"{"error":"error"}"#.to_owned())
}

/// Answers the console's two benchmark endpoints from a history database.
///
/// Built from a path ([`Api::new`]), it opens the database for each request and closes it
/// after: nothing is shared between threads or held open, so it is cheap to create, even per
/// request, and always shows what `whirl-bench record` has written so far. A missing file
/// reads as an empty history (and is not created). Built from a [`Store`]
/// ([`Api::from_store`], [`Api::shared`]), it uses that store's one connection, whose mutex
/// serializes concurrent requests.
///
/// ```no_run
/// use whirl_bench::Api;
///
/// let api = Api::new("bench-history.sqlite");
/// // In the server, for every GET request: path without the query, query without the '?'.
/// let route = move |path: &str, query: &str| api.handle(path, query);
/// if let Some((status, json)) = route("/api/bench/compare", "a=1&b=2&threshold=5") {
///     println!("{status} {json}");
/// }
/// ```
#[derive(Clone, Debug)]
pub struct Api {
    source: Source,
}

#[derive(Clone, Debug)]
enum Source {
    Path(PathBuf),
    Store(Arc<Store>),
}

impl Api {
    /// A handler opening the database file at `path` for each request.
    pub fn new(path: impl AsRef<Path>) -> Self {
        Api {
            source: Source::Path(path.as_ref().to_path_buf()),
        }
    }

    /// A handler owning `store`.
    pub fn from_store(store: Store) -> Self {
        Self::shared(Arc::new(store))
    }

    /// A handler sharing `store` with other users.
    pub fn shared(store: Arc<Store>) -> Self {
        Api {
            source: Source::Store(store),
        }
    }

    fn with_store<T>(&self, f: impl FnOnce(&Store) -> Result<T>) -> Result<T> {
        match &self.source {
            Source::Store(store) => f(store),
            Source::Path(path) if !path.exists() => f(&Store::open_in_memory()?),
            Source::Path(path) => f(&Store::open(path)?),
        }
    }

    /// Answers a `GET` for `path` with the query string `query` (without the `?`; a leading
    /// `?` is tolerated, and a query left on `path` is split off) with `(status, JSON body)`,
    /// or `None` when `path` is not one of [`RUNS_PATH`] and [`COMPARE_PATH`].
    ///
    /// - `/api/bench/runs`: `200` with [`runs_json`].
    /// - `/api/bench/compare?a=ID&b=ID&threshold=PCT` (threshold in percent, default 5):
    ///   `200` with [`compare_json`]; `400` when `a` or `b` is missing or not an integer, or
    ///   the threshold is not a number `>= 0`; `404` when a run does not exist.
    /// - `500` when the database fails (or cannot be opened).
    ///
    /// Every error body is `{"error": "..."}`. Other query parameters (`token`) are ignored.
    pub fn handle(&self, path: &str, query: &str) -> Option<(u16, String)> {
        let (path, query) = match path.split_once('?') {
            Some((p, q)) => (p, q),
            None => (path, query.strip_prefix('?').unwrap_or(query)),
        };
        let result = match path {
            RUNS_PATH => self.with_store(runs_json),
            COMPARE_PATH => match parse_compare_query(query) {
                Ok((a, b, threshold)) => {
                    self.with_store(|store| compare_json(store, a, b, threshold))
                }
                Err(message) => return Some((400, error_body(&message))),
            },
            _ => return None,
        };
        Some(match result {
            Ok(body) => (200, body),
            Err(e @ Error::NoSuchRun(_)) => (404, error_body(&e.to_string())),
            Err(e @ Error::InvalidThreshold(_)) => (400, error_body(&e.to_string())),
            Err(e) => (500, error_body(&e.to_string())),
        })
    }
}

/// `a=ID&b=ID[&threshold=PCT]` -> `(a, b, threshold)`, or a message for a `400`.
fn parse_compare_query(query: &str) -> std::result::Result<(RunId, RunId, f64), String> {
    let param = |key: &str| {
        query
            .split('&')
            .map(|pair| pair.split_once('=').unwrap_or((pair, "")))
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    };
    let id = |key: &str| match param(key) {
        None | Some("") => Err(format!("missing run id `{key}`")),
        Some(v) => v
            .parse::<RunId>()
            .map_err(|_| format!("run id `{key}` is not an integer: {v:?}")),
    };
    let (a, b) = (id("a")?, id("b")?);
    let threshold = match param("threshold") {
        None | Some("") => DEFAULT_THRESHOLD_PCT,
        Some(v) => match v.parse::<f64>() {
            Ok(t) if t.is_finite() && t >= 0.0 => t,
            _ => return Err(format!("threshold is not a percentage >= 0: {v:?}")),
        },
    };
    Ok((a, b, threshold))
}
