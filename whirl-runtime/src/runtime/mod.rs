//! The runtime: a node with a default group, more groups on demand, names, and orderly
//! shutdown.
//!
//! * `handle.rs`: [`Runtime`] and [`RuntimeBuilder`], a handle on the kernel
//!   (`group/shared.rs`) plus the default group.
//! * `shutdown.rs`: what a shutdown reports ([`ShutdownReport`], [`AbandonedProcess`]).
//! * `signal.rs`: shutting down on SIGINT/SIGTERM.
//!
//! Layer 9, the top: uses every layer below.

mod handle;
mod panics;
mod shutdown;
#[cfg(unix)]
pub(crate) mod signal;

pub use handle::{Runtime, RuntimeBuilder};
pub use shutdown::{AbandonedProcess, ShutdownReport};
