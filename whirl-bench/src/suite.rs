//! Running the bench suite and gathering a run's metadata.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

use serde::Deserialize;

use crate::{Error, Figure, Result, RunMeta};

/// How many lines of the suite's stderr [`Error::SuiteFailed`] keeps.
const STDERR_TAIL_LINES: usize = 20;

/// What the bench suite's `--json` output holds (other fields are ignored).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct SuiteOutput {
    /// The suite's name, e.g. `"bench quick"`, if it says.
    #[serde(default)]
    pub suite: Option<String>,
    /// Every figure.
    pub figures: Vec<Figure>,
}

/// Parses the JSON document the bench binary prints with `--json`:
/// `{ "suite": "bench quick", "figures": [ { "name", "value", "unit", "higher_is_better" } ] }`.
///
/// The whole of `stdout` should be the document; failing that, the last line that parses as
/// one is used (should something print a line before it). Fails with [`Error::Parse`] when
/// there is no such document or it lists no figures.
pub fn parse_suite_output(stdout: &str) -> Result<SuiteOutput> {
    let what = "the bench suite's JSON output";
    let parsed = serde_json::from_str::<SuiteOutput>(stdout.trim()).or_else(|whole| {
        stdout
            .lines()
            .rev()
            .filter(|line| line.trim_start().starts_with('{'))
            .find_map(|line| serde_json::from_str::<SuiteOutput>(line).ok())
            .ok_or(whole)
    });
    let output = parsed.map_err(|e| Error::Parse {
        what: what.to_owned(),
        message: if stdout.trim().is_empty() {
            "the suite printed nothing on stdout".to_owned()
        } else {
            e.to_string()
        },
    })?;
    if output.figures.is_empty() {
        return Err(Error::Parse {
            what: what.to_owned(),
            message: "it lists no figures".to_owned(),
        });
    }
    Ok(output)
}

/// The command that runs the bench suite and prints its `--json` document.
#[derive(Clone, Debug)]
pub struct SuiteCommand {
    program: OsString,
    args: Vec<OsString>,
    dir: Option<PathBuf>,
    quick: bool,
}

impl SuiteCommand {
    /// `cargo run --release -q -p bench --bin bench -- [quick] --json`, run in
    /// `workspace_root` (`cargo` is `$CARGO` when set, as under `cargo run`). Cargo builds the
    /// bench binary first if need be.
    pub fn cargo(workspace_root: impl Into<PathBuf>, quick: bool) -> Self {
        let program = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut args: Vec<OsString> = ["run", "--release", "-q", "-p", "bench", "--bin", "bench"]
            .into_iter()
            .map(OsString::from)
            .collect();
        args.push("--".into());
        Self::finish(program, args, Some(workspace_root.into()), quick)
    }

    /// `BENCH_BIN [quick] --json`: a prebuilt bench binary (or anything printing the same
    /// document), run in the current directory.
    pub fn binary(path: impl Into<PathBuf>, quick: bool) -> Self {
        Self::finish(path.into().into_os_string(), Vec::new(), None, quick)
    }

    fn finish(
        program: OsString,
        mut args: Vec<OsString>,
        dir: Option<PathBuf>,
        quick: bool,
    ) -> Self {
        if quick {
            args.push("quick".into());
        }
        args.push("--json".into());
        SuiteCommand {
            program,
            args,
            dir,
            quick,
        }
    }

    /// The suite's name when its output does not say: `"bench quick"` or `"bench full"`.
    pub fn default_suite_name(&self) -> &'static str {
        if self.quick {
            "bench quick"
        } else {
            "bench full"
        }
    }

    /// The command line, for messages.
    pub fn display(&self) -> String {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Runs the suite, copying its stderr (progress, the human table) to this process's
    /// stderr as it comes, and parses its stdout with [`parse_suite_output`].
    ///
    /// Fails with [`Error::Spawn`] when it cannot be started, [`Error::SuiteFailed`] (with the
    /// end of its stderr) when it exits unsuccessfully, [`Error::Parse`] for bad output.
    pub fn run(&self) -> Result<SuiteOutput> {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(dir) = &self.dir {
            command.current_dir(dir);
        }
        let mut child = command.spawn().map_err(|source| Error::Spawn {
            command: self.display(),
            source,
        })?;
        let stderr = child.stderr.take();
        let tee = std::thread::spawn(move || {
            let mut tail = VecDeque::with_capacity(STDERR_TAIL_LINES);
            let Some(stderr) = stderr else { return tail };
            let mut reader = BufReader::new(stderr);
            let mut line = Vec::new();
            while reader.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
                let mut err = std::io::stderr().lock();
                // Losing the echo (a closed stderr) must not lose the run.
                let _ = err.write_all(&line);
                let _ = err.flush();
                if tail.len() == STDERR_TAIL_LINES {
                    tail.pop_front();
                }
                tail.push_back(String::from_utf8_lossy(&line).trim_end().to_owned());
                line.clear();
            }
            tail
        });
        let mut stdout = String::new();
        let read = match child.stdout.take() {
            Some(mut out) => out.read_to_string(&mut stdout).map(drop),
            None => Ok(()),
        };
        let status = child.wait()?;
        let tail = tee.join().unwrap_or_default();
        if !status.success() {
            return Err(Error::SuiteFailed {
                status,
                stderr_tail: Vec::from(tail).join("\n"),
            });
        }
        read?;
        parse_suite_output(&stdout)
    }
}

/// The cargo workspace root: `cargo locate-project --workspace` from the current directory,
/// else the workspace this crate was built in (if it still exists).
pub fn workspace_root() -> Option<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let located = Command::new(cargo)
        .args(["locate-project", "--workspace", "--message-format", "plain"])
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| {
            let manifest = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            manifest.parent().map(Path::to_path_buf)
        });
    located.or_else(|| {
        let built_in = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
        built_in
            .join("Cargo.toml")
            .is_file()
            .then(|| built_in.to_path_buf())
    })
}

/// Now, RFC 3339 in UTC to the second: `"2026-11-26T03:00:00Z"`.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

impl RunMeta {
    /// Gathers the metadata of a run of `suite` made now from the git checkout at `dir`:
    /// commit (`git rev-parse --short HEAD`, `"unknown"` outside git), dirty flag (tracked
    /// files changed: `git status --porcelain --untracked-files=no`; untracked files such as
    /// the history database itself do not count), host name, CPU count, date.
    pub fn gather(dir: &Path, suite: impl Into<String>) -> Self {
        let git = |args: &[&str]| {
            Command::new("git")
                .args(args)
                .current_dir(dir)
                .stderr(Stdio::null())
                .output()
                .ok()
                .filter(|out| out.status.success())
                .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        };
        let commit = git(&["rev-parse", "--short", "HEAD"])
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| "unknown".to_owned());
        let dirty =
            git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        RunMeta {
            commit,
            dirty,
            machine: hostname(),
            cpus: std::thread::available_parallelism()
                .map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX)),
            date: now_rfc3339(),
            suite: suite.into(),
        }
    }
}

/// The host name: the kernel's, else `hostname`'s, else `$HOSTNAME`, else `"unknown"`.
fn hostname() -> String {
    let non_empty = |s: String| Some(s.trim().to_owned()).filter(|s| !s.is_empty());
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .and_then(non_empty)
        .or_else(|| {
            Command::new("hostname")
                .stderr(Stdio::null())
                .output()
                .ok()
                .filter(|out| out.status.success())
                .and_then(|out| non_empty(String::from_utf8_lossy(&out.stdout).into_owned()))
        })
        .or_else(|| std::env::var("HOSTNAME").ok().and_then(non_empty))
        .unwrap_or_else(|| "unknown".to_owned())
}
