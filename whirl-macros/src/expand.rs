//! Code generation (phase 3) from a model `valid` accepted. Uses `ast`, `attr`, `generics`,
//! `valid` and `errors`; only `lib.rs` uses it.
//!
//! Everything is named by absolute path (`::core::...`, `::whirl::...`) so that user code with
//! `#![no_implicit_prelude]` or its own `Result` in scope cannot change what the generated code
//! means. Assertions are spanned at the user's tokens, so a failed bound points at the field or
//! parameter that caused it.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{DeriveInput, GenericParam, Ident, ImplItem, Item, ItemImpl, Type};

use crate::ast::{Data, Derive, Method, ProcessImpl, Purpose, Shape};
use crate::attr::{ProcessOptions, Role};
use crate::errors::Errors;
use crate::generics;
use crate::valid;

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
            let generated = implement_process(&model);
            quote!(#item #generated)
        }
        // A wrong method: the process is generated from the sound ones, so the error is
        // reported once, not again by every use of the messages it does handle.
        (Err(err), Some(sound)) => {
            let err = err.to_compile_error();
            let generated = implement_process(&model.keeping(&sound));
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

fn implement_process(imp: &ProcessImpl) -> TokenStream {
    let self_ty = imp.self_ty;
    let generics = imp.generics;
    let (impl_generics, enum_generics, _) = generics.split_for_impl();
    // No bounds beyond the user's: a bound on the messages or the state (even `Send`, through
    // `Addr<P>`'s dependence on `P: Process`) can form a cycle between processes that hold each
    // other's addresses. The assertions in `__whirl_check` check the messages instead.
    let where_clause = generics::where_clause(generics, &[]);
    // Spanned at the user's type, so "not declared with `#[process]`" points there, once.
    let declared = quote_spanned!(self_ty.span()=> <Self as ::whirl::DeclaredProcess>);
    // The `Process` impl (and the `Handles` impls, which need it) hold for the state types that
    // `#[process]` declared: for a generic state, exactly the instantiations whose parameters
    // are `Isolated`. Under a binder, so that an undeclared type or a missing bound is reported
    // once, by the check below or by the handler's message check, not at every impl.
    let declared_bound = quote!(for<'__whirl> #self_ty: ::whirl::DeclaredProcess);
    let process_where = generics::where_clause(generics, std::slice::from_ref(&declared_bound));
    let handlers: Vec<&Method> = imp.handlers().collect();
    let messages: Vec<&Type> = handlers.iter().filter_map(|h| h.message()).collect();
    let variant_names = variant_names(&handlers);
    let variant = |h: &Method| -> Ident {
        handlers
            .iter()
            .position(|other| std::ptr::eq(*other, h))
            .map_or_else(|| h.ident.clone(), |i| variant_names[i].clone())
    };

    let enum_ident = enum_name(imp, &messages);
    let message_ty = quote!(#enum_ident #enum_generics);

    let type_params: Vec<&Ident> = generics
        .params
        .iter()
        .filter_map(|p| match p {
            GenericParam::Type(t) => Some(&t.ident),
            _ => None,
        })
        .collect();
    let phantom_variant = (!type_params.is_empty()).then(|| {
        quote! {
            #[doc(hidden)]
            __Phantom(
                ::core::marker::PhantomData<fn() -> (#(#type_params,)*)>,
                ::core::convert::Infallible,
            ),
        }
    });
    let phantom_ref_arm = (!type_params.is_empty())
        .then(|| quote!(#enum_ident::__Phantom(_, ref never) => match *never {},));
    let phantom_arm = (!type_params.is_empty())
        .then(|| quote!(#enum_ident::__Phantom(_, never) => match never {},));

    let self_name = type_name(self_ty);
    let variants = handlers.iter().filter_map(|h| {
        let (name, message) = (variant(h), h.message()?);
        let doc = format!(
            "A `{}`, handled by [`{self_name}::{}`].",
            type_text(message),
            h.ident
        );
        Some(match reply_type(h) {
            Some(reply) => {
                // Spanned at the return type, so a return type that is no handler result is
                // reported there.
                let reply_to = quote_spanned!(output_span(h)=> ::whirl::ReplyTo<#reply>);
                quote!(#[doc = #doc] #name(#message, #reply_to),)
            }
            None => quote!(#[doc = #doc] #name(#message),),
        })
    });
    let arms = handlers
        .iter()
        .map(|h| dispatch_arm(&enum_ident, &variant(h), h));
    // A message left in the inbox becomes a dead letter holding the posted value itself.
    let dead_letter_arms = handlers.iter().filter_map(|h| {
        let name = variant(h);
        h.message()?;
        let rest = h.answers().then(|| quote_spanned!(output_span(h)=> , _));
        Some(quote! {
            // SAFETY: `msg` was held by this process's message enum, every variant of which
            // holds a `Message` (I8).
            #enum_ident::#name(msg #rest) => unsafe { ::whirl::__private::posted(msg) },
        })
    });
    let dead_letter = quote! {
        #[inline]
        fn __dead_letter(
            msg: <Self as ::whirl::__private::Process>::Message,
        ) -> (
            &'static ::core::primitive::str,
            ::std::boxed::Box<dyn ::core::any::Any + ::core::marker::Send>,
        ) {
            match msg {
                #(#dead_letter_arms)*
                #phantom_arm
            }
        }
    };
    // Every arm publishes its message type through `ctx`; with no handler, nothing uses it.
    let silence_ctx = handlers.is_empty().then(|| quote!(let _ = ctx;));

    let started = started_fn(imp);
    let terminated = terminated_fn(imp);
    // A system process receives termination notices as messages: the notice becomes the
    // variant of the handler whose message type *is* `Down` (compared by `TypeId`, never by
    // how the type is written). A non-system process never receives them.
    let down_arms = handlers.iter().filter_map(|h| {
        let (name, message) = (variant(h), h.message()?);
        let nobody = h
            .answers()
            .then(|| quote_spanned!(output_span(h)=> , ::whirl::ReplyTo::__nobody()));
        Some(quote! {
            if let ::core::option::Option::Some(notice) =
                ::whirl::__private::take_if::<#message>(&mut notice)
            {
                return ::core::option::Option::Some(#enum_ident::#name(notice #nobody));
            }
        })
    });
    let down_message = quote! {
        #[inline]
        fn down_message(
            notice: ::whirl::__private::Down,
        ) -> ::core::option::Option<<Self as ::whirl::__private::Process>::Message> {
            if !#declared::SYSTEM {
                return ::core::option::Option::None;
            }
            let mut notice = ::core::option::Option::Some(notice);
            #(#down_arms)*
            let _ = notice;
            ::core::option::Option::None
        }
    };

    // Each handled type is a `Message`, under a binder (reported once, by the checks below).
    let mut message_bounds: Vec<TokenStream> = messages
        .iter()
        .map(|m| quote!(for<'__whirl> #m: ::whirl::__private::Message))
        .collect();
    let enum_where = generics::where_clause(generics, &message_bounds);
    message_bounds.push(declared_bound.clone());
    let handles_enum_where = generics::where_clause(generics, &message_bounds);
    let cost_arms = handlers.iter().filter_map(|h| {
        let (name, message) = (variant(h), h.message()?);
        let rest = h.answers().then(|| quote_spanned!(output_span(h)=> , _));
        Some(quote!(#enum_ident::#name(ref msg #rest) => <#message as ::whirl::__private::Message>::cost(msg),))
    });

    let conversions = handlers.iter().filter_map(|h| {
        let (name, message) = (variant(h), h.message()?);
        // Bounded (under a binder, so a false bound is not an error of its own) by the
        // message being a `Message`: a type that is not is reported once, by `__whirl_check`.
        let where_clause = generics::where_clause(
            generics,
            &[
                quote!(for<'__whirl> #message: ::whirl::__private::Message),
                declared_bound.clone(),
            ],
        );
        let from_where = generics::where_clause(
            generics,
            &[quote!(for<'__whirl> #message: ::whirl::__private::Message)],
        );
        // Spanned like the `Message` check on the same type, so a type that is not a message
        // is reported once, not again for this call.
        let cost =
            quote_spanned!(message.span()=> <#message as ::whirl::__private::Message>::cost(msg));
        let bypass = quote_spanned!(message.span()=>
            <#message as ::whirl::__private::Message>::BYPASSES_ADMISSION);
        let nobody = h
            .answers()
            .then(|| quote_spanned!(output_span(h)=> , ::whirl::ReplyTo::__nobody()));
        // A handler that answers: `ask` and `call` send the message with a handle its answer
        // goes back through.
        let answers = reply_type(h).map(|reply| {
            // Also bounded by the return type being a handler's output, under a binder: a
            // wrong one is reported once, at the handler.
            // The answer's isolation is checked once, where the handler's result is answered
            // (`answer`, spanned at the return type); here it only keeps the impl from
            // applying, under a binder, so it is not reported again.
            let output = match h.output {
                syn::ReturnType::Type(_, ty) => quote_spanned! {ty.span()=>
                    for<'__whirl> #ty: ::whirl::__private::HandlerOutput,
                    for<'__whirl> #reply: ::whirl::__private::Isolated
                },
                syn::ReturnType::Default => quote!(),
            };
            let where_clause = generics::where_clause(
                generics,
                &[
                    quote!(for<'__whirl> #message: ::whirl::__private::Message),
                    declared_bound.clone(),
                    output,
                ],
            );
            quote! {
                #[automatically_derived]
                impl #impl_generics ::whirl::Answers<#message> for #self_ty #where_clause {
                    type Reply = #reply;

                    #[inline]
                    fn into_request(
                        msg: #message,
                        reply: ::whirl::ReplyTo<#reply>,
                    ) -> <Self as ::whirl::__private::Process>::Message {
                        #enum_ident::#name(msg, reply)
                    }
                }
            }
        });
        Some(quote! {
            #answers
            #[automatically_derived]
            impl #impl_generics ::whirl::__private::Handles<#message> for #self_ty #where_clause {
                #[inline]
                fn into_message(msg: #message) -> <Self as ::whirl::__private::Process>::Message {
                    #enum_ident::#name(msg #nobody)
                }

                const BYPASSES_ADMISSION: ::core::primitive::bool = #bypass;

                #[inline]
                fn cost(msg: &#message) -> ::core::primitive::u64 {
                    #cost
                }
            }
            #[automatically_derived]
            impl #impl_generics ::core::convert::From<#message> for #message_ty #from_where {
                #[inline]
                fn from(msg: #message) -> Self {
                    #enum_ident::#name(msg #nobody)
                }
            }
        })
    });

    // Each handler's parameter must be a `Message`, and a handler for `Down` needs a system
    // process (any other would never see a notice). Both are one check per message, by type:
    // a `const` for impl blocks without parameters (so the `Down` rule is evaluated at compile
    // time), a call in a generic function otherwise (a `const` item cannot name a parameter;
    // there the `Down` rule is not checked).
    let generic = !generics.params.is_empty();
    let message_checks = messages.iter().filter(|_| generic).map(|m| {
        quote_spanned!(m.span()=> let _ = ::whirl::__private::handler_parameter_must_be_a_message::<#m>(true);)
    });
    let down_checks = (!generic).then(|| {
        let panic_text = format!(
            "`{self_name}` handles `Down` but is not declared `#[process(system)]`: only system \
             processes receive termination notices as messages; add `system` to the state \
             type's attribute, or remove the handler"
        );
        // Spanned at the user's type, so "not declared with `#[process]`" points there, once
        // (identical diagnostics are reported once).
        let system = quote_spanned!(self_ty.span()=>
            ::whirl::__private::declared_system::<#self_ty>());
        let checks = messages.iter().map(|m| {
            let check = quote_spanned!(m.span()=>
                ::whirl::__private::handler_parameter_must_be_a_message::<#m>);
            quote_spanned! {m.span()=>
                const _: () = if !#check(#system) {
                    ::core::panic!(#panic_text)
                };
            }
        });
        quote! {
            const _: ::core::primitive::bool = #system;
            #(#checks)*
        }
    });
    // Spanned at the user's type, so "not declared with `#[process]`" points there.
    let enum_doc = format!(
        "Every message `{self_name}` handles: its `Process::Message`, generated by `#[process]`, \
         with one variant per handler, named after the message type it holds.\n\n\
         You rarely name it: post the message types themselves (`addr.post(msg)`; each has a \
         `From` conversion into this enum), and a dead letter left by `{self_name}` holds the \
         posted message itself (`letter.downcast::<M>()`)."
    );
    quote! {
        const _: () = {
            fn __whirl_check #impl_generics () #where_clause {
                #(#message_checks)*
            }
            #down_checks

            #[doc = #enum_doc]
            #[allow(non_camel_case_types, private_interfaces)]
            pub enum #enum_ident #impl_generics #where_clause {
                #(#variants)*
                #phantom_variant
            }

            // SAFETY: the state is checked by `#[process]` on its type (`DeclaredProcess`, named
            // below, exists only then), and every variant of the message enum holds a
            // `Message`, as `__whirl_check` asserts (I8).
            #[automatically_derived]
            unsafe impl #impl_generics ::whirl::__private::Process for #self_ty #process_where {
                type Message = #message_ty;
                const GROUP: ::core::option::Option<&'static ::core::primitive::str> =
                    #declared::GROUP;
                const SHARES_STATE: ::core::option::Option<&'static ::core::primitive::str> =
                    #declared::SHARES_STATE;

                #[inline]
                fn handle(
                    &mut self,
                    msg: <Self as ::whirl::__private::Process>::Message,
                    ctx: &mut ::whirl::__private::Ctx<Self>,
                ) -> ::core::result::Result<(), ::whirl::__private::Failure> {
                    #silence_ctx
                    match msg {
                        #(#arms)*
                        #phantom_arm
                    }
                }

                #started
                #terminated
                #down_message
                #dead_letter
            }

            // The enum itself can be posted too (what `From` conversions produce). With this
            // impl a process always has two or more `Handles` impls, so posting a type it has
            // no handler for reports "`P` has no handler for `M`" rather than a type mismatch.
            #[automatically_derived]
            impl #impl_generics ::whirl::__private::Handles<#message_ty> for #self_ty #handles_enum_where {
                #[inline]
                fn into_message(msg: #message_ty) -> #message_ty {
                    msg
                }
            }

            // SAFETY: each variant holds one handler's message, which `__whirl_check` asserts is
            // a `Message`; the bounds say so again for the impl. (I8)
            #[automatically_derived]
            unsafe impl #impl_generics ::whirl::__private::Isolated for #message_ty #enum_where {}

            // SAFETY: every variant holds a `Message`, which is `Send`: `__whirl_check` asserts
            // it under the enum's own bounds, so a program where a variant is not `Send` does
            // not compile. Written out so that such a program gets that one error, not a second
            // one from the `Process` impl. (I8)
            #[automatically_derived]
            unsafe impl #impl_generics ::core::marker::Send for #message_ty #where_clause {}

            #[automatically_derived]
            impl #impl_generics ::whirl::__private::Message for #message_ty #enum_where {
                #[inline]
                fn cost(&self) -> ::core::primitive::u64 {
                    match *self {
                        #(#cost_arms)*
                        #phantom_ref_arm
                    }
                }
            }

            #(#conversions)*
        };
    }
}

/// The message enum's variant for each handler: named after the message type it holds (the
/// last segment of its path: `Ping` for `msgs::Ping`, `Wrapper` for `Wrapper<T>`). Where two
/// handled types end in the same name, or a type is not a path, the variant is named after
/// the handler instead (`on_ping` gives `OnPing`), so every valid program gets distinct
/// names.
fn variant_names(handlers: &[&Method]) -> Vec<Ident> {
    let by_type: Vec<Option<String>> = handlers
        .iter()
        .map(|h| match h.message() {
            Some(Type::Path(p)) if p.qself.is_none() => {
                p.path.segments.last().map(|s| s.ident.to_string())
            }
            _ => None,
        })
        .collect();
    let mut names: Vec<String> = by_type
        .iter()
        .zip(handlers)
        .map(|(name, h)| match name {
            Some(n)
                if n != "__Phantom"
                    && by_type.iter().filter(|o| o.as_ref() == Some(n)).count() == 1 =>
            {
                n.clone()
            }
            _ => camel_case(&h.ident.to_string()),
        })
        .collect();
    // A handler-named variant may still meet a type-named one: number the later ones.
    for i in 0..names.len() {
        let mut n = 2;
        while names[..i].contains(&names[i]) {
            names[i] = format!(
                "{}{n}",
                names[i].trim_end_matches(|c: char| c.is_ascii_digit())
            );
            n += 1;
        }
    }
    names.iter().map(|n| format_ident!("{}", n)).collect()
}

/// `on_ping` → `OnPing`.
fn camel_case(snake: &str) -> String {
    let camel: String = snake
        .split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect()
            })
        })
        .collect();
    if camel.is_empty() {
        "Handler".to_owned()
    } else {
        camel
    }
}

/// A type as written, for docs: `Vec<u8>`, not `Vec < u8 >`.
fn type_text(ty: &Type) -> String {
    ty.to_token_stream()
        .to_string()
        .replace(" < ", "<")
        .replace(" <", "<")
        .replace("< ", "<")
        .replace(" >", ">")
        .replace(" ,", ",")
        .replace(" :: ", "::")
        .replace(":: ", "::")
}

/// `CounterMessage`, unless a handled type mentions that name.
fn enum_name(imp: &ProcessImpl, messages: &[&Type]) -> Ident {
    let mut name = format_ident!("{}Message", type_name(imp.self_ty));
    while messages
        .iter()
        .chain(std::iter::once(&imp.self_ty))
        .any(|ty| generics::mentions_ident(ty, &name))
    {
        name = format_ident!("_{}", name);
    }
    name
}

/// The last identifier of a path type, for names and messages.
fn type_name(ty: &Type) -> String {
    match ty {
        Type::Path(p) => p
            .path
            .segments
            .last()
            .map_or_else(|| "Process".to_owned(), |s| s.ident.to_string()),
        _ => "Process".to_owned(),
    }
}

fn dispatch_arm(enum_ident: &Ident, variant: &Ident, handler: &Method) -> TokenStream {
    let name = handler.ident;
    let message = handler.message();
    let reply = handler
        .answers()
        .then(|| quote_spanned!(output_span(handler)=> , reply));
    let publish = quote!(ctx.__handling(::core::any::type_name::<#message>););
    if handler.is_async() {
        return async_arm(enum_ident, variant, handler);
    }
    let ctx = handler
        .params
        .get(1)
        .map(|p| quote_spanned!(p.ty.span()=> , ctx));
    let call = quote!(Self::#name(self, msg #ctx));
    let result = handler_result(handler, call);
    // Publishes which message type is being handled, for reports of handlers that do not
    // return: one store, in the arm where the variant is already known.
    quote!(#enum_ident::#variant(msg #reply) => {
        #publish
        #result
    })
}

/// The arm of an `async fn` handler: makes the handler's future (the message, and the reply
/// handle if it answers, moved into it; a context of its own) and hands it to the turn, which
/// polls it once `handle` has returned. The future ends by sending the answer and saying how
/// the process goes on.
fn async_arm(enum_ident: &Ident, variant: &Ident, handler: &Method) -> TokenStream {
    let name = handler.ident;
    let message = handler.message();
    let reply = handler
        .answers()
        .then(|| quote_spanned!(output_span(handler)=> , reply));
    let ctx = handler
        .params
        .get(1)
        .map(|p| quote_spanned!(p.ty.span()=> , &mut ctx));
    let call = quote!(Self::#name(self, msg #ctx).await);
    let result = handler_result(handler, call);
    // Spanned at `async`, so a future that cannot move between workers (it holds an `Rc`
    // across an `.await`...) is reported at the handler.
    let asyncness = handler.original.sig.asyncness;
    let future = quote_spanned! {asyncness.span()=>
        let future: ::whirl::__private::HandlerFuture<'_> = ::std::boxed::Box::pin(async move {
            let mut ctx = detached;
            let result = #result;
            ctx.__finish(result)
        });
    };
    quote!(#enum_ident::#variant(msg #reply) => {
        ctx.__handling(::core::any::type_name::<#message>);
        let detached = ctx.__detached();
        #future
        // SAFETY: the future borrows only the process state this call was given (`self`) and
        // owns the rest; `handle` returns right after, and the runtime keeps the future next
        // to the state, dropping it before the state is used in any other way (I13).
        unsafe { ctx.__suspend(::core::any::type_name::<#message>, future) };
        ::core::result::Result::Ok(())
    })
}

/// Where a handler's return type is written: what mentions its answer is spanned there, so a
/// return type that is no handler result is reported at it.
fn output_span(handler: &Method) -> Span {
    match handler.output {
        syn::ReturnType::Type(_, ty) => ty.span(),
        syn::ReturnType::Default => Span::call_site(),
    }
}

/// The type a handler answers with, if it answers: what its return type carries.
fn reply_type(handler: &Method) -> Option<TokenStream> {
    match handler.output {
        syn::ReturnType::Type(_, ty) if handler.answers() => {
            Some(quote_spanned!(ty.span()=> <#ty as ::whirl::__private::HandlerOutput>::Reply))
        }
        _ => None,
    }
}

/// Converts what a handler or hook returned into `Result<(), Failure>`, sending a handler's
/// answer to `reply`. The result is bound to a name spanned at the declared return type, so a
/// wrong one is reported there.
fn handler_result(method: &Method, call: TokenStream) -> TokenStream {
    match method.output {
        syn::ReturnType::Type(_, ty) if !method.returns_unit() => {
            let result = quote_spanned!(ty.span()=> result);
            let convert = if method.answers() {
                // Spanned at the return type: a refused answer is reported there, once.
                quote_spanned!(ty.span()=> ::whirl::__private::answer(#result, reply))
            } else {
                quote!(::whirl::__private::into_handler_result(#result))
            };
            quote! {{
                let #result = #call;
                #convert
            }}
        }
        _ => quote!({ #call; ::core::result::Result::Ok(()) }),
    }
}

fn started_fn(imp: &ProcessImpl) -> TokenStream {
    let Some(hook) = imp.hook(Role::Started) else {
        return TokenStream::new();
    };
    let name = hook.ident;
    let ctx = hook.takes_ctx().then(|| quote!(, ctx));
    let result = handler_result(hook, quote!(Self::#name(self #ctx)));
    quote! {
        fn started(
            &mut self,
            ctx: &mut ::whirl::__private::Ctx<Self>,
        ) -> ::core::result::Result<(), ::whirl::__private::Failure> {
            #result
        }
    }
}

fn terminated_fn(imp: &ProcessImpl) -> TokenStream {
    let Some(hook) = imp.hook(Role::Terminated) else {
        return TokenStream::new();
    };
    let name = hook.ident;
    let call = if hook.takes_reason() {
        quote!(Self::#name(self, reason))
    } else {
        quote!({ let _ = reason; Self::#name(self) })
    };
    quote! {
        fn terminated(&mut self, reason: &::whirl::__private::ExitReason) {
            #call
        }
    }
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
