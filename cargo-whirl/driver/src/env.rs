//! The environment `cargo whirl` sets for the driver: the names of its variables, read by the
//! driver's entry point (`main.rs`) and by the check (`check`, `allows`). A leaf: it imports
//! nothing of the driver's.

/// The environment variable, set by `cargo whirl`, naming the workspace's crates (comma
/// separated, as rustc spells crate names): the code the walk follows.
pub const WORKSPACE_ENV: &str = "WHIRL_CHECK_WORKSPACE";

/// The environment variable, set by `cargo whirl` when it makes the driver cargo's
/// `RUSTC_WRAPPER` too: a `driver rustc ARGS` invocation is then a dependency's.
pub const DEPENDENCIES_ENV: &str = "WHIRL_CHECK_DEPENDENCIES";

/// The environment variable, set by `cargo whirl`, naming a directory where each checked crate
/// lists its statics marked `#[allow_shared]` (see `allows`).
pub const ALLOWS_DIR_ENV: &str = "WHIRL_CHECK_ALLOWS_DIR";
