//! Every `unsafe` block and `unsafe impl` in the workspace's library code carries a
//! `// SAFETY:` comment that names the invariant it relies on (`I9`, ...), and that invariant
//! is defined in ARCHITECTURE.md; every `unsafe fn` and `unsafe trait` documents its contract
//! in a `# Safety` section.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_owned()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The invariants ARCHITECTURE.md defines: its `**I<n> — ...**` headings.
fn defined_invariants() -> BTreeSet<String> {
    let text = std::fs::read_to_string(workspace().join("ARCHITECTURE.md"))
        .expect("ARCHITECTURE.md at the workspace root");
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix("- **I"))
        .filter_map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            (!digits.is_empty()).then(|| format!("I{digits}"))
        })
        .collect()
}

/// The code of a line: no string literal, no `//` comment.
fn code_of(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '/' if chars.peek() == Some(&'/') => break,
            _ => out.push(c),
        }
    }
    out
}

/// The comment lines right above the statement or item that line `i` belongs to: attributes
/// (even multi-line ones), blank lines, a macro repetition's `$(`, and the earlier lines of
/// the same statement are skipped.
fn comment_above(lines: &[&str], i: usize) -> String {
    let mut text = Vec::new();
    let mut j = i;
    while j > 0 {
        j -= 1;
        let l = lines[j].trim();
        if l.starts_with("//") {
            text.push(l);
            continue;
        }
        if !text.is_empty() {
            break;
        }
        if l.is_empty() || l.starts_with("#[") || l == "$(" {
            continue;
        }
        if l.ends_with(")]") || l.ends_with("),") || l.starts_with("note =") {
            // Inside a multi-line attribute: climb to its `#[`.
            while j > 0 && !lines[j].trim_start().starts_with("#[") {
                j -= 1;
            }
            continue;
        }
        let ends_statement = l.ends_with(';') || l.ends_with('{') || l.ends_with('}');
        if ends_statement {
            break;
        }
        // An earlier line of the same statement (`let x = y` / `.method(|b| unsafe { .. })`).
    }
    text.reverse();
    text.join("\n")
}

fn invariant_named(comment: &str) -> Option<String> {
    let bytes = comment.as_bytes();
    (0..bytes.len()).find_map(|k| {
        let boundary = k == 0 || !bytes[k - 1].is_ascii_alphanumeric();
        if boundary && bytes[k] == b'I' {
            let digits: String = comment[k + 1..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            (!digits.is_empty()).then(|| format!("I{digits}"))
        } else {
            None
        }
    })
}

#[test]
fn every_unsafe_names_a_defined_invariant() {
    let defined = defined_invariants();
    assert!(!defined.is_empty(), "ARCHITECTURE.md defines no invariants");
    let mut files = Vec::new();
    for krate in [
        "whirl-runtime/src",
        "whirl-macros/src",
        "whirl/src",
        "whirl-dist/src",
        "examples",
    ] {
        rust_files(&workspace().join(krate), &mut files);
    }
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable");
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let trimmed = line.trim_start();
            if trimmed.starts_with("//") {
                continue;
            }
            let code = code_of(line);
            let at = format!("{}:{}", file.display(), i + 1);
            let words: Vec<&str> = code
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .filter(|w| !w.is_empty())
                .collect();
            let Some(pos) = words.iter().position(|w| *w == "unsafe") else {
                continue;
            };
            let next = words.get(pos + 1).copied().unwrap_or("");
            let after = words.get(pos + 2).copied().unwrap_or("");
            let fn_pointer_type = next == "fn" && code.contains("unsafe fn(")
                || next == "extern" && !code.contains("extern \"C\" {") && after != "crate";
            if fn_pointer_type {
                // `unsafe fn(..)` / `unsafe extern "C" fn(..)`: a type, not unsafe code.
                continue;
            }
            if code.contains("unsafe(") {
                // `#[process(unsafe(shares_state = ...))]`: an attribute, not unsafe code.
                continue;
            }
            checked += 1;
            let comment = comment_above(&lines, i);
            if next == "fn" || next == "trait" {
                if !comment.contains("# Safety") {
                    problems.push(format!("{at}: `unsafe {next}` without a `# Safety` doc"));
                }
                continue;
            }
            // `unsafe {` may follow code on the same line (`let x = unsafe { ... }`): the comment
            // is above that line either way.
            if !comment.contains("SAFETY:") {
                problems.push(format!("{at}: `unsafe` without a `// SAFETY:` comment"));
                continue;
            }
            match invariant_named(&comment) {
                None => problems.push(format!(
                    "{at}: the SAFETY comment names no invariant (`I<n>` from ARCHITECTURE.md)"
                )),
                Some(inv) if !defined.contains(&inv) => problems.push(format!(
                    "{at}: the SAFETY comment names {inv}, which ARCHITECTURE.md does not define"
                )),
                Some(_) => {}
            }
        }
    }
    assert!(
        checked > 0,
        "no unsafe code found: is the scan looking in the right place?"
    );
    assert!(
        problems.is_empty(),
        "{} unsafe sites without a named invariant:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
