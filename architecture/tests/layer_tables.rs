//! One table of layers: ARCHITECTURE.md's is the authoritative one, the copy in
//! `whirl-runtime/src/lib.rs`'s crate doc must match it row for row, and the rule the module
//! graph is held to (`the_runtime_imports_point_down_the_layers_of_architecture_md` in
//! `modules.rs`) is read from it: every module of the crate has a row, every row a module, and
//! the table is consistent with itself.

use std::path::{Path, PathBuf};

use architecture::{Graph, LayerTable};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_owned()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(workspace().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The one layer table `tables` must hold, from `source`.
fn only(mut tables: Vec<LayerTable>, source: &str) -> LayerTable {
    assert_eq!(
        tables.len(),
        1,
        "{source} must hold exactly one table headed `| layer | module | ...`"
    );
    let table = tables.remove(0);
    assert!(!table.rows.is_empty(), "{source}'s layer table has no rows");
    table
}

#[test]
fn the_layer_table_of_lib_rs_is_the_one_in_architecture_md() {
    let documented = only(
        LayerTable::all_in_markdown(&read("ARCHITECTURE.md")),
        "ARCHITECTURE.md",
    );
    let copy = only(
        LayerTable::all_in_crate_doc(&read("whirl-runtime/src/lib.rs")),
        "whirl-runtime/src/lib.rs's crate doc",
    );
    let show = |t: &LayerTable| {
        t.rows
            .iter()
            .map(|r| format!("| {} |", r.cells.join(" | ")))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        documented == copy,
        "the layer table in whirl-runtime/src/lib.rs differs from ARCHITECTURE.md's (the \
         authoritative one; copy it row for row):\nARCHITECTURE.md:\n{}\n\nlib.rs:\n{}",
        show(&documented),
        show(&copy)
    );
}

#[test]
fn the_documented_layers_are_consistent_and_name_exactly_the_runtime_s_modules() {
    let table = only(
        LayerTable::all_in_markdown(&read("ARCHITECTURE.md")),
        "ARCHITECTURE.md",
    );
    let problems = table.problems();
    assert!(
        problems.is_empty(),
        "ARCHITECTURE.md's layer table:\n{}",
        problems.join("\n")
    );
    let graph = Graph::read(&workspace().join("whirl-runtime/src/lib.rs"))
        .unwrap_or_else(|e| panic!("whirl-runtime: {e}"));
    let actual: Vec<String> = graph.top_modules().into_iter().map(str::to_owned).collect();
    let documented: Vec<String> = table.modules().into_iter().collect();
    assert_eq!(
        documented, actual,
        "the modules ARCHITECTURE.md places in layers (left) are not the modules of \
         whirl-runtime (right)"
    );
}

/// The rule is the table's: an import the "uses" column does not allow fails, even when it
/// points down.
#[test]
fn the_enforced_rule_is_read_from_the_uses_column() {
    let table = only(
        LayerTable::all_in_markdown(&read("ARCHITECTURE.md")),
        "ARCHITECTURE.md",
    );
    // `io` (layer 7) may use `isolation` only, not `time` (layer 2), although `time` is below.
    assert!(table.allows("io", "isolation"));
    assert!(!table.allows("io", "time"));
    // `supervision` may use `process` and below, `runtime` everything below.
    assert!(table.allows("supervision", "sync"));
    assert!(!table.allows("supervision", "routing"), "the same layer");
    assert!(table.allows("runtime", "supervision"));
    assert!(!table.allows("process", "supervision"), "up");
}
