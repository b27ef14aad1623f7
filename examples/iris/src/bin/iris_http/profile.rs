//! The named profiles of `--demo`: iris_http with no flags is a static file server (with the
//! paper's structure: sessions as principals, groups, predicates that shed only under
//! overload), and does no work but serving; a demo profile changes the defaults for one
//! experiment, and flags given with it still win.
//!
//! `--demo overload` is the paper's overload demo: every unit of request work (a resource
//! lookup 1, a listing 2, a low-quality file 1, a high-quality file 8) spins
//! [`OVERLOAD_WORK`] on the CPU, so that capacity is small, known, and easy to exceed with
//! a load generator, and the predicates have something to shed. The overload measurements
//! (`scripts/http_overload.sh`, `scripts/http_measurements.sh`) and tests run in it.

use std::time::Duration;

use crate::server::Options;

/// The simulated CPU time per unit of request work in the overload demo.
pub const OVERLOAD_WORK: Duration = Duration::from_micros(100);

/// A named profile (`--demo NAME`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Demo {
    /// The paper's overload demo: simulated work per request, so that load can exceed
    /// capacity.
    Overload,
}

impl Demo {
    /// `options` set up for this profile.
    pub fn apply(self, mut options: Options) -> Options {
        match self {
            Demo::Overload => options.work = OVERLOAD_WORK,
        }
        options
    }
}
