//! The driver's sources, read as text (the driver itself builds only on its pinned nightly):
//! its modules import one another one way, no file or function is over the workspace's size
//! limits, and every file is embedded in `cargo-whirl` (which builds the driver from the copy
//! it carries).
//!
//! The module graph and the measures are the `architecture` crate's, as for the runtime: an
//! edge `a → b` is any path in `a` naming an item defined in `b`, a `use crate::b::...` or a
//! path written inline (`crate::b::f(...)`).

use std::path::{Path, PathBuf};

use architecture::sizes::measure_tree;
use architecture::Graph;

const MAX_CODE_LINES: usize = 800;
const MAX_FN_LINES: usize = 150;

fn driver_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("driver/src")
}

#[test]
fn the_driver_has_no_import_cycles() {
    let graph = Graph::read(&driver_src().join("main.rs")).expect("the driver's sources parse");
    assert!(
        graph.modules.len() > 1,
        "the driver's modules were not found"
    );
    let report = graph.cycle_report();
    assert!(
        report.is_empty(),
        "the driver has {} import cycle(s); move what both sides use to a lower module:\n{}",
        report.len(),
        report.join("\n\n")
    );
}

#[test]
fn no_driver_file_or_function_is_over_the_size_limits() {
    let files = measure_tree(&driver_src()).expect("the driver's sources parse");
    let mut over = Vec::new();
    for file in &files {
        if file.code_lines > MAX_CODE_LINES {
            over.push(format!(
                "{}: {} lines of code (limit {MAX_CODE_LINES}); split it by concern",
                file.path.display(),
                file.code_lines
            ));
        }
        for function in file.functions.iter().filter(|f| f.lines > MAX_FN_LINES) {
            over.push(format!(
                "{}:{}: `{}`, {} lines (limit {MAX_FN_LINES}); give its steps names",
                file.path.display(),
                function.line,
                function.name,
                function.lines
            ));
        }
    }
    assert!(over.is_empty(), "{}", over.join("\n"));
}

#[test]
fn every_driver_file_is_embedded() {
    let embedding =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/driver.rs"))
            .expect("src/driver.rs");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(driver_src()).expect("driver/src") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "rs") {
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            let included = format!("include_str!(\"../driver/src/{name}\")");
            if !embedding.contains(&included) {
                missing.push(name.to_owned());
            }
        }
    }
    assert!(
        missing.is_empty(),
        "driver files not in `SOURCES` (src/driver.rs), so not built by `cargo whirl`: {missing:?}"
    );
}
