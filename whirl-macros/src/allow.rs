//! `#[allow_shared(reason = "...")]`: parse, validate and expand in one small module, since
//! the attribute has one argument and two kinds of item.
//!
//! The expansion leaves the item as written and puts one call to the runtime's no-op marker,
//! `allow_shared("reason")`, first in a function's body or around a static's initialiser.
//! `cargo whirl check` finds that call in the compiled code; nothing else reads it.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Item, Lit, LitStr, Meta, Token};

use crate::errors::Errors;

const USAGE: &str = "write `#[whirl::allow_shared(reason = \"why sharing this is safe\")]`";

/// Expands the attribute, or reports every problem at the user's token.
pub fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let reason = parse_reason(args, &mut errors);
    let expanded = match syn::parse2::<Item>(item.clone()) {
        Ok(item) => with_marker(item, reason.as_ref(), &mut errors),
        Err(_) => {
            errors.at(
                Span::call_site(),
                "`#[allow_shared]` goes on a function (free, or a method with a body) or on a \
                 `static`; for a `thread_local!`, put it on the function that uses it",
            );
            None
        }
    };
    match (errors.finish(), expanded) {
        (Ok(()), Some(tokens)) => tokens,
        (Ok(()), None) => item,
        (Err(err), _) => {
            let err = err.to_compile_error();
            quote!(#err #item)
        }
    }
}

/// Reads `reason = "..."`, the only argument, which must be a non-empty string.
fn parse_reason(args: TokenStream, errors: &mut Errors) -> Option<LitStr> {
    if args.is_empty() {
        errors.at(
            Span::call_site(),
            format!("`#[allow_shared]` needs a reason that a reviewer can check: {USAGE}"),
        );
        return None;
    }
    let metas = match Punctuated::<Meta, Token![,]>::parse_terminated.parse2(args) {
        Ok(metas) => metas,
        Err(err) => {
            errors.push(syn::Error::new(err.span(), format!("{err}; {USAGE}")));
            return None;
        }
    };
    let mut reason = None;
    for meta in &metas {
        match meta {
            Meta::NameValue(nv) if nv.path.is_ident("reason") => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(lit), ..
                }) => {
                    if reason.is_some() {
                        errors.spanned(&nv.path, "`reason` is given twice; keep one");
                    } else if lit.value().trim().is_empty() {
                        errors.spanned(lit, format!("the reason is empty; {USAGE}"));
                    } else {
                        reason = Some(lit.clone());
                    }
                }
                other => errors.spanned(
                    other,
                    format!("the reason must be a string literal; {USAGE}"),
                ),
            },
            other => errors.spanned(
                other,
                format!("`allow_shared` takes one argument, `reason`; {USAGE}"),
            ),
        }
    }
    if reason.is_none() && errors.is_empty() {
        errors.at(
            Span::call_site(),
            format!("`#[allow_shared]` needs a reason: {USAGE}"),
        );
    }
    reason
}

/// Puts the marker into a function's body or a static's initialiser.
fn with_marker(item: Item, reason: Option<&LitStr>, errors: &mut Errors) -> Option<TokenStream> {
    let marker = |reason: &LitStr| quote_spanned!(reason.span()=> ::whirl::__private::allow_shared(#reason););
    match item {
        Item::Fn(mut f) => {
            let reason = reason?;
            f.block.stmts.insert(0, syn::parse2(marker(reason)).ok()?);
            Some(quote!(#f))
        }
        Item::Static(mut s) => {
            let reason = reason?;
            let marker = marker(reason);
            let init = &s.expr;
            let span = init.span();
            *s.expr = syn::parse2(quote_spanned!(span=> { #marker #init })).ok()?;
            Some(quote!(#s))
        }
        other => {
            errors.spanned(
                item_keyword(&other),
                "`#[allow_shared]` goes on a function or a `static`, where `cargo whirl check` \
                 reports shared state; put it on the function or static that shares it",
            );
            None
        }
    }
}

/// The part of an item to point at: its whole first line would be noisy.
fn item_keyword(item: &Item) -> TokenStream {
    match item {
        Item::Const(c) => {
            let (k, i) = (&c.const_token, &c.ident);
            quote!(#k #i)
        }
        Item::Struct(s) => {
            let (k, i) = (&s.struct_token, &s.ident);
            quote!(#k #i)
        }
        Item::Enum(e) => {
            let (k, i) = (&e.enum_token, &e.ident);
            quote!(#k #i)
        }
        Item::Impl(i) => {
            let k = &i.impl_token;
            quote!(#k)
        }
        Item::Mod(m) => {
            let (k, i) = (&m.mod_token, &m.ident);
            quote!(#k #i)
        }
        Item::Macro(m) => {
            let p = &m.mac.path;
            quote!(#p)
        }
        other => quote!(#other),
    }
}
