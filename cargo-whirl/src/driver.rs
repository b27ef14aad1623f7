//! Builds the rustc driver from the sources embedded in this binary, once per version, and
//! finds it.
//!
//! The driver links against one nightly's `rustc_private` crates, so it is built with that
//! nightly (`driver/rust-toolchain.toml`), which is installed with rustup, with its `rustc-dev`
//! and `llvm-tools` components, when it is missing. The build goes to
//! `$WHIRL_CHECK_HOME` (default: `$CARGO_HOME/whirl-check`, that is `~/.cargo/whirl-check`), in
//! a directory named after a hash of the sources, so a new version of cargo-whirl builds its
//! own driver and never runs an old one.

use std::collections::hash_map::DefaultHasher;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The driver's package, file by file (path relative to the package, contents).
const SOURCES: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("../driver/Cargo.toml")),
    (
        "rust-toolchain.toml",
        include_str!("../driver/rust-toolchain.toml"),
    ),
    ("build.rs", include_str!("../driver/build.rs")),
    ("src/main.rs", include_str!("../driver/src/main.rs")),
    ("src/allows.rs", include_str!("../driver/src/allows.rs")),
    ("src/check.rs", include_str!("../driver/src/check.rs")),
    ("src/env.rs", include_str!("../driver/src/env.rs")),
    ("src/report.rs", include_str!("../driver/src/report.rs")),
    ("src/roots.rs", include_str!("../driver/src/roots.rs")),
    ("src/shared.rs", include_str!("../driver/src/shared.rs")),
    ("src/walk.rs", include_str!("../driver/src/walk.rs")),
];

/// The components the driver needs besides rustc: its compiler crates, and the LLVM library
/// they link to.
const COMPONENTS: &[&str] = &["rustc-dev", "llvm-tools"];

/// What went wrong while preparing the driver.
#[derive(Debug)]
#[non_exhaustive]
pub enum DriverError {
    /// No home directory for the build (neither `WHIRL_CHECK_HOME`, `CARGO_HOME` nor `HOME`).
    NoHome,
    /// Writing the sources or running a tool failed.
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: io::Error,
    },
    /// rustup or cargo ran and failed.
    Failed {
        /// The command that failed.
        command: String,
        /// What to do about it.
        hint: &'static str,
    },
    /// The toolchain file embedded in the binary names no channel (a build defect).
    NoChannel,
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverError::NoHome => write!(
                f,
                "cannot tell where to build the checker: set WHIRL_CHECK_HOME (or CARGO_HOME)"
            ),
            DriverError::Io { what, .. } => write!(f, "{what}"),
            DriverError::Failed { command, hint } => write!(f, "`{command}` failed; {hint}"),
            DriverError::NoChannel => {
                write!(f, "the embedded rust-toolchain.toml names no channel")
            }
        }
    }
}

impl std::error::Error for DriverError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DriverError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The pinned nightly, read from the embedded `rust-toolchain.toml`.
pub fn toolchain() -> Result<&'static str, DriverError> {
    let file = SOURCES
        .iter()
        .find(|(path, _)| *path == "rust-toolchain.toml")
        .map(|(_, text)| *text)
        .unwrap_or_default();
    file.lines()
        .filter_map(|line| line.trim().strip_prefix("channel"))
        .filter_map(|rest| rest.trim().strip_prefix('='))
        .map(|value| value.trim().trim_matches('"'))
        .next()
        .ok_or(DriverError::NoChannel)
}

/// Builds the driver if this version has not been built yet; returns its path.
pub fn ensure() -> Result<PathBuf, DriverError> {
    let toolchain = toolchain()?;
    let home = home()?;
    let dir = home.join(format!("driver-{:016x}", sources_hash()));
    let binary = dir.join("target/release/whirl-check-driver");
    if binary.is_file() {
        return Ok(binary);
    }
    // One installer and builder at a time: several `cargo whirl` runs started together (tests
    // in parallel, a CI step beside an editor's) would otherwise race rustup's downloads and
    // the driver's build. The lock is released when `_lock` drops (or the process ends).
    let _lock = lock(&home)?;
    if binary.is_file() {
        return Ok(binary);
    }
    install_toolchain(toolchain)?;
    for (path, text) in SOURCES {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|source| DriverError::Io {
                what: format!("could not create {}", parent.display()),
                source,
            })?;
        }
        std::fs::write(&target, text).map_err(|source| DriverError::Io {
            what: format!("could not write {}", target.display()),
            source,
        })?;
    }
    eprintln!("    Building the whirl checker on {toolchain} (once per version of cargo-whirl)");
    let mut build = Command::new("cargo");
    clean_env(&mut build);
    build
        .current_dir(&dir)
        .env("RUSTUP_TOOLCHAIN", toolchain)
        .args(["build", "--release", "--quiet"]);
    run(
        &mut build,
        "the driver's build failed; the output above says why",
    )?;
    Ok(binary)
}

/// Removes what an enclosing cargo (a test, a build script) set for its own rustc, so that the
/// commands run here pick their own toolchain and target directory.
pub fn clean_env(command: &mut Command) {
    for var in [
        "RUSTUP_TOOLCHAIN",
        "RUSTC",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTDOC",
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET_DIR",
        "CARGO_BUILD_RUSTC",
        "CARGO_BUILD_RUSTC_WRAPPER",
        "CARGO_MAKEFLAGS",
    ] {
        command.env_remove(var);
    }
}

/// Takes the exclusive lock on `home/.lock`, waiting for another `cargo whirl` that holds it.
fn lock(home: &Path) -> Result<std::fs::File, DriverError> {
    std::fs::create_dir_all(home).map_err(|source| DriverError::Io {
        what: format!("could not create {}", home.display()),
        source,
    })?;
    let path = home.join(".lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|source| DriverError::Io {
            what: format!("could not open {}", path.display()),
            source,
        })?;
    file.lock().map_err(|source| DriverError::Io {
        what: format!("could not lock {}", path.display()),
        source,
    })?;
    Ok(file)
}

fn home() -> Result<PathBuf, DriverError> {
    if let Some(dir) = std::env::var_os("WHIRL_CHECK_HOME") {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("CARGO_HOME") {
        return Ok(PathBuf::from(dir).join("whirl-check"));
    }
    std::env::var_os("HOME")
        .map(|home| Path::new(&home).join(".cargo/whirl-check"))
        .ok_or(DriverError::NoHome)
}

fn sources_hash() -> u64 {
    let mut hasher = DefaultHasher::new();
    SOURCES.hash(&mut hasher);
    hasher.finish()
}

/// Installs the nightly and its components with rustup, if any is missing.
fn install_toolchain(toolchain: &str) -> Result<(), DriverError> {
    let installed = Command::new("rustup")
        .args(["component", "list", "--installed", "--toolchain", toolchain])
        .output();
    let missing: Vec<&str> = match &installed {
        Ok(out) if out.status.success() => {
            let list = String::from_utf8_lossy(&out.stdout);
            COMPONENTS
                .iter()
                .copied()
                .filter(|c| !list.lines().any(|line| line.starts_with(c)))
                .collect()
        }
        _ => {
            eprintln!("  Installing {toolchain} with rustup (the checker's compiler)");
            let mut install = Command::new("rustup");
            // `--no-self-update`: installing a toolchain must not replace the user's rustup.
            install.args([
                "toolchain",
                "install",
                toolchain,
                "--profile",
                "minimal",
                "--no-self-update",
            ]);
            for c in COMPONENTS {
                install.args(["--component", c]);
            }
            return run(
                &mut install,
                "cargo whirl needs rustup to install the checker's nightly",
            );
        }
    };
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!("  Adding {} to {toolchain} with rustup", missing.join(", "));
    let mut add = Command::new("rustup");
    add.args(["component", "add", "--toolchain", toolchain])
        .args(&missing);
    run(
        &mut add,
        "cargo whirl needs rustup to add the checker's components",
    )
}

fn run(command: &mut Command, hint: &'static str) -> Result<(), DriverError> {
    let shown = format!("{command:?}").replace('"', "");
    let status = command.status().map_err(|source| DriverError::Io {
        what: format!("could not run {shown}"),
        source,
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(DriverError::Failed {
            command: shown,
            hint,
        })
    }
}
