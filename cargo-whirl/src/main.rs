//! `cargo whirl`: the command-line front end of whirl's isolation validator.
//!
//! ```text
//! cargo install --path cargo-whirl
//! cargo whirl check                # in any crate or workspace that uses whirl
//! cargo whirl check -p server --message-format json
//! ```
//!
//! `#[process]` and the `Isolated` trait let the compiler refuse shared mutable state in what
//! a process *holds*. What a process *reaches* through code (a `static` with interior
//! mutability, a `static mut`, a thread-local) no type shows; `cargo whirl check` finds it by
//! walking, in the compiled code, every function reachable from every handler and hook, and
//! reports each access like a compiler error, with the path from the handler.
//!
//! It is a rustc driver, the shape of `cargo clippy` and `cargo miri`: cargo runs it in place
//! of rustc on the workspace's own crates (dependencies are compiled by rustc as usual). The
//! driver uses rustc's internal crates, which exist only on a nightly toolchain; `cargo whirl`
//! builds it once from the sources embedded in this binary on the nightly pinned in
//! `driver/rust-toolchain.toml` (installing that toolchain with rustup if needed), and runs the
//! check on it in a separate target directory. The project itself keeps building on stable:
//! nothing of the check reaches its own build.
//!
//! Modules: [`driver`] builds and finds the driver; [`check`] runs cargo with it and prints the
//! outcome.

mod check;
mod driver;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Cargo passes the subcommand's own name (`whirl`) as the first argument.
#[derive(Parser)]
#[command(name = "cargo", bin_name = "cargo")]
enum Cargo {
    /// whirl's tools.
    Whirl(Whirl),
}

#[derive(clap::Args)]
#[command(
    version,
    about = "whirl's tools: `cargo whirl check` finds shared state reachable from processes"
)]
struct Whirl {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Checks the workspace's processes for shared state that types cannot see.
    ///
    /// Every argument is passed to `cargo check` (`-p NAME`, `--all-targets`, `--features`,
    /// `--message-format json`, `--keep-going`...). Exits with a non-zero status when anything
    /// is reported.
    #[command(disable_help_flag = false)]
    Check {
        /// Arguments for `cargo check`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        cargo_args: Vec<String>,
    },
    /// Builds the checker (and installs its pinned nightly toolchain) without checking
    /// anything; prints where the driver is.
    Setup,
}

fn main() -> ExitCode {
    let Cargo::Whirl(whirl) = Cargo::parse();
    let result = match whirl.command {
        Command::Check { cargo_args } => {
            driver::ensure().and_then(|driver| check::run(&driver, &cargo_args))
        }
        Command::Setup => driver::ensure().map(|driver| {
            println!("{}", driver.display());
            ExitCode::SUCCESS
        }),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err}");
            let mut source = std::error::Error::source(&err);
            while let Some(cause) = source {
                eprintln!("  caused by: {cause}");
                source = cause.source();
            }
            ExitCode::from(2)
        }
    }
}
