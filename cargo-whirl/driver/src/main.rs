//! `whirl-check-driver`: rustc with one more analysis, run by `cargo whirl check` as cargo's
//! `RUSTC_WORKSPACE_WRAPPER` and `RUSTC_WRAPPER`.
//!
//! Cargo runs it as `driver driver rustc ARGS` for every crate of the user's workspace (the
//! outer one drops the inner's name), and as `driver rustc ARGS` for the dependencies. A
//! dependency built for `check` (metadata only) is compiled with `-Zalways-encode-mir` and
//! `mir-opt-level=0`, nothing else: rustc keeps its generic functions' MIR only when it
//! generates code, and the walk needs them to follow a dependency's generic code back into the
//! workspace (`itertools::join` calling a user's `Display`, `serde_json::to_string` a user's
//! `Serialize`). For each crate of the workspace it compiles:
//!
//! 1. `config` asks rustc to keep the MIR of every function in the crate's metadata
//!    (`-Zalways-encode-mir`) and, for a `check` build, not to optimise it (`mir-opt-level=0`),
//!    so that a handler in one workspace crate can be followed into a helper in another, and so
//!    that every call the user wrote is still a call in the MIR;
//! 2. after analysis, if the crate uses whirl, [`check::run`] finds the process code (roots),
//!    walks everything reachable from it, and reports shared state as rustc errors: cargo then
//!    fails, and prints them like any other diagnostic (or as JSON with
//!    `--message-format json`).
//!
//! Arguments are those of a rustc wrapper: the path of the real rustc, then rustc's own.
//! `WHIRL_CHECK_DEBUG=1` prints each function the walk visits and where it leads.
//!
//! Imports point one way, down this list: `main` → `check` → `report` → `walk` → `roots`,
//! `allows`, `shared` (leaves, but for `allows` → `env`); `env`, the names of the variables
//! `cargo whirl` sets, imports nothing. cargo-whirl's `tests/driver_sources.rs` fails on any
//! cycle.

#![feature(rustc_private)]

extern crate rustc_ast;
extern crate rustc_driver;
extern crate rustc_hir;
extern crate rustc_interface;
extern crate rustc_middle;
extern crate rustc_span;

mod allows;
mod check;
mod env;
mod report;
mod roots;
mod shared;
mod walk;

use std::process::{Command, ExitCode};

use rustc_driver::Compilation;
use rustc_middle::ty::TyCtxt;

struct Callbacks;

impl rustc_driver::Callbacks for Callbacks {
    fn config(&mut self, config: &mut rustc_interface::Config) {
        config.opts.unstable_opts.always_encode_mir = true;
        if !config.opts.output_types.should_codegen() {
            config.opts.unstable_opts.mir_opt_level = Some(0);
        }
    }

    fn after_analysis<'tcx>(
        &mut self,
        _compiler: &rustc_interface::interface::Compiler,
        tcx: TyCtxt<'tcx>,
    ) -> Compilation {
        check::run(tcx);
        Compilation::Continue
    }
}

/// A dependency of the workspace: compiled as rustc would, with the MIR of its functions kept
/// in the metadata of a `check` build (that MIR is never used to generate code, so it is kept
/// unoptimised: cheaper, and every call written is still a call).
struct Dependency;

impl rustc_driver::Callbacks for Dependency {
    fn config(&mut self, config: &mut rustc_interface::Config) {
        let opts = &mut config.opts;
        // Code generated (a proc macro and its dependencies, a build script): rustc keeps
        // the MIR of generic and inline functions anyway, and the walk never reads it.
        if opts.output_types.should_codegen() {
            return;
        }
        opts.unstable_opts.always_encode_mir = true;
        opts.unstable_opts.mir_opt_level = Some(0);
    }
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().collect();
    // `RUSTC_WRAPPER` around `RUSTC_WORKSPACE_WRAPPER`, both this driver: a crate of the
    // workspace.
    let mut dependency = std::env::var_os(env::DEPENDENCIES_ENV).is_some();
    if args.len() > 1 && is_self(&args[1]) {
        args.remove(1);
        dependency = false;
    }
    // As a wrapper, the first argument is the rustc cargo would have run.
    let rustc = if args.len() > 1 && is_rustc(&args[1]) {
        Some(args.remove(1))
    } else {
        None
    };
    // Queries about the compiler itself (`-vV`, `--print cfg`...) go to the real rustc, so that
    // cargo sees exactly the toolchain it asked for.
    let compiles = args.iter().skip(1).any(|a| a.ends_with(".rs"));
    if let (Some(rustc), false) = (&rustc, compiles) {
        return match Command::new(rustc).args(&args[1..]).status() {
            Ok(status) if status.success() => ExitCode::SUCCESS,
            Ok(status) => ExitCode::from(status.code().unwrap_or(1).clamp(1, 255) as u8),
            Err(err) => {
                eprintln!("whirl-check-driver: could not run {rustc}: {err}");
                ExitCode::FAILURE
            }
        };
    }
    rustc_driver::install_ice_hook(
        "whirl's issue tracker (say it was `cargo whirl check`)",
        |_| (),
    );
    rustc_driver::catch_with_exit_code(|| {
        if dependency {
            rustc_driver::run_compiler(&args, &mut Dependency);
        } else {
            rustc_driver::run_compiler(&args, &mut Callbacks);
        }
    })
}

/// Whether `arg` is the path of this driver (cargo puts the workspace wrapper after the
/// wrapper).
fn is_self(arg: &str) -> bool {
    let name = |path: &std::path::Path| path.file_stem().map(|s| s.to_owned());
    std::env::current_exe()
        .is_ok_and(|exe| name(&exe).is_some() && name(&exe) == name(std::path::Path::new(arg)))
}

/// Whether `arg` is the path of a rustc executable (`rustc`, `/x/bin/rustc`, `rustc.exe`).
fn is_rustc(arg: &str) -> bool {
    std::path::Path::new(arg)
        .file_stem()
        .is_some_and(|stem| stem == "rustc")
}
