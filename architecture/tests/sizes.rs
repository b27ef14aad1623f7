//! The size limits of the workspace's rules, held for every crate's sources (`src/`, binaries
//! included) in the workspace and beside it: no source file over 800 lines of code (comments,
//! blank lines and test modules not counted) and no function over 150 lines (see
//! `architecture::sizes` for how each is measured).

use std::path::{Path, PathBuf};

use architecture::crate_dirs;
use architecture::sizes::{measure_tree, FileSize};

const MAX_CODE_LINES: usize = 800;
const MAX_FN_LINES: usize = 150;

fn sources() -> Vec<FileSize> {
    let root: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf();
    let dirs = crate_dirs(&root);
    assert!(
        dirs.iter().any(|d| d.ends_with("whirl-runtime")),
        "found no crates under {}",
        root.display()
    );
    dirs.iter()
        .flat_map(|dir| {
            measure_tree(&dir.join("src")).unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        })
        .collect()
}

#[test]
fn no_source_file_is_over_800_lines_of_code() {
    let over: Vec<String> = sources()
        .into_iter()
        .filter(|f| f.code_lines > MAX_CODE_LINES)
        .map(|f| {
            format!(
                "{}: {} lines of code ({} in all)",
                f.path.display(),
                f.code_lines,
                f.total_lines
            )
        })
        .collect();
    assert!(
        over.is_empty(),
        "files over {MAX_CODE_LINES} lines of code; split them by concern:\n{}",
        over.join("\n")
    );
}

#[test]
fn no_function_is_over_150_lines() {
    let over: Vec<String> = sources()
        .iter()
        .flat_map(|f| {
            f.functions
                .iter()
                .filter(|g| g.lines > MAX_FN_LINES)
                .map(move |g| {
                    format!(
                        "{}:{}: `{}`, {} lines",
                        f.path.display(),
                        g.line,
                        g.name,
                        g.lines
                    )
                })
        })
        .collect();
    assert!(
        over.is_empty(),
        "functions over {MAX_FN_LINES} lines; give their steps names:\n{}",
        over.join("\n")
    );
}
