//! Which bounds the generated impls need.
//!
//! A field whose type mentions a type or const parameter becomes a where-clause bound
//! (`Vec<T>: Isolated`), so `Envelope<String>` is `Isolated` and `Envelope<Rc<u8>>` is not:
//! precise, unlike bounding every parameter (`Addr<P>` needs no `P: Isolated`). A field that
//! mentions the type itself (`children: Vec<Tree<T>>`) would make that bound recursive; it
//! bounds its parameters instead.
//!
//! A field whose type mentions no parameter is checked where it is written, by an assertion
//! spanned at the type, so the error names the field. It is not a bound of the impl: through
//! `Addr<P>`, whose isolation depends on `P` being a process, such bounds can form cycles
//! between processes and the messages they exchange.

use std::collections::BTreeSet;

use proc_macro2::{Ident, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::visit_mut::{self as visit_mut, VisitMut};
use syn::{GenericParam, Generics, Type, TypePath};

/// The names of a type's generic type and const parameters.
pub fn param_names(generics: &Generics) -> BTreeSet<Ident> {
    generics
        .params
        .iter()
        .filter_map(|p| match p {
            GenericParam::Type(t) => Some(t.ident.clone()),
            GenericParam::Const(c) => Some(c.ident.clone()),
            GenericParam::Lifetime(_) => None,
        })
        .collect()
}

/// The parameters in `names` that `ty` mentions, and whether it mentions `itself` (or `Self`).
struct Mentions<'a> {
    names: &'a BTreeSet<Ident>,
    itself: Option<&'a Ident>,
    found: BTreeSet<Ident>,
    recursive: bool,
}

impl<'ast> Visit<'ast> for Mentions<'_> {
    fn visit_type_path(&mut self, ty: &'ast TypePath) {
        if ty.qself.is_none() && ty.path.leading_colon.is_none() {
            if let Some(first) = ty.path.segments.first() {
                if self.names.contains(&first.ident) {
                    self.found.insert(first.ident.clone());
                }
            }
        }
        if let Some(last) = ty.path.segments.last() {
            if last.ident == "Self" || self.itself.is_some_and(|me| last.ident == *me) {
                self.recursive = true;
            }
        }
        visit::visit_type_path(self, ty);
    }

    fn visit_expr_path(&mut self, expr: &'ast syn::ExprPath) {
        // A const parameter used in an array length: `[u8; N]`.
        if let Some(ident) = expr.path.get_ident() {
            if self.names.contains(ident) {
                self.found.insert(ident.clone());
            }
        }
        visit::visit_expr_path(self, expr);
    }
}

/// What `ty` mentions among `names`, and whether it refers to `itself`.
fn mentions(ty: &Type, names: &BTreeSet<Ident>, itself: Option<&Ident>) -> (BTreeSet<Ident>, bool) {
    let mut visitor = Mentions {
        names,
        itself,
        found: BTreeSet::new(),
        recursive: false,
    };
    visitor.visit_type(ty);
    (visitor.found, visitor.recursive)
}

/// Whether any path in `ty` has a segment named `ident`.
pub fn mentions_ident(ty: &Type, ident: &Ident) -> bool {
    struct Finder<'a> {
        ident: &'a Ident,
        found: bool,
    }
    impl<'ast> Visit<'ast> for Finder<'_> {
        fn visit_path_segment(&mut self, segment: &'ast syn::PathSegment) {
            self.found |= segment.ident == *self.ident;
            visit::visit_path_segment(self, segment);
        }
    }
    let mut finder = Finder {
        ident,
        found: false,
    };
    finder.visit_type(ty);
    finder.found
}

/// The bounds and assertions that make a type `Trait` exactly when its field types are.
#[derive(Default)]
pub struct FieldBounds {
    /// Where-clause predicates for the impl.
    pub predicates: Vec<TokenStream>,
    /// Field types without parameters, to assert where they are written.
    pub concrete: Vec<Type>,
}

impl FieldBounds {
    /// Computes the bounds `trait_path` needs over the given field types of `itself`.
    ///
    /// A field type without parameters is not bounded by `trait_path` (that bound could be
    /// cyclic: `Addr<P>` is `Isolated` only if `P` is a process, whose messages may hold an
    /// `Addr<P>`); it is asserted where it is written, and bounded by `concrete_bound` if given,
    /// under a `for<'__whirl>` binder so the compiler does not reject the bound eagerly.
    pub fn new<'a>(
        itself: &Ident,
        generics: &Generics,
        field_types: impl IntoIterator<Item = &'a Type>,
        trait_path: &TokenStream,
        concrete_bound: Option<&TokenStream>,
    ) -> FieldBounds {
        let names = param_names(generics);
        let (_, ty_generics, _) = generics.split_for_impl();
        let self_ty: Type = syn::parse_quote!(#itself #ty_generics);
        let mut bounds = FieldBounds::default();
        let mut bounded_params = BTreeSet::new();
        for ty in field_types {
            let span = ty.span();
            let ty = replace_self(ty, &self_ty);
            let (found, recursive) = mentions(&ty, &names, Some(itself));
            if found.is_empty() {
                if let Some(bound) = concrete_bound {
                    bounds
                        .predicates
                        .push(quote_spanned!(span=> for<'__whirl> #ty: #bound));
                }
                bounds.concrete.push(ty);
            } else if recursive {
                for param in found {
                    if bounded_params.insert(param.clone()) {
                        bounds
                            .predicates
                            .push(quote_spanned!(span=> #param: #trait_path));
                    }
                }
            } else {
                bounds
                    .predicates
                    .push(quote_spanned!(span=> #ty: #trait_path));
            }
        }
        bounds
    }
}

/// `ty` with every `Self` replaced by `self_ty`, so that it can be named outside the impl.
fn replace_self(ty: &Type, self_ty: &Type) -> Type {
    struct Replace<'a>(&'a Type);
    impl VisitMut for Replace<'_> {
        fn visit_type_mut(&mut self, ty: &mut Type) {
            match ty {
                Type::Path(p) if p.qself.is_none() && p.path.is_ident("Self") => {
                    *ty = self.0.clone();
                }
                _ => visit_mut::visit_type_mut(self, ty),
            }
        }
    }
    let mut ty = ty.clone();
    Replace(self_ty).visit_type_mut(&mut ty);
    ty
}

/// The where clause of `generics` with `extra` predicates added.
pub fn where_clause(generics: &Generics, extra: &[TokenStream]) -> TokenStream {
    let existing = generics
        .where_clause
        .iter()
        .flat_map(|w| w.predicates.iter());
    quote!(where #(#existing,)* #(#extra,)*)
}

/// A token stream's text without whitespace, for comparing types written by the user.
pub fn normalized(tokens: &impl ToTokens) -> String {
    tokens
        .to_token_stream()
        .to_string()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn classify(generics: Generics, fields: &[Type]) -> (Vec<String>, Vec<String>) {
        let itself: Ident = parse_quote!(Node);
        let bounds = FieldBounds::new(&itself, &generics, fields, &quote!(Isolated), None);
        let predicates = bounds.predicates.iter().map(normalized).collect();
        let concrete = bounds.concrete.iter().map(normalized).collect();
        (predicates, concrete)
    }

    #[test]
    fn fields_with_parameters_become_bounds_and_the_rest_assertions() {
        let (predicates, concrete) = classify(
            parse_quote!(<T, const N: usize>),
            &[
                parse_quote!(Vec<T>),
                parse_quote!([u8; N]),
                parse_quote!(String),
                parse_quote!(std::sync::Arc<str>),
            ],
        );
        assert_eq!(predicates, ["Vec<T>:Isolated", "[u8;N]:Isolated"]);
        assert_eq!(concrete, ["String", "std::sync::Arc<str>"]);
    }

    #[test]
    fn recursive_fields_bound_their_parameters_instead() {
        let (predicates, concrete) = classify(
            parse_quote!(<T>),
            &[parse_quote!(Vec<Node<T>>), parse_quote!(Option<Box<Self>>)],
        );
        assert_eq!(predicates, ["T:Isolated"]);
        assert!(concrete.is_empty());

        let (predicates, concrete) = classify(parse_quote!(), &[parse_quote!(Option<Box<Self>>)]);
        assert!(predicates.is_empty());
        assert_eq!(concrete, ["Option<Box<Node>>"]);
    }

    #[test]
    fn a_path_segment_is_found_anywhere_in_a_type() {
        let name: Ident = parse_quote!(CounterMessage);
        assert!(mentions_ident(&parse_quote!(Vec<m::CounterMessage>), &name));
        assert!(!mentions_ident(&parse_quote!(Vec<Counter>), &name));
    }
}
