//! The workspace's module graphs: no import cycles in any crate, and in the runtime, imports
//! point down the layers ARCHITECTURE.md declares.

use std::path::{Path, PathBuf};

use architecture::{describe, layers_from_markdown, Graph};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_owned()
}

fn read(krate: &str) -> Graph {
    let root = workspace().join(krate).join("src/lib.rs");
    Graph::read(&root).unwrap_or_else(|e| panic!("{krate}: {e}"))
}

fn assert_acyclic(krate: &str) {
    let graph = read(krate);
    let cycles = graph.cycles();
    let report: Vec<String> = cycles
        .iter()
        .map(|edges| {
            edges
                .iter()
                .map(|((a, b), refs)| {
                    format!(
                        "  {} -> {}: {}",
                        graph.modules[*a].name(),
                        graph.modules[*b].name(),
                        describe(refs)
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    assert!(
        cycles.is_empty(),
        "{krate} has {} import cycle(s):\n{}",
        cycles.len(),
        report.join("\n\n")
    );
}

#[test]
fn the_runtime_has_no_import_cycles() {
    assert_acyclic("whirl-runtime");
}

#[test]
fn the_macros_have_no_import_cycles() {
    assert_acyclic("whirl-macros");
}

#[test]
fn the_facade_has_no_import_cycles() {
    assert_acyclic("whirl");
}

#[test]
fn distribution_has_no_import_cycles() {
    assert_acyclic("whirl-dist");
}

#[test]
fn http_and_the_benchmark_recorder_have_no_import_cycles() {
    assert_acyclic("whirl-http");
    assert_acyclic("whirl-bench");
}

#[test]
fn declarative_assembly_has_no_import_cycles() {
    assert_acyclic("whirl-config");
}

#[test]
fn the_runtime_imports_point_down_the_layers_of_architecture_md() {
    let text = std::fs::read_to_string(workspace().join("ARCHITECTURE.md"))
        .expect("ARCHITECTURE.md at the workspace root");
    let layers = layers_from_markdown(&text);
    assert!(!layers.is_empty(), "ARCHITECTURE.md has no layer table");
    let problems = read("whirl-runtime").layer_violations(&layers);
    assert!(
        problems.is_empty(),
        "imports that do not point down the layers:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_runtime_and_distribution_module_teaches_its_job() {
    let undocumented: Vec<String> = [
        "whirl-runtime",
        "whirl-dist",
        "whirl-http",
        "whirl-bench",
        "whirl-config",
        "whirl",
    ]
    .into_iter()
    .flat_map(|krate| read(krate).modules)
    .filter(|m| !m.has_doc)
    .map(|m| format!("{} ({})", m.name(), m.file.display()))
    .collect();
    assert!(
        undocumented.is_empty(),
        "modules without a `//!` doc:\n{}",
        undocumented.join("\n")
    );
}
