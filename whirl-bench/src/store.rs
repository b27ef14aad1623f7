//! The SQLite store.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::model::check_threshold;
use crate::{Comparison, Error, Figure, Result, Run, RunId, RunMeta};

/// The schema version this build writes and reads (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = r#"
CREATE TABLE runs (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    "commit" TEXT    NOT NULL,
    dirty    INTEGER NOT NULL,
    machine  TEXT    NOT NULL,
    cpus     INTEGER NOT NULL,
    date     TEXT    NOT NULL,
    suite    TEXT    NOT NULL
);
CREATE TABLE figures (
    run_id           INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name             TEXT    NOT NULL,
    value            REAL    NOT NULL,
    unit             TEXT    NOT NULL,
    higher_is_better INTEGER NOT NULL,
    PRIMARY KEY (run_id, name)
);
"#;

/// A history of benchmark runs in one SQLite database.
///
/// The store keeps a single connection behind a [`Mutex`]: it is `Send + Sync`, every method
/// takes `&self`, and calls from several threads (a console's server threads) are serialized.
/// Share it with an [`Arc`](std::sync::Arc) (or through [`Api`](crate::Api)). Other
/// processes may use the same file at the same time (`whirl-bench record` while a console
/// serves it): SQLite locks the file, and a blocked call waits up to 5 s before failing with
/// [`Error::Sqlite`].
///
/// The schema is versioned with `PRAGMA user_version` ([`SCHEMA_VERSION`]); opening a new or
/// empty database creates the tables:
///
/// ```text
/// runs(id INTEGER PRIMARY KEY, "commit", dirty, machine, cpus, date, suite)
/// figures(run_id REFERENCES runs, name, value, unit, higher_is_better; PRIMARY KEY(run_id, name))
/// ```
#[derive(Debug)]
pub struct Store {
    conn: Mutex<Connection>,
}

impl Store {
    /// Opens (creating if need be) the database file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::init(Connection::open(path)?)
    }

    /// Opens the database file at `path`, failing with [`Error::NoDatabase`] rather than
    /// creating it when there is none.
    pub fn open_existing(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        if !path.is_file() {
            return Err(Error::NoDatabase(path.to_path_buf()));
        }
        Self::open(path)
    }

    /// A new, empty database in memory (for tests).
    pub fn open_in_memory() -> Result<Self> {
        Self::init(Connection::open_in_memory()?)
    }

    fn init(mut conn: Connection) -> Result<Self> {
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.execute_batch("PRAGMA foreign_keys = ON;")?;
        // The common case, an existing database, only reads (no write lock, so opening per
        // request while `record` writes is cheap).
        if user_version(&conn)? == 0 {
            // IMMEDIATE: two processes opening a new file at once create the schema once.
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if user_version(&tx)? == 0 {
                tx.execute_batch(SCHEMA)?;
                tx.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION};"))?;
            }
            tx.commit()?;
        }
        match user_version(&conn)? {
            SCHEMA_VERSION => {}
            found => {
                return Err(Error::SchemaTooNew {
                    found,
                    supported: SCHEMA_VERSION,
                })
            }
        }
        Ok(Store {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves the connection usable: an open transaction
        // was rolled back when it was dropped.
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The database's schema version (`PRAGMA user_version`), [`SCHEMA_VERSION`] once open.
    pub fn schema_version(&self) -> Result<i64> {
        user_version(&self.conn())
    }

    /// Stores a run and its figures in one transaction and returns its id.
    ///
    /// Fails with [`Error::InvalidFigure`] (storing nothing) when a figure has an empty name,
    /// a name used twice, or a value that is not finite.
    pub fn record(&self, meta: &RunMeta, figures: &[Figure]) -> Result<RunId> {
        let mut seen = HashSet::new();
        for f in figures {
            let reason = if f.name.is_empty() {
                "empty name"
            } else if !f.value.is_finite() {
                "value is not a finite number"
            } else if !seen.insert(f.name.as_str()) {
                "name used twice in one run"
            } else {
                continue;
            };
            return Err(Error::InvalidFigure {
                name: f.name.clone(),
                reason: reason.to_owned(),
            });
        }
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        tx.execute(
            r#"INSERT INTO runs ("commit", dirty, machine, cpus, date, suite)
               VALUES (?1, ?2, ?3, ?4, ?5, ?6)"#,
            params![
                meta.commit,
                meta.dirty,
                meta.machine,
                meta.cpus,
                meta.date,
                meta.suite
            ],
        )?;
        let id = tx.last_insert_rowid();
        {
            let mut insert = tx.prepare(
                "INSERT INTO figures (run_id, name, value, unit, higher_is_better)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for f in figures {
                insert.execute(params![id, f.name, f.value, f.unit, f.higher_is_better])?;
            }
        }
        tx.commit()?;
        Ok(RunId(id))
    }

    /// Every run with its figures, oldest first.
    pub fn runs(&self) -> Result<Vec<Run>> {
        let conn = self.conn();
        let mut runs: Vec<Run> = conn
            .prepare(
                r#"SELECT id, "commit", dirty, machine, cpus, date, suite FROM runs ORDER BY id"#,
            )?
            .query_map([], run_from_row)?
            .collect::<rusqlite::Result<_>>()?;
        let mut stmt = conn.prepare(
            "SELECT run_id, name, value, unit, higher_is_better FROM figures
             ORDER BY run_id, rowid",
        )?;
        let mut rows = stmt.query([])?;
        // Both lists are sorted by run id: walk them together.
        let mut i = 0;
        while let Some(row) = rows.next()? {
            let run_id = RunId(row.get(0)?);
            while i < runs.len() && runs[i].id < run_id {
                i += 1;
            }
            if let Some(run) = runs.get_mut(i).filter(|r| r.id == run_id) {
                run.figures.push(figure_from_row(row, 1)?);
            }
        }
        Ok(runs)
    }

    /// One run with its figures; [`Error::NoSuchRun`] if there is none with this id.
    pub fn run(&self, id: RunId) -> Result<Run> {
        let conn = self.conn();
        let mut run = conn
            .query_row(
                r#"SELECT id, "commit", dirty, machine, cpus, date, suite FROM runs WHERE id = ?1"#,
                [id.0],
                run_from_row,
            )
            .optional()?
            .ok_or(Error::NoSuchRun(id))?;
        run.figures = conn
            .prepare(
                "SELECT name, value, unit, higher_is_better FROM figures
                 WHERE run_id = ?1 ORDER BY rowid",
            )?
            .query_map([id.0], |row| figure_from_row(row, 0))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(run)
    }

    /// Compares run `b` against the baseline run `a` (see [`Comparison::of`]).
    ///
    /// Fails with [`Error::NoSuchRun`] for an unknown id and [`Error::InvalidThreshold`] for
    /// a negative or non-finite threshold.
    pub fn compare(&self, a: RunId, b: RunId, threshold_pct: f64) -> Result<Comparison> {
        check_threshold(threshold_pct)?;
        Comparison::of(&self.run(a)?, &self.run(b)?, threshold_pct)
    }

    /// The ids of the two most recent runs, `(previous, latest)`; `None` with fewer than two.
    pub fn latest_two(&self) -> Result<Option<(RunId, RunId)>> {
        let ids: Vec<i64> = self
            .conn()
            .prepare("SELECT id FROM runs ORDER BY id DESC LIMIT 2")?
            .query_map([], |row| row.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(match ids[..] {
            [latest, previous] => Some((RunId(previous), RunId(latest))),
            _ => None,
        })
    }

    /// The most recent run before `id` of the same suite (the baseline `record` compares a
    /// new run with); `None` if there is none. [`Error::NoSuchRun`] if `id` is unknown.
    pub fn previous_of_same_suite(&self, id: RunId) -> Result<Option<RunId>> {
        let conn = self.conn();
        let suite: String = conn
            .query_row("SELECT suite FROM runs WHERE id = ?1", [id.0], |row| {
                row.get(0)
            })
            .optional()?
            .ok_or(Error::NoSuchRun(id))?;
        Ok(conn
            .query_row(
                "SELECT id FROM runs WHERE id < ?1 AND suite = ?2 ORDER BY id DESC LIMIT 1",
                params![id.0, suite],
                |row| row.get(0),
            )
            .optional()?
            .map(RunId))
    }
}

fn user_version(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row("PRAGMA user_version", [], |row| row.get(0))?)
}

fn run_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Run> {
    Ok(Run {
        id: RunId(row.get(0)?),
        meta: RunMeta {
            commit: row.get(1)?,
            dirty: row.get(2)?,
            machine: row.get(3)?,
            cpus: row.get(4)?,
            date: row.get(5)?,
            suite: row.get(6)?,
        },
        figures: Vec::new(),
    })
}

fn figure_from_row(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Figure> {
    Ok(Figure {
        name: row.get(first)?,
        value: row.get(first + 1)?,
        unit: row.get(first + 2)?,
        higher_is_better: row.get(first + 3)?,
    })
}
