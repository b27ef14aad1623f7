//! The users file: who may log in and with which role (which sets their sessions' priority).
//!
//! One user per line, `name password role`, fields separated by whitespace (so passwords
//! cannot contain spaces), role `admin` or `user`; `#` starts a comment line and blank lines
//! are ignored. Passwords are stored and compared in clear and not in constant time: this
//! is a demo of load shedding, not of authentication.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::sessions::Role;

/// Why a users file was refused.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A line is malformed.
    #[error("line {line}: {reason}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: LineError,
    },
}

/// What is wrong with one line of the users file.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LineError {
    /// Not exactly three fields.
    #[error("expected `name password role`, found {0} field(s)")]
    FieldCount(usize),
    /// A role other than `admin` or `user`.
    #[error("unknown role `{0}` (expected `admin` or `user`)")]
    UnknownRole(String),
    /// The name appeared on an earlier line.
    #[error("user `{name}` already defined on line {first}")]
    Duplicate {
        /// The user name.
        name: String,
        /// Where it was first defined.
        first: usize,
    },
}

#[derive(whirl::Isolated, Debug, Clone)]
struct Account {
    password: String,
    role: Role,
    line: usize,
}

/// The accounts that may log in.
#[derive(whirl::Isolated, Debug, Clone, Default)]
pub struct Users {
    accounts: HashMap<String, Account>,
}

impl Users {
    /// Parses the text of a users file.
    pub fn parse(text: &str) -> Result<Users, ConfigError> {
        let mut users = Users::default();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let content = raw.trim();
            if content.is_empty() || content.starts_with('#') {
                continue;
            }
            users
                .parse_line(content, line)
                .map_err(|reason| ConfigError::Line { line, reason })?;
        }
        Ok(users)
    }

    /// Reads and parses the users file at `path`.
    pub fn load(path: &Path) -> Result<Users, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Users::parse(&text)
    }

    /// The demo accounts used when no file is given: `admin:secret` (admin) and
    /// `alice:wonderland` (user).
    pub fn default_demo() -> Users {
        let mut users = Users::default();
        for (name, password, role) in [
            ("admin", "secret", Role::Admin),
            ("alice", "wonderland", Role::User),
        ] {
            users.accounts.insert(
                name.to_string(),
                Account {
                    password: password.to_string(),
                    role,
                    line: 0,
                },
            );
        }
        users
    }

    /// The role of `name` if `password` is theirs. Plain string comparison, not constant
    /// time (see the module documentation).
    pub fn check(&self, name: &str, password: &str) -> Option<Role> {
        self.accounts
            .get(name)
            .filter(|account| account.password == password)
            .map(|account| account.role)
    }

    #[cfg(test)]
    /// Number of accounts.
    pub fn len(&self) -> usize {
        self.accounts.len()
    }

    #[cfg(test)]
    /// Whether there are no accounts (nobody can log in).
    pub fn is_empty(&self) -> bool {
        self.accounts.is_empty()
    }

    fn parse_line(&mut self, content: &str, line: usize) -> Result<(), LineError> {
        let fields: Vec<&str> = content.split_whitespace().collect();
        let [name, password, role] = fields[..] else {
            return Err(LineError::FieldCount(fields.len()));
        };
        let role = match role {
            "admin" => Role::Admin,
            "user" => Role::User,
            other => return Err(LineError::UnknownRole(other.to_string())),
        };
        if let Some(first) = self.accounts.get(name) {
            return Err(LineError::Duplicate {
                name: name.to_string(),
                first: first.line,
            });
        }
        self.accounts.insert(
            name.to_string(),
            Account {
                password: password.to_string(),
                role,
                line,
            },
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line_error(text: &str) -> (usize, LineError) {
        match Users::parse(text) {
            Err(ConfigError::Line { line, reason }) => (line, reason),
            other => panic!("expected a line error, got {other:?}"),
        }
    }

    #[test]
    fn parses_users_comments_and_blank_lines() {
        let users = Users::parse(
            "# the operators\n\nroot  hunter2\tadmin\n   \n  # indented comment\nbob pw user\n",
        )
        .unwrap();
        assert_eq!(users.len(), 2);
        assert_eq!(users.check("root", "hunter2"), Some(Role::Admin));
        assert_eq!(users.check("bob", "pw"), Some(Role::User));
        assert_eq!(users.check("bob", "wrong"), None);
        assert_eq!(users.check("nobody", "pw"), None);
    }

    #[test]
    fn parse_errors_carry_line_numbers() {
        assert_eq!(
            line_error("# c\nok pw user\nbroken line\n"),
            (3, LineError::FieldCount(2))
        );
        assert_eq!(line_error("a b c d\n"), (1, LineError::FieldCount(4)));
        assert_eq!(
            line_error("\n\nx pw root\n"),
            (3, LineError::UnknownRole("root".into()))
        );
        assert_eq!(
            line_error("x pw user\n\nx other admin\n"),
            (
                3,
                LineError::Duplicate {
                    name: "x".into(),
                    first: 1
                }
            )
        );
        assert_eq!(
            line_error("x pw anonymous\n").1,
            LineError::UnknownRole("anonymous".into())
        );
    }

    #[test]
    fn error_messages_name_the_line() {
        let Err(e) = Users::parse("oops\n") else {
            panic!("must fail");
        };
        assert_eq!(
            e.to_string(),
            "line 1: expected `name password role`, found 1 field(s)"
        );
    }

    #[test]
    fn empty_file_has_no_users() {
        assert!(Users::parse("").unwrap().is_empty());
    }

    #[test]
    fn missing_file_is_an_io_error() {
        let e = Users::load(Path::new("/nonexistent/iris-users")).unwrap_err();
        assert!(matches!(e, ConfigError::Io { .. }));
    }

    #[test]
    fn demo_users() {
        let users = Users::default_demo();
        assert_eq!(users.check("admin", "secret"), Some(Role::Admin));
        assert_eq!(users.check("alice", "wonderland"), Some(Role::User));
        assert_eq!(users.check("alice", "secret"), None);
    }
}
