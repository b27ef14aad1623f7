//! What goes wrong with a configuration, and where: every error that comes from the file
//! carries a [`Location`] (file, line, column, computed from the byte span `toml` reports),
//! and displays as `FILE:LINE:COLUMN: what was expected`, the form editors jump to.

use std::fmt;
use std::ops::Range;
use std::path::PathBuf;

/// A position in a configuration file: 1-based line and column (in characters).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Location {
    /// The file (or the origin given with the text).
    pub origin: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, counted in characters.
    pub column: usize,
}

impl Location {
    /// The location of byte `offset` of `text`, read from `origin`.
    pub fn at(origin: &str, text: &str, offset: usize) -> Location {
        let offset = offset.min(text.len());
        // Back to a character boundary, should the span point inside one.
        let offset = (0..=offset)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = text[line_start..offset].chars().count() + 1;
        Location {
            origin: origin.to_string(),
            line,
            column,
        }
    }

    pub(crate) fn of_span(origin: &str, text: &str, span: Option<Range<usize>>) -> Location {
        Location::at(origin, text, span.map_or(0, |s| s.start))
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.origin, self.line, self.column)
    }
}

/// Why a configuration was refused. Nothing in a file makes the assembly panic.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Not TOML, or not the assembly's shape: a syntax error, a wrong type, an unknown key, a
    /// missing one. `message` is `toml`'s account of what was expected.
    #[error("{at}: {message}")]
    Syntax {
        /// Where.
        at: Location,
        /// What was expected.
        message: String,
    },
    /// A reference to a group the file does not define.
    #[error("{at}: unknown group `{name}` (expected one of the file's groups, or `default`)")]
    UnknownGroup {
        /// Where.
        at: Location,
        /// The name given.
        name: String,
    },
    /// A process type no factory was registered for.
    #[error("{at}: unknown process type `{name}` (registered: {known})")]
    UnknownProcess {
        /// Where.
        at: Location,
        /// The name given.
        name: String,
        /// The registered names, comma-separated.
        known: String,
    },
    /// A value of the right type that the runtime refuses (a CPU share above 1, a child that
    /// is neither a process nor a supervisor, arguments a factory cannot take, a group the
    /// runtime cannot build...).
    #[error("{at}: {message}")]
    Invalid {
        /// Where.
        at: Location,
        /// What was expected.
        message: String,
    },
}

impl ConfigError {
    /// Where in the file the problem is (`None` for an unreadable file).
    pub fn location(&self) -> Option<&Location> {
        match self {
            ConfigError::Io { .. } => None,
            ConfigError::Syntax { at, .. }
            | ConfigError::UnknownGroup { at, .. }
            | ConfigError::UnknownProcess { at, .. }
            | ConfigError::Invalid { at, .. } => Some(at),
        }
    }
}

/// A change in a reloaded file that cannot be applied to the running application: the
/// structure (threads of a group, new or removed groups, schedulers, a supervision tree, a
/// predicate's shape or a parameter without a live setter) is fixed once built.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NeedsRestart {
    /// The setting, as a dotted path (`groups.web.threads`, `groups.web.predicate.all[1]`).
    pub path: String,
    /// Where it is in the new file, when it is still there.
    pub at: Option<Location>,
}

impl fmt::Display for NeedsRestart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.at {
            Some(at) => write!(f, "{at}: `{}` changed: needs a restart", self.path),
            None => write!(f, "`{}` changed: needs a restart", self.path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns_from_offsets() {
        let text = "a = 1\nbé = 2\n\nc = x\n";
        assert_eq!(Location::at("f", text, 0).to_string(), "f:1:1");
        assert_eq!(Location::at("f", text, 4).to_string(), "f:1:5");
        assert_eq!(Location::at("f", text, 6).to_string(), "f:2:1");
        // "é" is two bytes, one column.
        assert_eq!(Location::at("f", text, 10).to_string(), "f:2:4");
        assert_eq!(Location::at("f", text, 15).to_string(), "f:4:1");
        assert_eq!(Location::at("f", text, 1000).line, 5);
    }
}
