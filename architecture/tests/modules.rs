//! The workspace's module graphs: no import cycles in any crate, and in the runtime, imports
//! point down the layers ARCHITECTURE.md declares.

use std::path::{Path, PathBuf};

use architecture::{crate_dirs, crate_roots, Graph, LayerTable};

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
    let report = read(krate).cycle_report();
    assert!(
        report.is_empty(),
        "{krate} has {} import cycle(s):\n{}",
        report.len(),
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

/// The rule is ARCHITECTURE.md's layer table, read whole: an import must point down, to a
/// module the importing row's "uses" column allows (see `layer_tables.rs` for the table's own
/// checks and for its copy in lib.rs).
#[test]
fn the_runtime_imports_point_down_the_layers_of_architecture_md() {
    let text = std::fs::read_to_string(workspace().join("ARCHITECTURE.md"))
        .expect("ARCHITECTURE.md at the workspace root");
    let tables = LayerTable::all_in_markdown(&text);
    assert_eq!(tables.len(), 1, "ARCHITECTURE.md must have one layer table");
    let problems = read("whirl-runtime").table_violations(&tables[0]);
    assert!(
        problems.is_empty(),
        "imports that ARCHITECTURE.md's layer table does not allow:\n{}",
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

/// Every crate root in the repository: each workspace member's and each crate's beside it
/// (`src/lib.rs`, `src/main.rs`, every binary under `src/bin/`).
#[test]
fn no_crate_in_the_repository_has_an_import_cycle() {
    let roots: Vec<PathBuf> = crate_dirs(&workspace())
        .iter()
        .flat_map(|dir| crate_roots(dir))
        .collect();
    assert!(
        roots
            .iter()
            .any(|r| r.ends_with("whirl-runtime/src/lib.rs")),
        "found no crate roots"
    );
    let report: Vec<String> = roots
        .iter()
        .flat_map(|root| {
            let graph = Graph::read(root).unwrap_or_else(|e| panic!("{}: {e}", root.display()));
            graph
                .cycle_report()
                .into_iter()
                .map(move |cycle| format!("{}:\n{cycle}", root.display()))
        })
        .collect();
    assert!(report.is_empty(), "import cycles:\n{}", report.join("\n\n"));
}
