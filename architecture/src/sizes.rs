//! How big a source file and its functions are, for the size limits of the workspace's rules
//! (no file over ~800 lines of code, no function over ~150 lines).
//!
//! A file's *lines of code* are the lines that hold a token: comments (doc comments
//! included), blank lines and test code (items under `#[cfg(test)]` or `#[cfg(loom)]`, such as
//! a `mod tests`) are not counted. A multi-line string literal counts every line it spans. A
//! function's size is the lines from its `fn` keyword to its closing brace, comments and
//! blank lines inside included: that is what a reader scrolls through. Functions in test code
//! are not measured; a function nested in another is measured on its own and also counts
//! toward the outer one.
//!
//! The file is read as tokens (`proc_macro2`, which drops comments and turns doc comments into
//! `#[doc = ...]` attributes, skipped here) and as a syntax tree (`syn`, for the functions and
//! the test-only items).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

use crate::{item_attrs, test_only, Error};

/// One function's size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FnSize {
    /// Its name (`Type::method` for a method of an `impl` or trait).
    pub name: String,
    /// The line of its `fn` keyword.
    pub line: usize,
    /// Lines from its `fn` keyword to its closing brace, inclusive.
    pub lines: usize,
}

/// One file's size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSize {
    /// The file.
    pub path: PathBuf,
    /// Every line, as `wc -l` counts them.
    pub total_lines: usize,
    /// Lines holding code outside test-only items (see the module documentation).
    pub code_lines: usize,
    /// The functions outside test-only items, in source order.
    pub functions: Vec<FnSize>,
}

/// Measures the Rust source `text` (as if read from `path`).
pub fn measure_text(path: &Path, text: &str) -> Result<FileSize, Error> {
    let parse_error = |source| Error::Parse {
        path: path.to_owned(),
        source,
    };
    let file = syn::parse_file(text).map_err(parse_error)?;
    let tokens: TokenStream = text
        .parse()
        .map_err(|e: proc_macro2::LexError| parse_error(syn::Error::new(e.span(), e)))?;
    let mut sizer = Sizer::default();
    sizer.visit_file(&file);
    let mut lines = BTreeSet::new();
    code_lines(tokens, &mut lines);
    let code_lines = lines
        .iter()
        .filter(|&&l| !sizer.excluded.iter().any(|&(a, b)| (a..=b).contains(&l)))
        .count();
    Ok(FileSize {
        path: path.to_owned(),
        total_lines: text.lines().count(),
        code_lines,
        functions: sizer.functions,
    })
}

/// Measures the file at `path`.
pub fn measure(path: &Path) -> Result<FileSize, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })?;
    measure_text(path, &text)
}

/// Measures every `.rs` file under `dir`, sorted by path.
pub fn measure_tree(dir: &Path) -> Result<Vec<FileSize>, Error> {
    let mut files = Vec::new();
    rust_files(dir, &mut files)?;
    files.sort();
    files.iter().map(|f| measure(f)).collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), Error> {
    let io = |source| Error::Io {
        path: dir.to_owned(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// Adds to `lines` every line a token of `tokens` is on, doc attributes left out.
fn code_lines(tokens: TokenStream, lines: &mut BTreeSet<usize>) {
    let mut iter = tokens.into_iter().peekable();
    while let Some(tree) = iter.next() {
        if let TokenTree::Punct(p) = &tree {
            if p.as_char() == '#' {
                // `#[doc = ...]` or `#![doc = ...]`: a doc comment, as the lexer hands it over.
                let mut ahead = iter.clone();
                if matches!(ahead.peek(), Some(TokenTree::Punct(b)) if b.as_char() == '!') {
                    ahead.next();
                }
                if let Some(TokenTree::Group(g)) = ahead.next() {
                    let first = g.stream().into_iter().next();
                    if matches!(first, Some(TokenTree::Ident(i)) if i == "doc") {
                        iter = ahead;
                        continue;
                    }
                }
            }
        }
        match tree {
            TokenTree::Group(g) => {
                lines.insert(g.span_open().start().line);
                lines.insert(g.span_close().end().line);
                code_lines(g.stream(), lines);
            }
            other => {
                let span = other.span();
                lines.extend(span.start().line..=span.end().line);
            }
        }
    }
}

/// Collects the functions and the line ranges of test-only items.
#[derive(Default)]
struct Sizer {
    functions: Vec<FnSize>,
    excluded: Vec<(usize, usize)>,
    /// The type or trait whose items are being visited.
    owner: Option<String>,
}

impl Sizer {
    fn exclude(&mut self, item: &dyn syn::spanned::Spanned) {
        let span = item.span();
        self.excluded.push((span.start().line, span.end().line));
    }

    fn record(&mut self, sig: &syn::Signature, block: &syn::Block) {
        let line = sig.fn_token.span.start().line;
        let end = block.brace_token.span.close().end().line;
        let name = match &self.owner {
            Some(owner) => format!("{owner}::{}", sig.ident),
            None => sig.ident.to_string(),
        };
        self.functions.push(FnSize {
            name,
            line,
            lines: end + 1 - line,
        });
    }
}

impl<'ast> Visit<'ast> for Sizer {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if test_only(item_attrs(item)) {
            self.exclude(item);
            return;
        }
        let owner = match item {
            syn::Item::Impl(i) => Some(type_name(&i.self_ty)),
            syn::Item::Trait(t) => Some(t.ident.to_string()),
            _ => None,
        };
        if owner.is_some() {
            let outer = std::mem::replace(&mut self.owner, owner);
            syn::visit::visit_item(self, item);
            self.owner = outer;
        } else {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = match item {
            syn::ImplItem::Fn(f) => &f.attrs,
            syn::ImplItem::Const(c) => &c.attrs,
            syn::ImplItem::Type(t) => &t.attrs,
            _ => return syn::visit::visit_impl_item(self, item),
        };
        if test_only(attrs) {
            self.exclude(item);
        } else {
            syn::visit::visit_impl_item(self, item);
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        // A free function nested in a method is not the method's type's.
        let outer = self.owner.take();
        self.record(&f.sig, &f.block);
        syn::visit::visit_item_fn(self, f);
        self.owner = outer;
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.record(&f.sig, &f.block);
        syn::visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.record(&f.sig, block);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

/// `ProcessCell` for `impl<P> ProcessCell<P>`.
fn type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .map_or_else(String::new, |s| s.ident.to_string()),
        _ => "_".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(text: &str) -> FileSize {
        measure_text(Path::new("test.rs"), text).expect("parses")
    }

    #[test]
    fn comments_blank_lines_and_test_modules_are_not_code() {
        let text = "//! The module.\n\
                    \n\
                    /// A function.\n\
                    // A comment.\n\
                    fn f() -> u32 {\n\
                    \x20   /* inside */\n\
                    \x20   1\n\
                    }\n\
                    \n\
                    #[cfg(test)]\n\
                    mod tests {\n\
                    \x20   fn t() {}\n\
                    }\n";
        let s = size(text);
        assert_eq!(s.total_lines, 13);
        assert_eq!(s.code_lines, 3, "`fn f`, `1`, `}}`");
        assert_eq!(
            s.functions,
            [FnSize {
                name: "f".to_owned(),
                line: 5,
                lines: 4
            }]
        );
    }

    #[test]
    fn methods_are_named_by_their_type_and_test_methods_are_left_out() {
        let text = "struct S;\n\
                    impl S {\n\
                    \x20   fn a(&self) {\n\
                    \x20       let _ = \"two\n\
                    lines\";\n\
                    \x20   }\n\
                    \x20   #[cfg(test)]\n\
                    \x20   fn b(&self) {}\n\
                    }\n";
        let s = size(text);
        assert_eq!(
            s.code_lines, 7,
            "the string's two lines count; `fn b` does not"
        );
        let names: Vec<&str> = s.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["S::a"]);
        assert_eq!(s.functions[0].lines, 4);
    }
}
