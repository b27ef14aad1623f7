//! The module graph of a crate, read from its source, for the architecture tests.
//!
//! A node is a module with its own file (inline modules belong to their file's node). An
//! edge `a → b` means code in `a` names an item *defined* in `b`: a path in a type, an
//! expression, a pattern, a trait bound or an `impl` header, resolved through `use` bindings
//! and re-exports to the module that defines the item. Re-exports themselves (`pub use`) are
//! aliases, not dependencies: a folder's `mod.rs` that lists what its files offer does not
//! depend on them. Method calls resolve by type, which the source does not show, so they add no
//! edge; the types they go through do.
//!
//! Test code (`#[cfg(test)]`, `#[cfg(all(test, ...))]`) is left out: tests are clients of the
//! layers, not part of them.
//!
//! [`Graph::cycles`] finds import cycles (strongly connected components);
//! [`Graph::layer_violations`] checks edges against a table of layers.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

pub mod layers;
pub mod sizes;

pub use layers::{LayerRow, LayerTable};

/// Why a crate's source could not be read.
#[derive(Debug)]
pub enum Error {
    /// A file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A file is not valid Rust.
    Parse {
        /// The file.
        path: PathBuf,
        /// The error.
        source: syn::Error,
    },
    /// A `mod name;` with neither `name.rs` nor `name/mod.rs` beside it.
    MissingModule {
        /// The module's path.
        module: String,
        /// The file declaring it.
        declared_in: PathBuf,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            Error::Parse { path, source } => {
                write!(f, "cannot parse {}: {source}", path.display())
            }
            Error::MissingModule {
                module,
                declared_in,
            } => write!(
                f,
                "module `{module}`, declared in {}, has no file",
                declared_in.display()
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Parse { source, .. } => Some(source),
            Error::MissingModule { .. } => None,
        }
    }
}

/// A module of the crate.
#[derive(Debug)]
pub struct Module {
    /// Its path from the crate root (`["group", "worker"]`; empty for the root).
    pub path: Vec<String>,
    /// The file it is written in.
    pub file: PathBuf,
    /// Whether the file starts with a `//!` module doc (inline modules: whether they have one).
    pub has_doc: bool,
    /// The module whose file it is written in (itself for a file module).
    file_node: usize,
    parent: Option<usize>,
    children: HashMap<String, usize>,
    /// Names of the items defined here (types, traits, functions, constants...).
    defs: BTreeSet<String>,
    /// `use` bindings: the name in scope and the path it stands for.
    uses: HashMap<String, Vec<String>>,
    /// `use path::*` imports.
    globs: Vec<Vec<String>>,
    /// Paths named by the code, with the line each appears on.
    refs: Vec<(Vec<String>, usize)>,
}

impl Module {
    /// `crate::group::worker`.
    pub fn name(&self) -> String {
        if self.path.is_empty() {
            "crate".to_owned()
        } else {
            format!("crate::{}", self.path.join("::"))
        }
    }
}

/// An import cycle: the edges among a set of file modules that reach one another.
pub type Cycle<'a> = Vec<((usize, usize), &'a [Reference])>;

/// One use of an item of another module: the path as written and where.
#[derive(Clone, Debug)]
pub struct Reference {
    /// The path as written (`super::shared::GroupShared`).
    pub path: String,
    /// The file and line.
    pub at: String,
}

/// The module graph of one crate.
#[derive(Debug)]
pub struct Graph {
    /// Every module, the root first.
    pub modules: Vec<Module>,
    /// File module → file module, with the references that make the edge.
    pub edges: BTreeMap<(usize, usize), Vec<Reference>>,
}

/// What a path leads to.
#[derive(Clone, Copy)]
enum Target {
    Module(usize),
    Item(usize),
}

impl Target {
    fn module(self) -> usize {
        match self {
            Target::Module(m) | Target::Item(m) => m,
        }
    }
}

/// Whether the attributes say "only when testing" (or under the loom model checker).
pub(crate) fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && {
            let tokens = a.meta.require_list().map(|l| l.tokens.to_string());
            tokens.is_ok_and(|t| {
                t.split(|c: char| !c.is_alphanumeric() && c != '_')
                    .any(|w| w == "test" || w == "loom")
            })
        }
    })
}

fn documented(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| a.path().is_ident("doc"))
}

/// Flattens a `use` tree into (name bound, path) pairs and glob paths.
fn flatten_use(
    tree: &syn::UseTree,
    prefix: &mut Vec<String>,
    out: &mut Vec<(String, Vec<String>)>,
    globs: &mut Vec<Vec<String>>,
) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten_use(&p.tree, prefix, out, globs);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            let mut path = prefix.clone();
            if name == "self" {
                let bound = prefix.last().cloned().unwrap_or_default();
                out.push((bound, path));
            } else {
                path.push(name.clone());
                out.push((name, path));
            }
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            if r.ident != "self" {
                path.push(r.ident.to_string());
            }
            out.push((r.rename.to_string(), path));
        }
        syn::UseTree::Glob(_) => globs.push(prefix.clone()),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                flatten_use(t, prefix, out, globs);
            }
        }
    }
}

/// Collects the paths code names, skipping `use` items, nested modules and test code.
struct Refs<'a> {
    out: &'a mut Vec<(Vec<String>, usize)>,
}

impl<'ast> Visit<'ast> for Refs<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        match item {
            syn::Item::Use(_) | syn::Item::Mod(_) => {}
            _ if test_only(item_attrs(item)) => {}
            _ => syn::visit::visit_item(self, item),
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = match item {
            syn::ImplItem::Fn(f) => &f.attrs,
            syn::ImplItem::Const(c) => &c.attrs,
            syn::ImplItem::Type(t) => &t.attrs,
            _ => return syn::visit::visit_impl_item(self, item),
        };
        if !test_only(attrs) {
            syn::visit::visit_impl_item(self, item);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let line = path
            .segments
            .first()
            .map_or(0, |s| s.ident.span().start().line);
        self.out.push((segments, line));
        syn::visit::visit_path(self, path);
    }
}

pub(crate) fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::ExternCrate(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::ForeignMod(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::TraitAlias(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

fn item_name(item: &syn::Item) -> Option<String> {
    let ident = match item {
        syn::Item::Const(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::ExternCrate(i) => &i.ident,
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Macro(i) => i.ident.as_ref()?,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        syn::Item::TraitAlias(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        syn::Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
}

struct Reader {
    modules: Vec<Module>,
}

/// Where a module being read sits: its path, its file, the folder its `mod name;` files live
/// in, its parent, the file module it is written in (`None`: its own), and whether it has a doc.
struct Place<'a> {
    path: Vec<String>,
    file: &'a Path,
    dir: &'a Path,
    parent: Option<usize>,
    file_node: Option<usize>,
    has_doc: bool,
}

impl Reader {
    fn parse(path: &Path) -> Result<syn::File, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        syn::parse_file(&text).map_err(|source| Error::Parse {
            path: path.to_owned(),
            source,
        })
    }

    /// Adds a module and everything below it.
    fn add(&mut self, at: Place<'_>, items: &[syn::Item]) -> Result<usize, Error> {
        let Place {
            path,
            file,
            dir,
            parent,
            file_node,
            has_doc,
        } = at;
        let me = self.modules.len();
        let file_node = file_node.unwrap_or(me);
        self.modules.push(Module {
            path: path.clone(),
            file: file.to_owned(),
            has_doc,
            file_node,
            parent,
            children: HashMap::new(),
            defs: BTreeSet::new(),
            uses: HashMap::new(),
            globs: Vec::new(),
            refs: Vec::new(),
        });
        let mut refs = Vec::new();
        for item in items {
            if test_only(item_attrs(item)) {
                continue;
            }
            match item {
                syn::Item::Mod(m) => {
                    let name = m.ident.to_string();
                    let mut child_path = path.clone();
                    child_path.push(name.clone());
                    let child = match &m.content {
                        Some((_, inner)) => self.add(
                            Place {
                                path: child_path,
                                file,
                                dir: &dir.join(&name),
                                parent: Some(me),
                                file_node: Some(file_node),
                                has_doc: documented(&m.attrs),
                            },
                            inner,
                        )?,
                        None => {
                            let flat = dir.join(format!("{name}.rs"));
                            let nested = dir.join(&name).join("mod.rs");
                            let child_file = if flat.exists() {
                                flat
                            } else if nested.exists() {
                                nested
                            } else {
                                return Err(Error::MissingModule {
                                    module: child_path.join("::"),
                                    declared_in: file.to_owned(),
                                });
                            };
                            let parsed = Self::parse(&child_file)?;
                            self.add(
                                Place {
                                    path: child_path,
                                    file: &child_file,
                                    dir: &dir.join(&name),
                                    parent: Some(me),
                                    file_node: None,
                                    has_doc: documented(&parsed.attrs),
                                },
                                &parsed.items,
                            )?
                        }
                    };
                    self.modules[me].children.insert(name, child);
                }
                syn::Item::Use(u) => {
                    let mut bindings = Vec::new();
                    let mut globs = Vec::new();
                    flatten_use(&u.tree, &mut Vec::new(), &mut bindings, &mut globs);
                    let module = &mut self.modules[me];
                    module.uses.extend(bindings);
                    module.globs.extend(globs);
                }
                other => {
                    if let Some(name) = item_name(other) {
                        self.modules[me].defs.insert(name);
                    }
                    Refs { out: &mut refs }.visit_item(other);
                }
            }
        }
        self.modules[me].refs = refs;
        Ok(me)
    }
}

impl Graph {
    /// Reads the crate whose root file is `root` (`src/lib.rs`).
    pub fn read(root: &Path) -> Result<Graph, Error> {
        let parsed = Reader::parse(root)?;
        let dir = root.parent().unwrap_or(Path::new("."));
        let mut reader = Reader {
            modules: Vec::new(),
        };
        reader.add(
            Place {
                path: Vec::new(),
                file: root,
                dir,
                parent: None,
                file_node: None,
                has_doc: documented(&parsed.attrs),
            },
            &parsed.items,
        )?;
        let mut graph = Graph {
            modules: reader.modules,
            edges: BTreeMap::new(),
        };
        graph.link();
        Ok(graph)
    }

    fn link(&mut self) {
        let mut edges: BTreeMap<(usize, usize), Vec<Reference>> = BTreeMap::new();
        for m in 0..self.modules.len() {
            for (path, line) in &self.modules[m].refs {
                let Some(target) = self.resolve(path, m, 0) else {
                    continue;
                };
                let from = self.modules[m].file_node;
                let to = self.modules[target.module()].file_node;
                if from != to {
                    edges.entry((from, to)).or_default().push(Reference {
                        path: path.join("::"),
                        at: format!("{}:{line}", self.modules[m].file.display()),
                    });
                }
            }
        }
        self.edges = edges;
    }

    /// Resolves `path`, written in module `from`, to what it names in this crate (`None` for
    /// other crates, local variables, generic parameters and the like).
    fn resolve(&self, path: &[String], from: usize, depth: usize) -> Option<Target> {
        if depth > 16 || path.is_empty() {
            return None;
        }
        let mut current = from;
        let mut rest = path;
        match path[0].as_str() {
            "crate" => {
                current = 0;
                rest = &path[1..];
            }
            "self" => rest = &path[1..],
            "super" => {}
            _ => {}
        }
        let mut relative = !matches!(path[0].as_str(), "crate" | "self");
        for (i, segment) in rest.iter().enumerate() {
            if segment == "super" {
                current = self.modules[current].parent?;
                relative = false;
                continue;
            }
            let module = &self.modules[current];
            if let Some(&child) = module.children.get(segment) {
                current = child;
                relative = false;
                continue;
            }
            if module.defs.contains(segment) {
                return Some(Target::Item(current));
            }
            if let Some(binding) = module.uses.get(segment) {
                let target = self.resolve(binding, current, depth + 1)?;
                match target {
                    Target::Item(_) => return Some(target),
                    Target::Module(m) => {
                        current = m;
                        relative = false;
                        continue;
                    }
                }
            }
            for glob in &module.globs {
                if let Some(Target::Module(m)) = self.resolve(glob, current, depth + 1) {
                    let mut through = self.modules[m].path.clone();
                    through.insert(0, "crate".to_owned());
                    through.extend(rest[i..].iter().cloned());
                    if let Some(t) = self.resolve(&through, m, depth + 1) {
                        return Some(t);
                    }
                }
            }
            // Another crate, a variable, a generic parameter, a prelude name... or, after a
            // module of this crate, an associated item or a variant.
            if relative && i == 0 {
                return None;
            }
            return Some(Target::Item(current));
        }
        Some(Target::Module(current))
    }

    /// The import cycles as text, one entry per cycle, one line per edge
    /// (`  a -> b: the references`): what a test prints when it finds any.
    pub fn cycle_report(&self) -> Vec<String> {
        self.cycles()
            .iter()
            .map(|edges| {
                edges
                    .iter()
                    .map(|((a, b), refs)| {
                        format!(
                            "  {} -> {}: {}",
                            self.modules[*a].name(),
                            self.modules[*b].name(),
                            describe(refs)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .collect()
    }

    /// The import cycles: each a set of file modules that reach one another, with the edges
    /// among them.
    pub fn cycles(&self) -> Vec<Cycle<'_>> {
        let nodes: Vec<usize> = (0..self.modules.len())
            .filter(|&m| self.modules[m].file_node == m)
            .collect();
        let mut adjacency: HashMap<usize, Vec<usize>> = HashMap::new();
        for &(a, b) in self.edges.keys() {
            adjacency.entry(a).or_default().push(b);
        }
        tarjan(&nodes, &adjacency)
            .into_iter()
            .filter(|scc| scc.len() > 1)
            .map(|scc| {
                let members: BTreeSet<usize> = scc.into_iter().collect();
                self.edges
                    .iter()
                    .filter(|((a, b), _)| members.contains(a) && members.contains(b))
                    .map(|(&k, v)| (k, v.as_slice()))
                    .collect()
            })
            .collect()
    }

    /// The top-level module a module belongs to (`group` for `crate::group::worker`; empty for
    /// the root).
    pub fn top(&self, module: usize) -> &str {
        self.modules[module].path.first().map_or("", String::as_str)
    }

    /// The crate's top-level modules (`group` for `crate::group::worker`). Modules written
    /// inside the crate root's file (re-export facades such as `pub mod scheduler { pub use
    /// ... }`) belong to the root, which is above every layer, and are not listed.
    pub fn top_modules(&self) -> BTreeSet<&str> {
        (0..self.modules.len())
            .filter(|&m| self.modules[m].file_node != 0)
            .map(|m| self.top(m))
            .filter(|t| !t.is_empty())
            .collect()
    }

    /// Edges that do not point down `layers` (top-level module → layer number, higher
    /// layers above): an edge between two top-level modules must go to a strictly lower
    /// layer. Also lists top-level modules that have no layer.
    pub fn layer_violations(&self, layers: &HashMap<String, u32>) -> Vec<String> {
        let mut problems = Vec::new();
        for top in self.top_modules() {
            if !layers.contains_key(top) {
                problems.push(format!("module `{top}` has no layer"));
            }
        }
        for (&(a, b), refs) in &self.edges {
            let (ta, tb) = (self.top(a), self.top(b));
            if a == 0 || b == 0 || ta.is_empty() || tb.is_empty() || ta == tb {
                continue;
            }
            if let (Some(la), Some(lb)) = (layers.get(ta), layers.get(tb)) {
                if la <= lb {
                    problems.push(format!(
                        "`{}` (layer {la}) uses `{}` (layer {lb}), which is not below it: {}",
                        self.modules[a].name(),
                        self.modules[b].name(),
                        describe(refs)
                    ));
                }
            }
        }
        problems
    }
}

/// A few of an edge's references, for a message.
pub fn describe(refs: &[Reference]) -> String {
    let shown: Vec<String> = refs
        .iter()
        .take(3)
        .map(|r| format!("`{}` at {}", r.path, r.at))
        .collect();
    let more = refs.len().saturating_sub(3);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// Strongly connected components (Tarjan's algorithm, iterative).
fn tarjan(nodes: &[usize], adjacency: &HashMap<usize, Vec<usize>>) -> Vec<Vec<usize>> {
    #[derive(Clone, Copy)]
    struct Info {
        index: usize,
        low: usize,
        on_stack: bool,
    }
    let mut info: HashMap<usize, Info> = HashMap::new();
    let mut stack = Vec::new();
    let mut next = 0;
    let mut components = Vec::new();
    let empty = Vec::new();
    for &start in nodes {
        if info.contains_key(&start) {
            continue;
        }
        // (node, next neighbour to look at)
        let mut work = vec![(start, 0usize)];
        while let Some(&mut (v, ref mut i)) = work.last_mut() {
            if *i == 0 && !info.contains_key(&v) {
                info.insert(
                    v,
                    Info {
                        index: next,
                        low: next,
                        on_stack: true,
                    },
                );
                next += 1;
                stack.push(v);
            }
            let neighbours = adjacency.get(&v).unwrap_or(&empty);
            if let Some(&w) = neighbours.get(*i) {
                *i += 1;
                match info.get(&w) {
                    None => work.push((w, 0)),
                    Some(wi) if wi.on_stack => {
                        let low = info[&v].low.min(wi.index);
                        if let Some(vi) = info.get_mut(&v) {
                            vi.low = low;
                        }
                    }
                    Some(_) => {}
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                let low = info[&parent].low.min(info[&v].low);
                if let Some(pi) = info.get_mut(&parent) {
                    pi.low = low;
                }
            }
            if info[&v].low == info[&v].index {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    if let Some(wi) = info.get_mut(&w) {
                        wi.on_stack = false;
                    }
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                components.push(component);
            }
        }
    }
    components
}

/// The layer table of an ARCHITECTURE.md: rows `| 7 | `process` | ... |` give each
/// backticked module name in the second column the number in the first.
pub fn layers_from_markdown(text: &str) -> HashMap<String, u32> {
    let mut layers = HashMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 {
            continue;
        }
        let Ok(layer) = cells[1].parse::<u32>() else {
            continue;
        };
        for name in cells[2].split('`').skip(1).step_by(2) {
            layers.insert(name.to_owned(), layer);
        }
    }
    layers
}

/// Every crate directory under `root` (a `Cargo.toml` beside a `src/` folder), the root's own
/// included, skipping build output, git's and npm's folders, the crates' own sources, and
/// `third_party/` (other projects' code kept with a patch, held to their own rules): the
/// workspace's members and the crates kept beside it.
pub fn crate_dirs(root: &Path) -> Vec<PathBuf> {
    let is_crate = |dir: &Path| dir.join("Cargo.toml").is_file() && dir.join("src").is_dir();
    let mut dirs: Vec<PathBuf> = is_crate(root)
        .then(|| root.to_path_buf())
        .into_iter()
        .collect();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for path in entries.flatten().map(|e| e.path()) {
            let skip = matches!(
                path.file_name().and_then(|n| n.to_str()),
                Some(
                    "target"
                        | ".git"
                        | "node_modules"
                        | "src"
                        | "tests"
                        | "benches"
                        | "third_party"
                )
            );
            if path.is_dir() && !skip {
                if is_crate(&path) {
                    dirs.push(path.clone());
                }
                stack.push(path);
            }
        }
    }
    dirs.sort();
    dirs
}

/// The crate roots of the crate in `dir`: `src/lib.rs`, `src/main.rs`, and every binary under
/// `src/bin/` (a file, or a folder's `main.rs`).
pub fn crate_roots(dir: &Path) -> Vec<PathBuf> {
    let src = dir.join("src");
    let mut roots: Vec<PathBuf> = ["lib.rs", "main.rs"]
        .iter()
        .map(|f| src.join(f))
        .filter(|f| f.is_file())
        .collect();
    if let Ok(bins) = std::fs::read_dir(src.join("bin")) {
        for bin in bins.flatten().map(|b| b.path()) {
            match bin.is_dir() {
                true if bin.join("main.rs").is_file() => roots.push(bin.join("main.rs")),
                true => {}
                false => roots.push(bin),
            }
        }
    }
    roots.sort();
    roots
}

/// The layer table's rule, applied to a graph (here, so that `layers` needs nothing of the
/// crate root: the two would import each other).
impl Graph {
    /// Edges between top-level modules that `table` does not allow (see
    /// [`LayerTable::allows`]), and top-level modules the table does not place. Modules written
    /// in the crate root's own file (re-export facades) are above every layer and not checked.
    pub fn table_violations(&self, table: &LayerTable) -> Vec<String> {
        let placed = table.layers();
        let mut problems: Vec<String> = self
            .top_modules()
            .into_iter()
            .filter(|t| !placed.contains_key(*t))
            .map(|t| format!("module `{t}` has no layer"))
            .collect();
        for (&(a, b), refs) in &self.edges {
            let (ta, tb) = (self.top(a), self.top(b));
            if a == 0 || b == 0 || ta.is_empty() || tb.is_empty() || ta == tb {
                continue;
            }
            if !table.allows(ta, tb) {
                problems.push(format!(
                    "`{}` (layer {}) uses `{}` (layer {}), which the table does not allow: {}",
                    self.modules[a].name(),
                    placed.get(ta).map_or("?".to_owned(), u32::to_string),
                    self.modules[b].name(),
                    placed.get(tb).map_or("?".to_owned(), u32::to_string),
                    describe(refs)
                ));
            }
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(files: &[(&str, &str)]) -> Graph {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("architecture-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("create dir");
            std::fs::write(&path, text).expect("write");
        }
        let g = Graph::read(&dir.join("lib.rs")).expect("reads");
        let _ = std::fs::remove_dir_all(&dir);
        g
    }

    fn edge_names(g: &Graph) -> Vec<(String, String)> {
        g.edges
            .keys()
            .map(|&(a, b)| (g.modules[a].name(), g.modules[b].name()))
            .collect()
    }

    #[test]
    fn a_cycle_through_a_reexport_is_found_and_a_facade_is_not_one() {
        let g = graph(&[
            ("lib.rs", "mod a; mod b; pub use a::A; pub use b::B;"),
            ("a.rs", "pub struct A(pub crate::B);"),
            ("b.rs", "pub struct B; pub fn f(_: &super::A) {}"),
        ]);
        assert_eq!(
            edge_names(&g),
            [
                ("crate::a".to_owned(), "crate::b".to_owned()),
                ("crate::b".to_owned(), "crate::a".to_owned())
            ]
        );
        assert_eq!(g.cycles().len(), 1);
    }

    #[test]
    fn a_folder_facade_and_its_files_make_no_cycle() {
        let g = graph(&[
            ("lib.rs", "mod x;"),
            (
                "x/mod.rs",
                "mod low; mod high; pub use high::H; pub use low::L;",
            ),
            ("x/low.rs", "pub struct L;"),
            ("x/high.rs", "use super::L; pub struct H(L);"),
        ]);
        assert_eq!(
            edge_names(&g),
            [("crate::x::high".to_owned(), "crate::x::low".to_owned())]
        );
        assert!(g.cycles().is_empty());
    }

    #[test]
    fn test_code_is_left_out() {
        let g = graph(&[
            ("lib.rs", "mod a; mod b;"),
            (
                "a.rs",
                "pub struct A; #[cfg(test)] mod tests { fn t(_: crate::b::B) {} }",
            ),
            ("b.rs", "pub struct B(crate::a::A);"),
        ]);
        assert_eq!(
            edge_names(&g),
            [("crate::b".to_owned(), "crate::a".to_owned())]
        );
    }

    #[test]
    fn layers_must_point_down() {
        let g = graph(&[
            ("lib.rs", "mod low; mod high;"),
            ("low.rs", "pub struct L(pub crate::high::H);"),
            ("high.rs", "pub struct H;"),
        ]);
        let layers = layers_from_markdown("| 2 | `high` | x |\n| 1 | `low` | y |\n");
        let problems = g.layer_violations(&layers);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("`crate::low` (layer 1) uses `crate::high` (layer 2)"));
        let upside_down = layers_from_markdown("| 1 | `high` | x |\n| 2 | `low` | y |\n");
        assert!(g.layer_violations(&upside_down).is_empty());
    }
}
