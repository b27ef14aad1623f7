//! The crate's error type.

use std::process::ExitStatus;

use crate::RunId;

/// Everything that can go wrong while recording, reading or comparing runs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The SQLite database failed (opening, schema, query, constraint).
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// Serializing a JSON body failed.
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    /// Reading or writing a file or a pipe failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The bench suite (or `cargo`) could not be started at all.
    #[error("cannot run `{command}`: {source}")]
    Spawn {
        /// The command line, for the message.
        command: String,
        /// Why it could not be started.
        #[source]
        source: std::io::Error,
    },
    /// The bench suite ran but exited unsuccessfully.
    #[error("the bench suite failed ({status}); the end of its stderr:\n{stderr_tail}")]
    SuiteFailed {
        /// Its exit status.
        status: ExitStatus,
        /// The last lines it wrote to stderr.
        stderr_tail: String,
    },
    /// The bench suite's output (or another input) is not what was expected.
    #[error("cannot parse {what}: {message}")]
    Parse {
        /// What was being parsed, e.g. "the bench suite's JSON output".
        what: String,
        /// What is wrong with it.
        message: String,
    },
    /// [`Store::open_existing`](crate::Store::open_existing): there is no database file here.
    #[error("no history database at {} (record a run first, or pass --db PATH)", .0.display())]
    NoDatabase(std::path::PathBuf),
    /// No run has this id.
    #[error("no such run: {0}")]
    NoSuchRun(RunId),
    /// A figure cannot be recorded: empty or duplicate name, or a value that is not finite.
    #[error("invalid figure {name:?}: {reason}")]
    InvalidFigure {
        /// The figure's name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A comparison threshold that is negative or not a number.
    #[error("invalid threshold {0}: expected a percentage, finite and >= 0")]
    InvalidThreshold(f64),
    /// The database was written by a newer version of this recorder.
    #[error("database schema version {found} is newer than this recorder's ({supported})")]
    SchemaTooNew {
        /// The database's `PRAGMA user_version`.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
