//! Extensions of the console: a [`Panel`] serves JSON under `/api/<name>/`.

use crate::Isolated;

/// An extension of the console: JSON endpoints under `/api/<name>/`, named in the snapshot's
/// `panels` (the page draws a panel named `bench`: benchmark history and comparisons, the
/// shapes in `API.md`).
///
/// A panel is called on the console's worker thread: answer in milliseconds. It is shared by
/// the console's connection processes, so it is [`Isolated`] and `Sync`: hold owned
/// configuration (a database path, say, opening a connection per request), not shared mutable
/// state.
pub trait Panel: Isolated + Sync + 'static {
    /// The name: one path segment, `[a-z0-9-]`.
    fn name(&self) -> &str;

    /// Answers a `GET /api/<name>/<rest>?<query>`: the status and a JSON body, or `None` for
    /// a path the panel does not serve (404).
    fn get(&self, rest: &str, query: &str) -> Option<(u16, String)>;
}
