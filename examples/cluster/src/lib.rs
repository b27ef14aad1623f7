//! What the `cluster` package's commands (`dist_node`, `whirl-certs`) share: a [`Failure`]
//! names what failed and why, with the error's whole chain of sources; each command prints it
//! as `<command>: <what>: <cause>`.

use std::error::Error;

/// What went wrong, and why.
pub struct Failure {
    /// What was being done, such as `start the node`.
    pub what: String,
    /// Why it failed.
    pub cause: String,
}

impl Failure {
    /// `what` failed because of `cause`.
    pub fn new(what: impl Into<String>, cause: impl Into<String>) -> Failure {
        Failure {
            what: what.into(),
            cause: cause.into(),
        }
    }

    /// `what` failed because of `error` (and its sources).
    pub fn of(what: impl Into<String>, error: &dyn Error) -> Failure {
        Failure::new(what, chain(error))
    }
}

/// An error and its sources, joined by ": ".
pub fn chain(error: &dyn Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}
