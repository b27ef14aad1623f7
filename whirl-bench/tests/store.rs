//! The store: recording, listing, comparing, reopening.

use std::path::PathBuf;

use whirl_bench::{Error, Figure, RunId, RunMeta, Store, SCHEMA_VERSION};

fn meta(commit: &str, date: &str) -> RunMeta {
    RunMeta {
        commit: commit.into(),
        dirty: false,
        machine: "host".into(),
        cpus: 2,
        date: date.into(),
        suite: "bench quick".into(),
    }
}

/// Rates (higher better), a memory figure (lower better), a ratio, and one figure per run
/// that the other lacks.
fn two_runs(store: &Store) -> (RunId, RunId) {
    let a = store
        .record(
            &meta("aaaaaaa", "2026-11-26T03:00:00Z"),
            &[
                Figure::new("ping-pong whirl", 1_000_000.0, "msgs/s", true),
                Figure::new("counting whirl", 2_000_000.0, "msgs/s", true),
                Figure::new("memory whirl", 300.0, "B/proc", false),
                Figure::new("peak RSS whirl", 100.0, "MiB", false),
                Figure::new("ping-pong whirl/tokio", 2.4, "x", true),
                Figure::new("only in a", 1.0, "x", true),
            ],
        )
        .expect("record a");
    let b = store
        .record(
            &meta("bbbbbbb", "2026-11-27T03:00:00Z"),
            &[
                // -12.5 %: a regression at 5 %, not at 15 %.
                Figure::new("ping-pong whirl/tokio", 2.1, "x", true),
                // +10 %: higher is better, an improvement.
                Figure::new("ping-pong whirl", 1_100_000.0, "msgs/s", true),
                // -2 %: within the threshold.
                Figure::new("counting whirl", 1_960_000.0, "msgs/s", true),
                // +20 % bytes: lower is better, a regression.
                Figure::new("memory whirl", 360.0, "B/proc", false),
                // -50 % MiB: lower is better, an improvement.
                Figure::new("peak RSS whirl", 50.0, "MiB", false),
                Figure::new("only in b", 1.0, "x", true),
            ],
        )
        .expect("record b");
    (a, b)
}

#[test]
fn records_and_lists_runs_oldest_first() {
    let store = Store::open_in_memory().unwrap();
    assert!(store.runs().unwrap().is_empty());
    assert_eq!(store.latest_two().unwrap(), None);
    let (a, b) = two_runs(&store);
    assert_eq!((a, b), (RunId(1), RunId(2)));
    let runs = store.runs().unwrap();
    assert_eq!(runs.iter().map(|r| r.id).collect::<Vec<_>>(), [a, b]);
    assert_eq!(runs[0].meta, meta("aaaaaaa", "2026-11-26T03:00:00Z"));
    // Figures keep the order they were recorded in.
    assert_eq!(runs[1].figures[0].name, "ping-pong whirl/tokio");
    assert_eq!(runs[1].figures.len(), 6);
    assert_eq!(store.run(b).unwrap(), runs[1]);
    assert_eq!(store.latest_two().unwrap(), Some((a, b)));
    assert_eq!(store.previous_of_same_suite(b).unwrap(), Some(a));
    assert_eq!(store.previous_of_same_suite(a).unwrap(), None);
}

#[test]
fn previous_run_is_of_the_same_suite() {
    let store = Store::open_in_memory().unwrap();
    let (a, _) = two_runs(&store);
    let mut full = meta("ccccccc", "2026-11-28T03:00:00Z");
    full.suite = "bench full".into();
    let c = store
        .record(&full, &[Figure::new("x", 1.0, "x", true)])
        .unwrap();
    let d = store
        .record(&full, &[Figure::new("x", 1.0, "x", true)])
        .unwrap();
    assert_eq!(store.previous_of_same_suite(c).unwrap(), None);
    assert_eq!(store.previous_of_same_suite(d).unwrap(), Some(c));
    assert_eq!(store.latest_two().unwrap(), Some((c, d)));
    assert!(a < c);
}

#[test]
fn compare_flags_regressions_in_each_figures_direction() {
    let store = Store::open_in_memory().unwrap();
    let (a, b) = two_runs(&store);
    let c = store.compare(a, b, 5.0).unwrap();
    assert_eq!(c.a.id, a);
    assert_eq!(c.b.commit, "bbbbbbb");
    assert_eq!(c.threshold_pct, 5.0);
    // Figures in only one run are left out; rows follow run b's order.
    let names: Vec<&str> = c.rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "ping-pong whirl/tokio",
            "ping-pong whirl",
            "counting whirl",
            "memory whirl",
            "peak RSS whirl"
        ]
    );
    let row = |name: &str| c.rows.iter().find(|r| r.name == name).unwrap();
    let ratio = row("ping-pong whirl/tokio");
    assert!((ratio.change_pct.unwrap() + 12.5).abs() < 1e-9);
    assert!(ratio.regression, "higher-better figure went down 12.5 %");
    assert!(!row("ping-pong whirl").regression, "higher-better went up");
    assert!(row("ping-pong whirl").improvement(5.0));
    assert!(!row("counting whirl").regression, "-2 % is within 5 %");
    assert!(!row("counting whirl").improvement(5.0));
    let memory = row("memory whirl");
    assert!((memory.change_pct.unwrap() - 20.0).abs() < 1e-9);
    assert!(memory.regression, "lower-better figure went up 20 %");
    assert!(!row("peak RSS whirl").regression, "lower-better went down");
    assert!(row("peak RSS whirl").improvement(5.0));
    assert_eq!(c.regressions, 2);

    // A wider threshold lets the 12.5 % drop through but not the 20 % growth.
    let wide = store.compare(a, b, 15.0).unwrap();
    assert_eq!(wide.regressions, 1);
    assert!(wide
        .rows
        .iter()
        .any(|r| r.name == "memory whirl" && r.regression));

    // Reversed, the improvements become the regressions.
    let back = store.compare(b, a, 5.0).unwrap();
    let flagged: Vec<&str> = back
        .rows
        .iter()
        .filter(|r| r.regression)
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(flagged, ["ping-pong whirl", "peak RSS whirl"]);
}

#[test]
fn compare_from_zero_and_bad_arguments() {
    let store = Store::open_in_memory().unwrap();
    let m = meta("aaaaaaa", "2026-11-26T03:00:00Z");
    let a = store
        .record(
            &m,
            &[
                Figure::new("bytes", 0.0, "B", false),
                Figure::new("same", 0.0, "B", false),
            ],
        )
        .unwrap();
    let b = store
        .record(
            &m,
            &[
                Figure::new("bytes", 8.0, "B", false),
                Figure::new("same", 0.0, "B", false),
            ],
        )
        .unwrap();
    let c = store.compare(a, b, 5.0).unwrap();
    assert_eq!(c.rows[0].change_pct, None);
    assert!(
        c.rows[0].regression,
        "any growth from 0 bytes is beyond the threshold"
    );
    assert_eq!(c.rows[1].change_pct, Some(0.0));
    assert!(!c.rows[1].regression);

    assert!(matches!(
        store.compare(a, RunId(9), 5.0),
        Err(Error::NoSuchRun(RunId(9)))
    ));
    assert!(matches!(store.run(RunId(0)), Err(Error::NoSuchRun(_))));
    assert!(matches!(
        store.compare(a, b, -1.0),
        Err(Error::InvalidThreshold(_))
    ));
    assert!(matches!(
        store.compare(a, b, f64::NAN),
        Err(Error::InvalidThreshold(_))
    ));
    assert!(matches!(
        store.previous_of_same_suite(RunId(42)),
        Err(Error::NoSuchRun(_))
    ));
}

#[test]
fn invalid_figures_store_nothing() {
    let store = Store::open_in_memory().unwrap();
    let m = meta("aaaaaaa", "2026-11-26T03:00:00Z");
    let bad = [
        vec![Figure::new("", 1.0, "x", true)],
        vec![Figure::new("nan", f64::NAN, "x", true)],
        vec![Figure::new("inf", f64::INFINITY, "x", true)],
        vec![
            Figure::new("twice", 1.0, "x", true),
            Figure::new("twice", 2.0, "x", true),
        ],
    ];
    for figures in &bad {
        assert!(matches!(
            store.record(&m, figures),
            Err(Error::InvalidFigure { .. })
        ));
    }
    assert!(store.runs().unwrap().is_empty());
}

/// A unique, fresh directory under the system temp dir.
fn temp_dir(name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir =
        std::env::temp_dir().join(format!("whirl-bench-{name}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_file_database_survives_reopening() {
    let dir = temp_dir("reopen");
    let path = dir.join("history.sqlite");
    {
        let store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        two_runs(&store);
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1].meta.commit, "bbbbbbb");
    let c = store
        .record(&meta("ccccccc", "2026-11-28T03:00:00Z"), &[])
        .unwrap();
    assert_eq!(c, RunId(3));
    drop(store);

    // A database from a newer recorder is refused, not misread.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("PRAGMA user_version = 99;").unwrap();
    drop(conn);
    assert!(matches!(
        Store::open(&path),
        Err(Error::SchemaTooNew { found: 99, .. })
    ));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_store_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Store>();
    assert_send_sync::<whirl_bench::Api>();
    let store = std::sync::Arc::new(Store::open_in_memory().unwrap());
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let store = store.clone();
            std::thread::spawn(move || {
                store
                    .record(
                        &meta(&format!("c{i}"), "2026-11-26T03:00:00Z"),
                        &[Figure::new("x", f64::from(i), "x", true)],
                    )
                    .unwrap()
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(store.runs().unwrap().len(), 4);
}
