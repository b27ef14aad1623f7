//! A crate's table of layers, as ARCHITECTURE.md (and a crate root's `//!` doc) draw it:
//! read into rows, checked for consistency, and turned into the rule the module graph is
//! held to.
//!
//! A table is a markdown table whose header starts `| layer | module |`; each row gives a
//! layer number, the backticked modules in it, what they are, and (in a fourth column) what
//! they may use:
//!
//! * `everything below`: any module of a lower layer;
//! * `nothing`: no other module;
//! * a list of backticked modules, which may end in `and below`: those modules, or, with `and
//!   below`, every module in a layer no higher than the highest one listed (and below the
//!   row's own).
//!
//! A row without the fourth column allows everything below it.

use std::collections::{BTreeSet, HashMap};

/// One row of a layer table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerRow {
    /// The layer number (higher layers use lower ones).
    pub layer: u32,
    /// The backticked module names of the module column.
    pub modules: Vec<String>,
    /// Every cell as written, trimmed: layer, module, what it is, uses.
    pub cells: Vec<String>,
}

impl LayerRow {
    /// The "uses" cell (empty if the table has no such column).
    pub fn uses(&self) -> &str {
        self.cells.get(3).map_or("", String::as_str)
    }
}

/// A table of layers (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LayerTable {
    /// The rows, as they appear.
    pub rows: Vec<LayerRow>,
}

/// The cells of a markdown table row, trimmed (`None` if `line` is not a row).
fn cells(line: &str) -> Option<Vec<String>> {
    let line = line.trim();
    let inner = line.strip_prefix('|')?.strip_suffix('|')?;
    Some(inner.split('|').map(|c| c.trim().to_owned()).collect())
}

/// The backticked names in `cell`.
fn backticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

impl LayerTable {
    /// Every layer table in markdown `text` (header `| layer | module | ...`), in order.
    pub fn all_in_markdown(text: &str) -> Vec<LayerTable> {
        let mut tables = Vec::new();
        let mut current: Option<LayerTable> = None;
        for line in text.lines() {
            let Some(row) = cells(line) else {
                tables.extend(current.take());
                continue;
            };
            if row.first().is_some_and(|c| c == "layer")
                && row.get(1).is_some_and(|c| c == "module")
            {
                tables.extend(current.take());
                current = Some(LayerTable::default());
                continue;
            }
            let Some(table) = current.as_mut() else {
                continue;
            };
            // The header's separator row (`|---|---|`) has no number; nor do stray rows.
            if let Ok(layer) = row[0].parse::<u32>() {
                table.rows.push(LayerRow {
                    layer,
                    modules: row.get(1).map(|c| backticked(c)).unwrap_or_default(),
                    cells: row,
                });
            }
        }
        tables.extend(current);
        tables
    }

    /// Every layer table in the `//!` doc of a crate root (`src/lib.rs`'s text).
    pub fn all_in_crate_doc(lib_rs: &str) -> Vec<LayerTable> {
        let doc: Vec<&str> = lib_rs
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("//!"))
            .map(|l| l.strip_prefix(' ').unwrap_or(l))
            .collect();
        LayerTable::all_in_markdown(&doc.join("\n"))
    }

    /// Module → layer.
    pub fn layers(&self) -> HashMap<String, u32> {
        self.rows
            .iter()
            .flat_map(|r| r.modules.iter().map(move |m| (m.clone(), r.layer)))
            .collect()
    }

    /// Every module the table names.
    pub fn modules(&self) -> BTreeSet<String> {
        self.rows.iter().flat_map(|r| r.modules.clone()).collect()
    }

    /// What is inconsistent in the table itself: a module in two rows, rows not in descending
    /// layer order, a "uses" cell naming an unknown module or one not below the row's layer.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let layers = self.layers();
        let mut seen = BTreeSet::new();
        for (i, row) in self.rows.iter().enumerate() {
            if row.modules.is_empty() {
                problems.push(format!("layer {} names no module", row.layer));
            }
            for m in &row.modules {
                if !seen.insert(m.clone()) {
                    problems.push(format!("module `{m}` is in two rows"));
                }
            }
            if i > 0 && self.rows[i - 1].layer < row.layer {
                problems.push(format!(
                    "layer {} is drawn below layer {}",
                    row.layer,
                    self.rows[i - 1].layer
                ));
            }
            for used in backticked(row.uses()) {
                match layers.get(&used) {
                    None => problems.push(format!(
                        "layer {} uses `{used}`, which is not in the table",
                        row.layer
                    )),
                    Some(&l) if l >= row.layer => problems.push(format!(
                        "layer {} uses `{used}` (layer {l}), which is not below it",
                        row.layer
                    )),
                    Some(_) => {}
                }
            }
        }
        problems
    }

    /// Whether module `from` may use module `to` (both top-level modules in the table).
    pub fn allows(&self, from: &str, to: &str) -> bool {
        let layers = self.layers();
        let (Some(&lf), Some(&lt)) = (layers.get(from), layers.get(to)) else {
            return false;
        };
        if lt >= lf {
            return false;
        }
        let Some(row) = self
            .rows
            .iter()
            .find(|r| r.modules.iter().any(|m| m == from))
        else {
            return false;
        };
        let uses = row.uses();
        if uses.is_empty() || uses == "everything below" {
            return true;
        }
        if uses == "nothing" {
            return false;
        }
        let listed = backticked(uses);
        if uses.ends_with("and below") {
            let ceiling = listed.iter().filter_map(|m| layers.get(m)).max();
            return ceiling.is_some_and(|&c| lt <= c);
        }
        listed.iter().any(|m| m == to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "\
intro
| layer | module | what it is | uses |
|---|---|---|---|
| 3 | `top` | the top | everything below |
| 2 | `mid` | the middle | `base` |
| 2 | `side` | beside it | `low` and below |
| 1 | `low` | low | `base` |
| 0 | `base` | the bottom | nothing |

| 1 | `not` | a stray row outside any layer table | |
";

    fn table() -> LayerTable {
        let mut all = LayerTable::all_in_markdown(TABLE);
        assert_eq!(all.len(), 1);
        all.remove(0)
    }

    #[test]
    fn rows_are_read_with_their_cells() {
        let t = table();
        assert_eq!(t.rows.len(), 5);
        assert_eq!(
            t.rows[0].cells,
            ["3", "`top`", "the top", "everything below"]
        );
        assert_eq!(t.layers()["side"], 2);
        assert!(!t.modules().contains("not"));
        assert!(t.problems().is_empty(), "{:?}", t.problems());
    }

    #[test]
    fn uses_lists_and_below_and_nothing() {
        let t = table();
        assert!(t.allows("top", "side"));
        assert!(t.allows("mid", "base"));
        assert!(!t.allows("mid", "low"), "only `base` is listed");
        assert!(!t.allows("mid", "side"), "the same layer");
        assert!(
            t.allows("side", "base"),
            "`low` and below: layer 1 and below"
        );
        assert!(!t.allows("side", "mid"));
        assert!(!t.allows("base", "low"), "up");
        assert!(!t.allows("low", "nowhere"));
    }

    #[test]
    fn inconsistent_tables_are_reported() {
        let text = "| layer | module |\n|---|---|\n| 1 | `a` | x | `b` |\n| 2 | `b` | y | `zz` |\n";
        let t = LayerTable::all_in_markdown(text).remove(0);
        let problems = t.problems().join("\n");
        assert!(
            problems.contains("layer 1 uses `b` (layer 2)"),
            "{problems}"
        );
        assert!(
            problems.contains("layer 2 is drawn below layer 1"),
            "{problems}"
        );
        assert!(
            problems.contains("`zz`, which is not in the table"),
            "{problems}"
        );
    }

    #[test]
    fn a_crate_doc_table_is_read_from_its_doc_lines() {
        let lib = TABLE
            .lines()
            .map(|l| format!("//! {l}"))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(LayerTable::all_in_crate_doc(&lib), [table()]);
    }
}
