//! `cargo whirl check`: runs `cargo check` with the driver on the workspace's crates, streams
//! what it says, and sums up.
//!
//! Cargo runs the driver as `RUSTC_WORKSPACE_WRAPPER`, so that only the workspace's own crates
//! are checked; the driver learns which crates those are (to follow calls between them) from
//! `WHIRL_CHECK_WORKSPACE`. It is also `RUSTC_WRAPPER`, so that dependencies keep their
//! functions' MIR in their metadata (`-Zalways-encode-mir`): the walk follows their generic
//! code back into the workspace. The build goes to `target/whirl-check/build`, apart from the
//! stable build's artifacts (so those flags never touch the user's own builds).
//!
//! Cargo is always asked for JSON; human output is the `rendered` text of each diagnostic,
//! JSON output (`--message-format json...`) is cargo's own lines, unchanged.

use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

use crate::driver::{self, DriverError};

/// What the driver's messages start with (see the driver's `report` module).
const FINDING: &str = "shared state: ";
const SUMMARY: &str = "whirl check `";

/// Runs the check with `cargo_args` passed to `cargo check`.
pub fn run(driver_path: &Path, cargo_args: &[String]) -> Result<ExitCode, DriverError> {
    let toolchain = driver::toolchain()?;
    let (json, cargo_args) = split_message_format(cargo_args);
    let metadata = metadata(&cargo_args)?;
    let workspace: Vec<String> = metadata
        .workspace_packages()
        .iter()
        .flat_map(|package| package.targets.iter().map(|t| t.name.replace('-', "_")))
        .collect();
    let target_dir = metadata.target_directory.as_std_path().join("whirl-check");
    remove_older_builds(&target_dir);

    let mut command = Command::new("cargo");
    driver::clean_env(&mut command);
    command
        .env("RUSTUP_TOOLCHAIN", toolchain)
        .env("RUSTC_WORKSPACE_WRAPPER", driver_path)
        .env("RUSTC_WRAPPER", driver_path)
        .env("WHIRL_CHECK_DEPENDENCIES", "1")
        .env("WHIRL_CHECK_WORKSPACE", workspace.join(","))
        .env("WHIRL_CHECK_ALLOWS_DIR", target_dir.join("allows"))
        .env("CARGO_TARGET_DIR", target_dir.join(BUILD_DIR))
        .arg("check")
        .arg(format!(
            "--message-format={}",
            json.as_deref()
                .unwrap_or(if std::io::stderr().is_terminal() {
                    "json-diagnostic-rendered-ansi"
                } else {
                    "json"
                })
        ))
        .args(&cargo_args)
        .stdout(Stdio::piped());
    let mut child = command.spawn().map_err(|source| DriverError::Io {
        what: "could not run cargo".into(),
        source,
    })?;
    let mut tally = Tally::default();
    if let Some(stdout) = child.stdout.take() {
        let out = std::io::stdout();
        let mut out = out.lock();
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            tally.read(&line);
            if json.is_some() {
                let _ = writeln!(out, "{line}");
            } else if let Some(rendered) = rendered(&line) {
                eprint!("{rendered}");
            }
        }
    }
    let status = child.wait().map_err(|source| DriverError::Io {
        what: "cargo did not finish".into(),
        source,
    })?;
    if json.is_none() {
        eprintln!("{}", tally.line());
    }
    Ok(match status.code() {
        Some(0) if tally.findings == 0 => ExitCode::SUCCESS,
        Some(0) => ExitCode::FAILURE,
        Some(code) => ExitCode::from(code.clamp(1, 255) as u8),
        None => ExitCode::FAILURE,
    })
}

/// Where, under `target/whirl-check`, cargo builds: renamed when what cargo cannot see
/// changes (the flags the driver gives dependencies: their metadata holds their MIR since this
/// one), so that everything is built again.
const BUILD_DIR: &str = "build";

/// Removes what older versions of `cargo whirl` built in `check_dir` (their build directories
/// straight under it): everything but [`BUILD_DIR`] and the lists of `#[allow_shared]`.
fn remove_older_builds(check_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(check_dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name() == BUILD_DIR || entry.file_name() == "allows" {
            continue;
        }
        let path = entry.path();
        let _ = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
    }
}

/// Takes `--message-format X` out of the arguments: `Some(X)` if it asks for JSON.
fn split_message_format(args: &[String]) -> (Option<String>, Vec<String>) {
    let mut json = None;
    let mut rest = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let value = if arg == "--message-format" {
            iter.next().cloned()
        } else if let Some(value) = arg.strip_prefix("--message-format=") {
            Some(value.to_string())
        } else {
            rest.push(arg.clone());
            continue;
        };
        if let Some(value) = value.filter(|v| v.starts_with("json")) {
            json = Some(value);
        }
    }
    (json, rest)
}

/// `cargo metadata` for the workspace the arguments select (`--manifest-path` is honoured).
fn metadata(cargo_args: &[String]) -> Result<cargo_metadata::Metadata, DriverError> {
    let mut command = cargo_metadata::MetadataCommand::new();
    command.no_deps();
    let mut iter = cargo_args.iter();
    while let Some(arg) = iter.next() {
        if arg == "--manifest-path" {
            if let Some(path) = iter.next() {
                command.manifest_path(path);
            }
        } else if let Some(path) = arg.strip_prefix("--manifest-path=") {
            command.manifest_path(path);
        }
    }
    command.exec().map_err(|err| DriverError::Io {
        what: format!("`cargo metadata` failed: {err}"),
        source: std::io::Error::other(err.to_string()),
    })
}

/// The human text of one of cargo's JSON lines, if it carries any.
fn rendered(line: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    if value.get("reason")?.as_str()? != "compiler-message" {
        return None;
    }
    value
        .get("message")?
        .get("rendered")?
        .as_str()
        .map(str::to_string)
}

/// What the run found, over all crates.
#[derive(Default)]
struct Tally {
    findings: usize,
    crates: Vec<String>,
    allowed: Vec<String>,
}

impl Tally {
    fn read(&mut self, line: &str) {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else {
            return;
        };
        let Some(message) = value
            .get("message")
            .and_then(|m| m.get("message"))
            .and_then(|m| m.as_str())
        else {
            return;
        };
        if message.starts_with(FINDING) {
            self.findings += 1;
        } else if let Some(rest) = message.strip_prefix(SUMMARY) {
            if let Some((name, _)) = rest.split_once('`') {
                self.crates.push(name.to_string());
            }
            for allowed in message
                .lines()
                .filter_map(|l| l.trim().strip_prefix("allowed: "))
            {
                if !self.allowed.iter().any(|a| a == allowed) {
                    self.allowed.push(allowed.to_string());
                }
            }
        }
    }

    fn line(&self) -> String {
        let mut line = format!(
            "whirl check: {} shared-state access{} in {} checked crate{}",
            self.findings,
            if self.findings == 1 { "" } else { "es" },
            self.crates.len(),
            if self.crates.len() == 1 { "" } else { "s" },
        );
        line.push_str(&format!("; {} allowed", self.allowed.len()));
        for allowed in &self.allowed {
            line.push_str(&format!("\n  allowed: {allowed}"));
        }
        line
    }
}
