//! Code generation (phase 3) from a model `valid` accepted. Uses `ast`, `attr`, `generics`,
//! `valid` and `errors`; only `lib.rs` uses it.
//!
//! This file generates the derives and what `#[process]` adds to a state type, and checks an
//! impl block of handlers; what such a block becomes is generated in `impls` (one generator
//! per item), with the method bodies in `dispatch` and the names in `names`. Imports point
//! one way: this file → `impls` → `dispatch` / `names`.
//!
//! Everything is named by absolute path (`::core::...`, `::whirl::...`) so that user code with
//! `#![no_implicit_prelude]` or its own `Result` in scope cannot change what the generated code
//! means. Assertions are spanned at the user's tokens, so a failed bound points at the field or
//! parameter that caused it.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::{DeriveInput, ImplItem, Item, ItemImpl, Type};

use crate::ast::{Data, Derive, ProcessImpl, Purpose, Shape};
use crate::attr::{ProcessOptions, Role};
use crate::errors::Errors;
use crate::generics;
use crate::valid;

mod dispatch;
mod impls;
mod names;

/// `#[derive(Message)]` and `#[derive(Isolated)]`.
pub fn derive(input: &DeriveInput, which: Derive) -> syn::Result<TokenStream> {
    let purpose = match which {
        Derive::Message => Purpose::Message,
        Derive::Isolated => Purpose::Data,
    };
    let mut errors = Errors::default();
    let data = Data::new(input, purpose, ProcessOptions::default(), &mut errors);
    valid::data(&data, &mut errors);
    errors.finish()?;

    let isolated = isolated_impl(&data);
    let message = match which {
        Derive::Message => message_impl(&data),
        Derive::Isolated => TokenStream::new(),
    };
    Ok(quote!(#isolated #message))
}

/// `unsafe impl Isolated`, for every instantiation whose type parameters are `Isolated`, plus
/// the checks that make it true: each field asserted `Isolated` in a generic function under the
/// same bounds.
fn isolated_impl(data: &Data) -> TokenStream {
    let checks = generics::FieldChecks::new(data, |_| true, true);
    let bounded = &checks.generics;
    let (impl_generics, _, _) = bounded.split_for_impl();
    let (_, ty_generics, _) = data.generics.split_for_impl();
    let where_clause = generics::where_clause(bounded, &checks.send_bounds);
    let ident = data.ident;
    let assertions = checks.assertions();
    let doc = checks.trust_doc().map(|doc| quote!(#[doc = #doc]));
    quote! {
        // SAFETY: every field is `Isolated` whenever the type parameters are: the function
        // below asserts each field's type under exactly these bounds, except the fields the
        // user trusted, with a reason, in `#[isolated(trust = "...")]` (listed in the doc). So
        // the value owns its data, shares it immutably, or holds process addresses. (I8)
        #doc
        #[automatically_derived]
        unsafe impl #impl_generics ::whirl::__private::Isolated for #ident #ty_generics #where_clause {}
        // An isolated value can be a handler's answer.
        #[automatically_derived]
        impl #impl_generics ::whirl::Reply for #ident #ty_generics #where_clause {}
        #assertions
    }
}

/// `impl Message`, with the cost hook if `#[message(cost = ...)]` was given.
fn message_impl(data: &Data) -> TokenStream {
    let (impl_generics, ty_generics, _) = data.generics.split_for_impl();
    let where_clause = generics::where_clause(
        data.generics,
        &[quote!(for<'__whirl> Self: ::whirl::__private::Isolated)],
    );
    let ident = data.ident;
    let cost = cost_fn(data);
    let bypass = data.message.bypass_admission.map(|_| {
        quote!(
            const BYPASSES_ADMISSION: ::core::primitive::bool = true;
        )
    });
    quote! {
        #[automatically_derived]
        impl #impl_generics ::whirl::__private::Message for #ident #ty_generics #where_clause {
            #bypass
            #cost
        }
    }
}

fn cost_fn(data: &Data) -> TokenStream {
    let own = data.message.cost.as_ref();
    let body = match &data.shape {
        Shape::Struct(_) | Shape::Union(_) => match own {
            Some(cost) => cost.to_token_stream(),
            None => return TokenStream::new(),
        },
        Shape::Enum(variants) => {
            if own.is_none() && variants.iter().all(|v| v.message.cost.is_none()) {
                return TokenStream::new();
            }
            if variants.is_empty() {
                quote!(match *self {})
            } else {
                let arms = variants.iter().map(|v| {
                    let name = &v.original.ident;
                    let cost = match (&v.message.cost, own) {
                        (Some(cost), _) | (None, Some(cost)) => cost.to_token_stream(),
                        (None, None) => quote!(1),
                    };
                    quote!(Self::#name { .. } => #cost,)
                });
                quote!(match self { #(#arms)* })
            }
        }
    };
    quote! {
        #[inline]
        fn cost(&self) -> ::core::primitive::u64 {
            #body
        }
    }
}

/// `#[process]`, on a state type or on an impl block.
pub fn process(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    match syn::parse2::<Item>(item)? {
        item @ (Item::Struct(_) | Item::Enum(_) | Item::Union(_)) => {
            let input: DeriveInput = syn::parse2(item.into_token_stream())?;
            Ok(state(args, input))
        }
        Item::Impl(imp) => Ok(handlers(args, imp)),
        other => Err(syn::Error::new_spanned(
            other,
            "`#[process]` goes on a process's state type (a struct or enum) and on the impl \
             block of its handlers",
        )),
    }
}

/// `#[process]` on the state type.
fn state(args: TokenStream, input: DeriveInput) -> TokenStream {
    let mut errors = Errors::default();
    let options = ProcessOptions::parse(args, &mut errors);
    let data = Data::new(&input, Purpose::State, options, &mut errors);
    valid::data(&data, &mut errors);
    let item = strip_state_attrs(input.clone());
    match errors.finish() {
        Err(err) => {
            let err = err.to_compile_error();
            quote!(#item #err)
        }
        Ok(()) => {
            let generated = declare_state(&data);
            quote!(#item #generated)
        }
    }
}

/// The state type as written, without the attributes only `#[process]` understands.
fn strip_state_attrs(mut input: DeriveInput) -> DeriveInput {
    let keep = |a: &syn::Attribute| {
        !a.path().is_ident("shared")
            && !a.path().is_ident("message")
            && !a.path().is_ident("isolated")
    };
    input.attrs.retain(keep);
    let fields: Vec<&mut syn::Fields> = match &mut input.data {
        syn::Data::Struct(s) => vec![&mut s.fields],
        syn::Data::Enum(e) => e
            .variants
            .iter_mut()
            .map(|v| {
                v.attrs.retain(keep);
                &mut v.fields
            })
            .collect(),
        syn::Data::Union(_) => Vec::new(),
    };
    for field in fields.into_iter().flat_map(|f| f.iter_mut()) {
        field.attrs.retain(keep);
    }
    input
}

fn declare_state(data: &Data) -> TokenStream {
    let ident = data.ident;
    let (impl_generics, ty_generics, where_clause) = data.generics.split_for_impl();
    let options = &data.options;
    let system = options.system.is_some();
    let group = match &options.group {
        Some(name) => quote!(::core::option::Option::Some(#name)),
        None => quote!(::core::option::Option::None),
    };
    let reason = options
        .shares_state
        .as_ref()
        .and_then(|s| s.reason.as_ref());
    let shares_state = match reason {
        Some(reason) => quote!(::core::option::Option::Some(#reason)),
        None => quote!(::core::option::Option::None),
    };

    let checks = generics::FieldChecks::new(data, |f| f.shared.is_none(), reason.is_none());
    let bounded = &checks.generics;
    let (bounded_impl_generics, _, _) = bounded.split_for_impl();
    let bounded_where = generics::where_clause(bounded, &[]);
    let assertions = checks.assertions();

    let system_impl = options.system.as_ref().map(|keyword| {
        let check = quote_spanned! {keyword.span()=>
            ::whirl::__private::system_process_must_handle_down::<#ident #ty_generics>();
        };
        quote! {
            const _: () = {
                fn __whirl_check #bounded_impl_generics () #bounded_where {
                    #check
                }
            };
        }
    });
    // Process state crosses a process boundary when it is spawned: it is `Isolated` data
    // itself, unless it declares shared state.
    let isolated_impl = reason.is_none().then(|| {
        let send_where = generics::where_clause(bounded, &checks.send_bounds);
        let doc = checks.trust_doc().map(|doc| quote!(#[doc = #doc]));
        quote! {
            // SAFETY: every field is `Isolated` whenever the type parameters are, as asserted
            // below under exactly these bounds, except the fields the user trusted, with a
            // reason, in `#[isolated(trust = "...")]` (listed in the doc). (I8)
            #doc
            #[automatically_derived]
            unsafe impl #bounded_impl_generics ::whirl::__private::Isolated for #ident #ty_generics #send_where {}
        }
    });
    let shares_state_impl = reason.map(|reason| {
        quote! {
            // SAFETY: declared with `#[process(unsafe(shares_state = ...))]`; the runtime only runs the
            // process in a group built with `shares_state` (checked at spawn, through
            // `Process::SHARES_STATE`) (I8).
            #[automatically_derived]
            unsafe impl #impl_generics ::whirl::SharesState for #ident #ty_generics #where_clause {
                const REASON: &'static ::core::primitive::str = #reason;
            }
        }
    });
    quote! {
        // SAFETY: every field not marked `#[shared]` is `Isolated` whenever the type parameters
        // are, as the function below asserts under exactly these bounds.
        // `#[shared]` fields exist only with `shares_state`, which confines the process to a
        // group that declares shared state (I8).
        #[automatically_derived]
        unsafe impl #bounded_impl_generics ::whirl::DeclaredProcess for #ident #ty_generics #bounded_where {
            const SYSTEM: ::core::primitive::bool = #system;
            const GROUP: ::core::option::Option<&'static ::core::primitive::str> = #group;
            const SHARES_STATE: ::core::option::Option<&'static ::core::primitive::str> =
                #shares_state;
        }
        #isolated_impl
        #system_impl
        #shares_state_impl
        #assertions
    }
}

/// `#[process]` on the impl block of handlers.
fn handlers(args: TokenStream, imp: ItemImpl) -> TokenStream {
    let mut errors = Errors::default();
    if !args.is_empty() {
        errors.spanned(
            &args,
            "options go on the process's state type (`#[process(system)] struct ...`), not on \
             its impl block",
        );
    }
    let model = ProcessImpl::new(&imp);
    let sound = valid::process_impl(&model, &mut errors);
    let item = strip_roles(imp.clone());
    match (errors.finish(), sound) {
        (Ok(()), _) => {
            let generated = impls::implement_process(&model);
            quote!(#item #generated)
        }
        // A wrong method: the process is generated from the sound ones, so the error is
        // reported once, not again by every use of the messages it does handle.
        (Err(err), Some(sound)) => {
            let err = err.to_compile_error();
            let generated = impls::implement_process(&model.keeping(&sound));
            quote!(#item #err #generated)
        }
        (Err(err), None) => {
            let err = err.to_compile_error();
            let stub = stub_process(&model);
            quote!(#item #err #stub)
        }
    }
}

/// After an error, a `Process` impl that accepts nothing, so that the methods kept in the
/// output (`ctx: &mut Ctx<Self>`) do not add errors of their own.
fn stub_process(imp: &ProcessImpl) -> TokenStream {
    let original = imp.original;
    let has_lifetimes = imp.generics.lifetimes().next().is_some();
    if original.trait_.is_some() || !matches!(imp.self_ty, Type::Path(_)) || has_lifetimes {
        return TokenStream::new();
    }
    let self_ty = imp.self_ty;
    let (impl_generics, _, where_clause) = imp.generics.split_for_impl();
    quote! {
        // SAFETY: accepts no message at all; only emitted next to a compile error (I8).
        unsafe impl #impl_generics ::whirl::__private::Process for #self_ty #where_clause {
            type Message = ::core::convert::Infallible;

            fn handle(
                &mut self,
                msg: ::core::convert::Infallible,
                _: &mut ::whirl::__private::Ctx<Self>,
            ) -> ::core::result::Result<(), ::whirl::__private::Failure> {
                match msg {}
            }
        }
    }
}

/// The impl block as written, without the role attributes.
fn strip_roles(mut imp: ItemImpl) -> ItemImpl {
    for item in &mut imp.items {
        if let ImplItem::Fn(f) = item {
            f.attrs.retain(|a| Role::of(a).is_none());
        }
    }
    imp
}

/// `#[handle]`, `#[started]` or `#[terminated]` where no `#[process]` impl block consumed it.
pub fn stray_role(role: Role, args: TokenStream, item: TokenStream) -> TokenStream {
    let _ = args;
    let message = format!(
        "`#[{}]` only works on a method of an impl block marked `#[process]`; add `#[process]` \
         to the impl block",
        role.name()
    );
    let error = syn::Error::new(Span::call_site(), message).to_compile_error();
    quote!(#error #item)
}
