//! The checker's corpus, checked end to end: `cargo whirl check` on the workspace in
//! `corpus/`, whose every program under `src/bin` states what must be reported.
//!
//! * `// expect: A, B` at the top of a program: the names of everything reported for it (a
//!   static, a thread-local, or a known API), empty for a clean program;
//! * `//~ NAME` at the end of a line (in a program or in the `helpers` crate): a report of
//!   `NAME` must point at this line, and a report must point at no line without one.
//!
//! The first run builds the driver on its pinned nightly (installing it with rustup if
//! missing): a few minutes on a fresh machine.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// Runs `cargo whirl check --message-format json` with `args` on the corpus.
fn check(args: &[&str]) -> Output {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    Command::new(env!("CARGO_BIN_EXE_cargo-whirl"))
        .args(["whirl", "check", "--message-format", "json", "--keep-going"])
        .args(args)
        .current_dir(corpus_dir())
        .env("WHIRL_CHECK_HOME", tmp.join("whirl-check-home"))
        .env("CARGO_TARGET_DIR", tmp.join("corpus-target"))
        .output()
        .expect("cargo-whirl runs")
}

/// A report: the program, the name reported, and where its primary span is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Report {
    program: String,
    name: String,
    file: String,
    line: u64,
}

fn messages(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|v| v["reason"] == "compiler-message")
        .collect()
}

/// The name in a finding's message: the last path segment between the first backticks after
/// "reaches static", "reaches static mut", "reaches thread-local" or "calls".
fn reported_name(message: &str) -> Option<String> {
    let rest = message.strip_prefix("shared state: handler `")?;
    let (_, rest) = rest.split_once('`')?;
    let (_, rest) = rest.split_once('`')?;
    let (path, _) = rest.split_once('`')?;
    Some(path.rsplit("::").next()?.to_string())
}

fn reports(output: &Output) -> Vec<Report> {
    let mut reports = Vec::new();
    for value in messages(output) {
        let message = value["message"]["message"].as_str().unwrap_or_default();
        let Some(name) = reported_name(message) else {
            continue;
        };
        let primary = value["message"]["spans"]
            .as_array()
            .and_then(|spans| spans.iter().find(|s| s["is_primary"] == true))
            .expect("a finding has a primary span");
        reports.push(Report {
            program: value["target"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            name,
            file: primary["file_name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            line: primary["line_start"].as_u64().unwrap_or_default(),
        });
    }
    reports.sort();
    reports
}

/// `//~ NAME` annotations of a file: line → names.
fn annotations(file: &Path) -> BTreeMap<u64, BTreeSet<String>> {
    let text = std::fs::read_to_string(file).expect("corpus file");
    let mut found = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if let Some((_, names)) = line.split_once("//~") {
            let names = names
                .split(',')
                .map(|n| n.trim().to_string())
                .filter(|n| !n.is_empty());
            found.insert(i as u64 + 1, names.collect());
        }
    }
    found
}

/// Each program's `// expect:` line.
fn programs() -> BTreeMap<String, BTreeSet<String>> {
    let mut programs = BTreeMap::new();
    for entry in std::fs::read_dir(corpus_dir().join("src/bin")).expect("corpus programs") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("program");
        let expect = text
            .lines()
            .find_map(|l| l.strip_prefix("// expect:"))
            .unwrap_or_else(|| panic!("{} has no `// expect:` line", path.display()));
        let names = expect
            .split(',')
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty());
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_string();
        programs.insert(stem, names.collect());
    }
    programs
}

#[test]
fn every_violation_is_reported_where_it_is_and_nothing_else() {
    let programs = programs();
    let violating = programs.values().filter(|e| !e.is_empty()).count();
    let clean = programs.len() - violating;
    assert!(
        violating >= 20,
        "the corpus needs at least 20 violating programs, has {violating}"
    );
    assert!(
        clean >= 10,
        "the corpus needs at least 10 clean programs, has {clean}"
    );

    let output = check(&["--bins"]);
    let reports = reports(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "violations must fail the check:\n{stderr}"
    );
    assert!(
        !stderr.contains("panicked"),
        "the driver crashed:\n{stderr}"
    );

    // Per program, the names reported are exactly the expected ones.
    for (program, expected) in &programs {
        let got: BTreeSet<String> = reports
            .iter()
            .filter(|r| &r.program == program)
            .map(|r| r.name.clone())
            .collect();
        assert_eq!(
            &got, expected,
            "{program}: reported {got:?}, expected {expected:?}"
        );
    }
    // Every report points at an annotated line naming it.
    for report in &reports {
        let notes = annotations(&corpus_dir().join(&report.file));
        let names = notes.get(&report.line).cloned().unwrap_or_default();
        assert!(
            names.contains(&report.name),
            "{report:?} points at a line without `//~ {}`",
            report.name
        );
    }
    // Every annotation in a program is reported by that program.
    for program in programs.keys() {
        let file = format!("src/bin/{program}.rs");
        for (line, names) in annotations(&corpus_dir().join(&file)) {
            for name in names {
                assert!(
                    reports.iter().any(|r| &r.program == program
                        && r.file == file
                        && r.line == line
                        && r.name == name),
                    "{file}:{line}: `{name}` was not reported"
                );
            }
        }
    }
}

#[test]
fn a_report_reads_like_a_compiler_error_with_the_path() {
    let output = check(&["--bin", "v07_helper_other_module"]);
    assert!(!output.status.success());
    let finding = messages(&output)
        .into_iter()
        .find(|v| {
            v["message"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("shared state"))
        })
        .expect("a finding");
    let message = &finding["message"];
    assert_eq!(message["level"], "error");
    assert_eq!(
        message["message"],
        "shared state: handler `Server::request` reaches static `stats::REQUESTS`: `AtomicUsize`"
    );
    let rendered = message["rendered"].as_str().unwrap_or_default();
    // The access, the step from the handler to the helper, the declaration, the whole path.
    assert!(
        rendered.contains("src/bin/v07_helper_other_module.rs:11:9"),
        "{rendered}"
    );
    assert!(
        rendered.contains("`Server::request` calls `stats::count_request`"),
        "{rendered}"
    );
    assert!(rendered.contains("declared here"), "{rendered}");
    assert!(
        rendered.contains("call path: Server::request -> stats::count_request"),
        "{rendered}"
    );
    assert!(rendered.contains("is not `Freeze`"), "{rendered}");
}

#[test]
fn allowances_are_listed_with_their_reasons_and_clean_programs_pass() {
    let output = check(&[
        "--bin",
        "c01_consts",
        "--bin",
        "c03_tracing",
        "--bin",
        "c07_allow_static",
        "--bin",
        "c08_allow_function",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "clean programs must pass:\n{stderr}"
    );
    let notes: Vec<String> = messages(&output)
        .iter()
        .filter_map(|v| v["message"]["message"].as_str().map(str::to_string))
        .filter(|m| m.starts_with("whirl check `"))
        .collect();
    let all = notes.join("\n");
    assert!(
        all.contains("allowed: static `SERVED`: \"a statistic read by the operator only; no process reads it\""),
        "{all}"
    );
    assert!(
        all.contains(
            "allowed: fn `checkout`: \"the pool is built to be shared by every worker, like r2d2\""
        ),
        "{all}"
    );
    assert_eq!(notes.len(), 4, "one summary per program: {all}");
}
