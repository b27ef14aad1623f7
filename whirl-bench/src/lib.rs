//! The benchmark recorder: runs whirl's comparative bench suite, stores every run (commit,
//! machine, date, every figure) in a SQLite file, compares two runs and flags regressions.
//!
//! # The command
//!
//! Run from anywhere inside the workspace:
//!
//! ```text
//! cargo run --release -p whirl-bench -- record --quick     # run `bench quick`, store it, compare
//! cargo run --release -p whirl-bench -- record             # the full suite (minutes)
//! cargo run --release -p whirl-bench -- history            # every recorded run
//! cargo run --release -p whirl-bench -- compare 3 5 --threshold 10
//! ```
//!
//! - `record [--quick] [--bench-bin PATH] [--threshold PCT]` runs
//!   `cargo run --release -q -p bench --bin bench -- [quick] --json` in the workspace root
//!   (or the prebuilt `--bench-bin PATH [quick] --json`), stores the figures with the commit
//!   (`git rev-parse --short HEAD`, plus a dirty flag when tracked files changed), the host
//!   name and CPU count and the date (UTC), prints the new run's id and compares it with the
//!   previous run of the same suite (`bench quick` or `bench full`). It builds nothing itself
//!   besides what that `cargo run` builds.
//! - `history` prints every run, oldest first (`*` after a commit: dirty tree).
//! - `compare A B [--threshold PCT]` prints every figure of run `B` against the baseline run
//!   `A` and flags the regressions: figures worse, in their own direction, by more than the
//!   threshold (5 % by default).
//!
//! Every command takes `--db PATH` (default `bench-history.sqlite` in the current directory).
//! Exit status: `0` success; `1` error (unknown run id, missing database, failed suite, bad
//! arguments); `2` from `compare` when at least one regression is flagged, so CI can gate on
//! it. (`record` exits `0` whatever its comparison shows.)
//!
//! # The library
//!
//! [`Store`] is the database; [`runs_json`] and [`compare_json`] produce the bodies of the
//! console's `GET /api/bench/runs` and `GET /api/bench/compare` (`whirl-console/API.md`,
//! section "Benchmarks"), and [`Api`] answers both routes:
//!
//! ```
//! use whirl_bench::{Api, Figure, RunMeta, Store};
//!
//! let store = Store::open_in_memory()?; // or Store::open("bench-history.sqlite")?
//! let meta = |commit: &str| RunMeta {
//!     commit: commit.into(),
//!     dirty: false,
//!     machine: "host".into(),
//!     cpus: 2,
//!     date: "2026-11-26T03:00:00Z".into(),
//!     suite: "bench quick".into(),
//! };
//! let a = store.record(&meta("aaaaaaa"), &[Figure::new("ping-pong whirl", 2.0e6, "msgs/s", true)])?;
//! let b = store.record(&meta("bbbbbbb"), &[Figure::new("ping-pong whirl", 1.5e6, "msgs/s", true)])?;
//! let comparison = store.compare(a, b, 5.0)?;
//! assert_eq!(comparison.regressions, 1); // -25 %, beyond 5 %
//!
//! let api = Api::from_store(store); // or Api::new("bench-history.sqlite"), opening per request
//! let (status, body) = api.handle("/api/bench/compare", "a=1&b=2").expect("a bench route");
//! assert_eq!(status, 200);
//! assert!(body.contains(r#""regressions":1"#));
//! assert_eq!(api.handle("/api/bench/compare", "a=1&b=9").map(|(s, _)| s), Some(404));
//! assert_eq!(api.handle("/api/snapshot", ""), None);
//! # Ok::<(), whirl_bench::Error>(())
//! ```
//!
//! The bench binary's `--json` document is parsed by [`parse_suite_output`]; [`SuiteCommand`]
//! runs it and [`RunMeta::gather`] collects the metadata.

mod api;
mod error;
mod id;
mod model;
mod store;
mod suite;

pub use api::{compare_json, runs_json, Api, COMPARE_PATH, RUNS_PATH};
pub use error::{Error, Result};
pub use id::RunId;
pub use model::{CompareRow, Comparison, Figure, Run, RunMeta, RunSummary, DEFAULT_THRESHOLD_PCT};
pub use store::{Store, SCHEMA_VERSION};
pub use suite::{now_rfc3339, parse_suite_output, workspace_root, SuiteCommand, SuiteOutput};
