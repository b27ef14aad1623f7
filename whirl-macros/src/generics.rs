//! Which bounds the generated impls need, and the checks that make them true.
//!
//! A derived `Isolated` impl (and a process state's `DeclaredProcess`) holds for every
//! instantiation whose type parameters are `Isolated`: `Envelope<String>` is a message,
//! `Envelope<Rc<u8>>` is not. What makes that claim true is a generic function, under exactly the
//! same bounds, that asserts every field's type is `Isolated`. The compiler proves the field
//! types from the bounds, structurally: nothing here looks at how a type is spelled, so a field
//! of type `Arc<Mutex<other::SameName<T>>>` in a type named `SameName` is refused, and a
//! recursive type (`children: Vec<Tree<T>>`, directly, through `Box`/`Option`, or mutually
//! recursive) is accepted, because inside the function `Tree<T>: Isolated` follows from the impl
//! and `T: Isolated`, without the cycle a where-clause bound on the field would create.
//!
//! Each field is asserted through a function of its own, named after the field and bounded at
//! the field's name, so an error says which field holds the offending type.
//!
//! Used by validation and expansion; uses `ast` (the data model) only.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::visit_mut::{self as visit_mut, VisitMut};
use syn::{GenericParam, Generics, Ident, Type};

use crate::ast::{Data, Field, Shape};

/// Whether any path in `ty` has a segment named `ident` (used only to pick a name for the
/// generated message enum that no handled type already uses).
pub fn mentions_ident(ty: &Type, ident: &Ident) -> bool {
    any_path(ty, false, |path| {
        path.segments.iter().any(|s| s.ident == *ident)
    })
}

/// Whether `ty` names the type parameter `param` anywhere (`T`, `Vec<T>`, `T::Item`); a macro
/// in type position might, so it counts.
fn mentions_param(ty: &Type, param: &Ident) -> bool {
    any_path(ty, true, |path| {
        path.leading_colon.is_none() && path.segments.first().is_some_and(|s| s.ident == *param)
    })
}

/// Whether some path in `ty` (at any depth) satisfies `matches`; a macro in type position
/// counts as a match if `macros_match`.
fn any_path(ty: &Type, macros_match: bool, matches: impl Fn(&syn::Path) -> bool) -> bool {
    struct Finder<F> {
        matches: F,
        macros_match: bool,
        found: bool,
    }
    impl<'ast, F: Fn(&syn::Path) -> bool> Visit<'ast> for Finder<F> {
        fn visit_path(&mut self, path: &'ast syn::Path) {
            self.found |= (self.matches)(path);
            visit::visit_path(self, path);
        }
        fn visit_type_macro(&mut self, mac: &'ast syn::TypeMacro) {
            self.found |= self.macros_match;
            visit::visit_type_macro(self, mac);
        }
    }
    let mut finder = Finder {
        matches,
        macros_match,
        found: false,
    };
    finder.visit_type(ty);
    finder.found
}

/// The generics of an `Isolated` impl and the per-field assertions that justify it.
pub struct FieldChecks {
    /// The type's generics with `Isolated` added to every type parameter a checked field
    /// mentions, `'static` to the others, and a bound per `PhantomData` marker field.
    pub generics: Generics,
    /// `for<'__whirl> Field: Send` for every field: the supertrait of `Isolated`, deferred by
    /// the binder so that a field that is not even `Send` is reported once, by its assertion.
    pub send_bounds: Vec<TokenStream>,
    fields: Vec<CheckedField>,
    /// One rustdoc line per trusted field: its name, type and reason.
    trusted: Vec<String>,
    /// The type itself (`Name<T>`), assumed `Isolated` inside the check when the type will be
    /// `Isolated`: see [`FieldChecks::assertions`].
    self_ty: Type,
    assume_self: bool,
}

struct CheckedField {
    /// `field_name`, `field_0`, `field_Variant_name`.
    function: Ident,
    /// Trusted with `#[isolated(trust = "...")]`: asserted `Send + 'static` only.
    trusted: bool,
    /// Where the field is named (its identifier, or its type for a tuple field).
    name_span: Span,
    ty: Type,
}

impl FieldChecks {
    /// The checks for the fields of `data` that `include` accepts (process state leaves out
    /// `#[shared]` fields).
    ///
    /// Three kinds of field: a checked one is asserted `Isolated`, and its type parameters are
    /// bounded `Isolated`; a `PhantomData<..>` marker bounds the impl by its own type being
    /// `Isolated` (so `PhantomData<fn() -> T>` needs nothing of `T`, and `PhantomData<T>` only
    /// `T: Send`); a trusted one (`#[isolated(trust = "why")]`) is only required to be `Send`
    /// (asserted, or, if it mentions a type parameter, bounding the impl).
    /// A type parameter that appears in no checked field needs only `'static`.
    pub fn new(data: &Data, include: impl Fn(&Field) -> bool, assume_self: bool) -> FieldChecks {
        let (_, ty_generics, _) = data.generics.split_for_impl();
        let ident = data.ident;
        let self_ty: Type = syn::parse_quote!(#ident #ty_generics);
        let mut named: Vec<(String, &Field)> = Vec::new();
        match &data.shape {
            Shape::Struct(fields) => {
                for (i, field) in fields.iter().enumerate() {
                    named.push((field_name(field, i), field));
                }
            }
            Shape::Enum(variants) => {
                for variant in variants {
                    for (i, field) in variant.fields.iter().enumerate() {
                        let name = format!("{}_{}", variant.original.ident, field_name(field, i));
                        named.push((name, field));
                    }
                }
            }
            Shape::Union(_) => {}
        }
        named.retain(|(_, f)| include(f));
        let checked = |f: &Field| f.trust.is_none() && !f.is_marker();
        let params: Vec<&Ident> = data
            .generics
            .type_params()
            .map(|t| &t.ident)
            .filter(|param| {
                named
                    .iter()
                    .any(|(_, f)| checked(f) && mentions_param(f.ty, param))
            })
            .collect();
        let mut generics = isolated_generics(data.generics, &params);
        let mut checks = FieldChecks {
            generics: Generics::default(),
            send_bounds: Vec::new(),
            fields: Vec::new(),
            trusted: Vec::new(),
            self_ty: self_ty.clone(),
            assume_self,
        };
        for (name, field) in named {
            let ty = replace_self(field.ty, &self_ty);
            let span = field.ty.span();
            checks
                .send_bounds
                .push(quote_spanned!(span=> for<'__whirl> #ty: ::core::marker::Send));
            let mentions_any = data
                .generics
                .type_params()
                .any(|t| mentions_param(field.ty, &t.ident));
            if let Some(reason) = field.trust.as_ref().and_then(|t| t.reason.as_ref()) {
                let ty = field.ty.to_token_stream().to_string();
                let reason = reason.value();
                checks
                    .trusted
                    .push(format!("* `{name}: {ty}`, trusted as plain data: {reason}"));
            }
            if field.trust.is_some() && mentions_any {
                // A trusted generic field (`Path<T>`) is `Send` for the arguments that make it
                // so: the impl says which.
                let bound = quote_spanned!(span=> #ty: ::core::marker::Send);
                generics
                    .make_where_clause()
                    .predicates
                    .push(syn::parse_quote!(#bound));
            }
            if field.is_marker() && field.trust.is_none() {
                let bound = quote_spanned!(span=> #ty: ::whirl::__private::Isolated);
                generics
                    .make_where_clause()
                    .predicates
                    .push(syn::parse_quote!(#bound));
                continue;
            }
            let name_span = field
                .original
                .ident
                .as_ref()
                .map_or_else(|| field.ty.span(), Ident::span);
            checks.fields.push(CheckedField {
                function: format_ident!("field_{}", name),
                trusted: field.trust.is_some(),
                name_span,
                ty,
            });
        }
        checks.generics = generics;
        checks
    }

    /// The rustdoc text of the generated impl: which fields are trusted, and why.
    pub fn trust_doc(&self) -> Option<String> {
        (!self.trusted.is_empty()).then(|| {
            format!(
                "Every field is checked `Isolated` except these, marked \
                 `#[isolated(trust = \"...\")]`:\n\n{}",
                self.trusted.join("\n")
            )
        })
    }

    /// The assertions: one function per field, called in a function generic over the same
    /// parameters with the same bounds as the impl. Each call is spanned at the field's type,
    /// each function's bound at the field's name.
    ///
    /// For a type that is itself `Isolated`, the function also assumes the type is (under a
    /// binder, so the assumption is not checked on its own): a recursive field (`next:
    /// Option<Box<Self>>`) is then isolated by that assumption, and only the fields that are not
    /// the type itself are reported. This is the coinductive reading of "everything reachable is
    /// isolated": every field that is not a recursive occurrence is still checked on its own.
    pub fn assertions(&self) -> TokenStream {
        if self.fields.is_empty() {
            return TokenStream::new();
        }
        let (impl_generics, _, _) = self.generics.split_for_impl();
        let self_ty = &self.self_ty;
        let assumption = self
            .assume_self
            .then(|| quote!(for<'__whirl> #self_ty: ::whirl::__private::Isolated));
        let where_clause = where_clause(&self.generics, assumption.as_slice());
        let functions = self.fields.iter().map(|f| {
            let function = &f.function;
            let bound = if f.trusted {
                quote_spanned!(f.name_span=> ::core::marker::Send + 'static)
            } else {
                quote_spanned!(f.name_span=> ::whirl::__private::Isolated)
            };
            quote! {
                #[allow(non_snake_case)]
                fn #function<__WhirlField: ?::core::marker::Sized + #bound>() {}
            }
        });
        let calls = self.fields.iter().map(|f| {
            let (function, ty) = (&f.function, &f.ty);
            quote_spanned!(ty.span()=> #function::<#ty>();)
        });
        quote! {
            const _: () = {
                #(#functions)*
                fn __whirl_check #impl_generics () #where_clause {
                    #(#calls)*
                }
            };
        }
    }
}

/// A field's name for the generated function: its identifier, or its position.
fn field_name(field: &Field, index: usize) -> String {
    match &field.original.ident {
        Some(ident) => ident.to_string().trim_start_matches("r#").to_owned(),
        None => index.to_string(),
    }
}

/// `generics` with `::whirl::__private::Isolated` added to the bounds of the type parameters in
/// `isolated`, and `'static` to the others (`Isolated` requires the whole type to be `'static`).
fn isolated_generics(generics: &Generics, isolated: &[&Ident]) -> Generics {
    let mut generics = generics.clone();
    for param in &mut generics.params {
        if let GenericParam::Type(t) = param {
            if isolated.contains(&&t.ident) {
                t.bounds
                    .push(syn::parse_quote!(::whirl::__private::Isolated));
            } else {
                t.bounds.push(syn::parse_quote!('static));
            }
        }
    }
    generics
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

    #[test]
    fn a_path_segment_is_found_anywhere_in_a_type() {
        let name: Ident = parse_quote!(CounterMessage);
        assert!(mentions_ident(&parse_quote!(Vec<m::CounterMessage>), &name));
        assert!(!mentions_ident(&parse_quote!(Vec<Counter>), &name));
    }

    #[test]
    fn every_type_parameter_is_bounded_and_nothing_else() {
        let generics: Generics = parse_quote!(<'a, T: Clone, U, const N: usize>);
        let t: Ident = parse_quote!(T);
        let bounded = isolated_generics(&generics, &[&t]);
        assert_eq!(
            normalized(&bounded),
            "<'a,T:Clone+::whirl::__private::Isolated,U:'static,constN:usize>"
        );
    }

    #[test]
    fn a_parameter_is_found_in_paths_and_projections_only() {
        let t: Ident = parse_quote!(T);
        assert!(mentions_param(&parse_quote!(Vec<T>), &t));
        assert!(mentions_param(&parse_quote!(<T as Iterator>::Item), &t));
        assert!(mentions_param(&parse_quote!(T::Item), &t));
        assert!(!mentions_param(&parse_quote!(m::T), &t));
        assert!(!mentions_param(&parse_quote!(Vec<U>), &t));
    }
}
