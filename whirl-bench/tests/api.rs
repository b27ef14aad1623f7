//! The console's JSON bodies (whirl-console/API.md, "Benchmarks") and the route handler.

use std::sync::Arc;

use serde_json::Value;
use whirl_bench::{compare_json, runs_json, Api, Figure, RunId, RunMeta, Store};

fn store_with_two_runs() -> Store {
    let store = Store::open_in_memory().unwrap();
    let meta = |commit: &str, date: &str| RunMeta {
        commit: commit.into(),
        dirty: commit == "bbbbbbb",
        machine: "host".into(),
        cpus: 2,
        date: date.into(),
        suite: "bench quick".into(),
    };
    store
        .record(
            &meta("aaaaaaa", "2026-11-26T03:00:00Z"),
            &[
                Figure::new("ping-pong whirl/tokio", 2.4, "x", true),
                Figure::new("memory whirl", 300.0, "B/proc", false),
                Figure::new("only in a", 1.0, "x", true),
            ],
        )
        .unwrap();
    store
        .record(
            &meta("bbbbbbb", "2026-11-27T03:00:00Z"),
            &[
                Figure::new("ping-pong whirl/tokio", 2.1, "x", true),
                Figure::new("memory whirl", 290.0, "B/proc", false),
            ],
        )
        .unwrap();
    store
}

fn keys(v: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = v
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

#[test]
fn runs_body_matches_the_api() {
    let store = store_with_two_runs();
    let body: Value = serde_json::from_str(&runs_json(&store).unwrap()).unwrap();
    assert_eq!(keys(&body), ["runs"]);
    let runs = body["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let run = &runs[0];
    assert_eq!(
        keys(run),
        ["commit", "date", "figures", "id", "machine", "suite"]
    );
    assert_eq!(run["id"], 1);
    assert_eq!(runs[1]["id"], 2, "oldest first");
    assert_eq!(run["commit"], "aaaaaaa");
    assert_eq!(run["machine"], "host (2 cpus)");
    assert_eq!(run["date"], "2026-11-26T03:00:00Z");
    assert_eq!(run["suite"], "bench quick");
    let figure = &run["figures"][0];
    assert_eq!(keys(figure), ["higher_is_better", "name", "unit", "value"]);
    assert_eq!(figure["name"], "ping-pong whirl/tokio");
    assert_eq!(figure["value"], 2.4);
    assert_eq!(figure["unit"], "x");
    assert_eq!(figure["higher_is_better"], true);
    assert_eq!(run["figures"].as_array().unwrap().len(), 3);

    let empty = Store::open_in_memory().unwrap();
    assert_eq!(runs_json(&empty).unwrap(), r#"{"runs":[]}"#);
}

#[test]
fn compare_body_matches_the_api() {
    let store = store_with_two_runs();
    let body: Value =
        serde_json::from_str(&compare_json(&store, RunId(1), RunId(2), 5.0).unwrap()).unwrap();
    assert_eq!(
        keys(&body),
        ["a", "b", "regressions", "rows", "threshold_pct"]
    );
    assert_eq!(keys(&body["a"]), ["commit", "date", "id"]);
    assert_eq!(body["a"]["id"], 1);
    assert_eq!(body["a"]["commit"], "aaaaaaa");
    assert_eq!(body["a"]["date"], "2026-11-26T03:00:00Z");
    assert_eq!(keys(&body["b"]), ["commit", "date", "id"]);
    assert_eq!(body["b"]["id"], 2);
    assert!(body["threshold_pct"].is_f64());
    assert_eq!(body["threshold_pct"], 5.0);
    let rows = body["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "the figure only in run a is left out");
    let row = &rows[0];
    assert_eq!(
        keys(row),
        [
            "a",
            "b",
            "change_pct",
            "higher_is_better",
            "name",
            "regression",
            "unit"
        ]
    );
    assert_eq!(row["name"], "ping-pong whirl/tokio");
    assert_eq!(row["unit"], "x");
    assert_eq!(row["higher_is_better"], true);
    assert_eq!(row["a"], 2.4);
    assert_eq!(row["b"], 2.1);
    assert!((row["change_pct"].as_f64().unwrap() + 12.5).abs() < 1e-9);
    assert_eq!(row["regression"], true);
    assert_eq!(rows[1]["regression"], false, "less memory is better");
    assert_eq!(body["regressions"], 1);
}

#[test]
fn api_routes_and_status_codes() {
    let store = Arc::new(store_with_two_runs());
    let api = Api::shared(store.clone());
    let status = |path: &str, query: &str| api.handle(path, query).map(|(s, _)| s);

    let (code, body) = api.handle("/api/bench/runs", "").unwrap();
    assert_eq!(code, 200);
    assert_eq!(body, runs_json(&store).unwrap());
    assert_eq!(status("/api/bench/runs", "token=secret"), Some(200));

    let (code, body) = api
        .handle("/api/bench/compare", "a=1&b=2&threshold=5")
        .unwrap();
    assert_eq!(code, 200);
    assert_eq!(body, compare_json(&store, RunId(1), RunId(2), 5.0).unwrap());
    // The threshold defaults to 5; a leading '?', a query left on the path, other
    // parameters and any order are fine.
    let default: Value = serde_json::from_str(
        &api.handle("/api/bench/compare", "?b=2&token=t&a=1")
            .unwrap()
            .1,
    )
    .unwrap();
    assert_eq!(default["threshold_pct"], 5.0);
    assert_eq!(status("/api/bench/compare?a=1&b=2", ""), Some(200));
    let wide: Value = serde_json::from_str(
        &api.handle("/api/bench/compare", "a=1&b=2&threshold=20")
            .unwrap()
            .1,
    )
    .unwrap();
    assert_eq!(wide["regressions"], 0);

    for bad in [
        "",
        "a=1",
        "b=2",
        "a=&b=2",
        "a=x&b=2",
        "a=1&b=2.5",
        "a=1&b=2&threshold=-1",
        "a=1&b=2&threshold=abc",
        "a=1&b=2&threshold=NaN",
        "a=1&b=2&threshold=inf",
    ] {
        let (code, body) = api.handle("/api/bench/compare", bad).unwrap();
        assert_eq!(code, 400, "{bad:?}");
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(keys(&body), ["error"], "{bad:?}");
        assert!(body["error"].as_str().is_some_and(|e| !e.is_empty()));
    }

    let (code, body) = api.handle("/api/bench/compare", "a=1&b=7").unwrap();
    assert_eq!(code, 404);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(keys(&body), ["error"]);
    assert!(body["error"].as_str().unwrap().contains('7'));
    assert_eq!(status("/api/bench/compare", "a=0&b=2"), Some(404));

    assert_eq!(status("/api/snapshot", ""), None);
    assert_eq!(status("/api/bench", ""), None);
    assert_eq!(status("/api/bench/runs/", ""), None);
    assert_eq!(status("/", ""), None);
}

#[test]
fn api_from_a_path_opens_the_file_per_request() {
    let dir = std::env::temp_dir().join(format!(
        "whirl-bench-api-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("history.sqlite");

    // No file yet: an empty history, and no file created.
    let api = Api::new(&path);
    assert_eq!(
        api.handle("/api/bench/runs", ""),
        Some((200, r#"{"runs":[]}"#.to_owned()))
    );
    assert_eq!(
        api.handle("/api/bench/compare", "a=1&b=2").map(|(s, _)| s),
        Some(404)
    );
    assert!(!path.exists());

    // Runs recorded by another connection (`whirl-bench record`) show up at once.
    let writer = Store::open(&path).unwrap();
    let meta = RunMeta {
        commit: "aaaaaaa".into(),
        dirty: false,
        machine: "host".into(),
        cpus: 1,
        date: "2026-11-26T03:00:00Z".into(),
        suite: "bench quick".into(),
    };
    writer
        .record(&meta, &[Figure::new("x", 2.0, "x", true)])
        .unwrap();
    writer
        .record(&meta, &[Figure::new("x", 1.0, "x", true)])
        .unwrap();
    let (code, body) = api.handle("/api/bench/runs", "").unwrap();
    assert_eq!(code, 200);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["runs"].as_array().unwrap().len(), 2);
    assert_eq!(body["runs"][0]["machine"], "host (1 cpu)");
    let (code, body) = api
        .handle("/api/bench/compare", "a=1&b=2&threshold=10")
        .unwrap();
    assert_eq!(code, 200);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["regressions"], 1);
    assert_eq!(body["threshold_pct"], 10.0);
    drop(writer);
    let _ = std::fs::remove_dir_all(&dir);
}
