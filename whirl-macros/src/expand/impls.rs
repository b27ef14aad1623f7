//! What `#[process]` generates for an impl block of handlers, one generator per item: the
//! checks on the handled types, the message enum, the `Process` impl (with the dispatch from
//! `dispatch`), the enum's own `Handles`, `Isolated`, `Send` and `Message` impls, and each
//! handled type's `Answers`, `Handles` and `From` impls. Uses `ast`, `generics`, `dispatch`
//! and `names`.
//!
//! Everything is generated inside one `const _: () = { ... };`, in the order
//! [`implement_process`] lists.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{GenericParam, Generics, Ident, Type};

use super::dispatch::{self, output_span, reply_type};
use super::names::{enum_name, type_name, type_text, variant_names};
use crate::ast::{Method, ProcessImpl};
use crate::generics;

/// The items generated for a valid `#[process]` impl block (or for the sound methods of one
/// with errors).
pub fn implement_process(imp: &ProcessImpl) -> TokenStream {
    let block = Block::new(imp);
    let checks = block.message_checks();
    let message_enum = block.message_enum();
    let process = block.process_impl();
    let enum_impls = block.enum_impls();
    let conversions = block
        .handled()
        .filter_map(|(h, variant)| block.conversions(h, variant));
    quote! {
        const _: () = {
            #checks
            #message_enum
            #process
            #enum_impls
            #(#conversions)*
        };
    }
}

/// What the generators share: the impl block, its handlers with their variants, the enum's
/// name, and the bounds every impl carries.
struct Block<'a> {
    imp: &'a ProcessImpl<'a>,
    self_ty: &'a Type,
    generics: &'a Generics,
    /// The handlers, in order.
    handlers: Vec<&'a Method<'a>>,
    /// Each handler's variant of the message enum (same order).
    variants: Vec<Ident>,
    /// The types the handlers handle (handlers without one are left out).
    messages: Vec<&'a Type>,
    enum_ident: Ident,
    /// The enum with its generic arguments: `CounterMessage<T>`.
    message_ty: TokenStream,
    /// The block's type parameters, which the enum's hidden `__Phantom` variant uses.
    type_params: Vec<&'a Ident>,
    /// `<Self as DeclaredProcess>`, spanned at the user's type.
    declared: TokenStream,
    /// `for<'__whirl> Self: DeclaredProcess`, the bound of the impls that need a process.
    declared_bound: TokenStream,
    /// No bounds beyond the user's.
    where_clause: TokenStream,
    /// The state type's name, for docs and messages.
    self_name: String,
}

impl<'a> Block<'a> {
    fn new(imp: &'a ProcessImpl<'a>) -> Block<'a> {
        let self_ty = imp.self_ty;
        let generics = imp.generics;
        let (_, enum_generics, _) = generics.split_for_impl();
        let handlers: Vec<&Method> = imp.handlers().collect();
        let messages: Vec<&Type> = handlers.iter().filter_map(|h| h.message()).collect();
        let enum_ident = enum_name(imp, &messages);
        let message_ty = quote!(#enum_ident #enum_generics);
        let type_params = generics
            .params
            .iter()
            .filter_map(|p| match p {
                GenericParam::Type(t) => Some(&t.ident),
                _ => None,
            })
            .collect();
        Block {
            imp,
            self_ty,
            generics,
            variants: variant_names(&handlers),
            handlers,
            messages,
            enum_ident,
            message_ty,
            type_params,
            // Spanned at the user's type, so "not declared with `#[process]`" points there, once.
            declared: quote_spanned!(self_ty.span()=> <Self as ::whirl::DeclaredProcess>),
            // The `Process` impl (and the `Handles` impls, which need it) hold for the state
            // types that `#[process]` declared: for a generic state, exactly the instantiations
            // whose parameters are `Isolated`. Under a binder, so that an undeclared type or a
            // missing bound is reported once, by the check below or by the handler's message
            // check, not at every impl.
            declared_bound: quote!(for<'__whirl> #self_ty: ::whirl::DeclaredProcess),
            // No bounds beyond the user's: a bound on the messages or the state (even `Send`,
            // through `Addr<P>`'s dependence on `P: Process`) can form a cycle between
            // processes that hold each other's addresses. The assertions in `__whirl_check`
            // check the messages instead.
            where_clause: generics::where_clause(generics, &[]),
            self_name: type_name(self_ty),
        }
    }

    /// Each handler with its variant.
    fn handled(&self) -> impl Iterator<Item = (&'a Method<'a>, &Ident)> + '_ {
        self.handlers.iter().copied().zip(&self.variants)
    }

    /// The `impl` generics of every generated impl.
    fn impl_generics(&self) -> syn::ImplGenerics<'a> {
        self.generics.split_for_impl().0
    }

    /// The user's bounds plus `for<'__whirl> M: Message` for each handled type (under a
    /// binder, so a type that is not one is reported once, by the checks), and `extra`.
    fn messages_where(&self, extra: Option<&TokenStream>) -> TokenStream {
        let mut bounds: Vec<TokenStream> = self
            .messages
            .iter()
            .map(|m| quote!(for<'__whirl> #m: ::whirl::__private::Message))
            .collect();
        bounds.extend(extra.cloned());
        generics::where_clause(self.generics, &bounds)
    }

    /// The arm of the enum's hidden `__Phantom` variant (which a block with type parameters
    /// has), in a `match` on the enum by value.
    fn phantom_arm(&self) -> Option<TokenStream> {
        let enum_ident = &self.enum_ident;
        (!self.type_params.is_empty())
            .then(|| quote!(#enum_ident::__Phantom(_, never) => match never {},))
    }

    /// `fn __whirl_check`, and for a block without parameters the `const` checks: each
    /// handler's parameter must be a `Message`, and a handler for `Down` needs a system
    /// process (any other would never see a notice).
    ///
    /// Both are one check per message, by type: a `const` for impl blocks without parameters
    /// (so the `Down` rule is evaluated at compile time), a call in a generic function
    /// otherwise (a `const` item cannot name a parameter; there the `Down` rule is not
    /// checked).
    fn message_checks(&self) -> TokenStream {
        let Block {
            self_ty,
            self_name,
            messages,
            where_clause,
            ..
        } = self;
        let impl_generics = self.impl_generics();
        let generic = !self.generics.params.is_empty();
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
        quote! {
            fn __whirl_check #impl_generics () #where_clause {
                #(#message_checks)*
            }
            #down_checks
        }
    }

    /// The message enum: one variant per handler, holding its message (and the reply handle,
    /// for a handler that answers), and a hidden `__Phantom` one using the type parameters.
    fn message_enum(&self) -> TokenStream {
        let Block {
            enum_ident,
            self_name,
            where_clause,
            type_params,
            ..
        } = self;
        let impl_generics = self.impl_generics();
        let variants = self.handled().filter_map(|(h, name)| {
            let message = h.message()?;
            let doc = format!(
                "A `{}`, handled by [`{self_name}::{}`].",
                type_text(message),
                h.ident
            );
            Some(match reply_type(h) {
                Some(reply) => {
                    // Spanned at the return type, so a return type that is no handler result
                    // is reported there.
                    let reply_to = quote_spanned!(output_span(h)=> ::whirl::ReplyTo<#reply>);
                    quote!(#[doc = #doc] #name(#message, #reply_to),)
                }
                None => quote!(#[doc = #doc] #name(#message),),
            })
        });
        let phantom_variant = (!type_params.is_empty()).then(|| {
            quote! {
                #[doc(hidden)]
                __Phantom(
                    ::core::marker::PhantomData<fn() -> (#(#type_params,)*)>,
                    ::core::convert::Infallible,
                ),
            }
        });
        let enum_doc = format!(
            "Every message `{self_name}` handles: its `Process::Message`, generated by `#[process]`, \
             with one variant per handler, named after the message type it holds.\n\n\
             You rarely name it: post the message types themselves (`addr.post(msg)`; each has a \
             `From` conversion into this enum), and a dead letter left by `{self_name}` holds the \
             posted message itself (`letter.downcast::<M>()`)."
        );
        quote! {
            #[doc = #enum_doc]
            #[allow(non_camel_case_types, private_interfaces)]
            pub enum #enum_ident #impl_generics #where_clause {
                #(#variants)*
                #phantom_variant
            }
        }
    }

    /// `unsafe impl Process`: the message enum, the declared group and shared state, the
    /// dispatch, the hooks, the notice conversion and the dead letters.
    fn process_impl(&self) -> TokenStream {
        let Block {
            self_ty,
            message_ty,
            declared,
            ..
        } = self;
        let impl_generics = self.impl_generics();
        let process_where =
            generics::where_clause(self.generics, std::slice::from_ref(&self.declared_bound));
        let handle = self.handle_fn();
        let started = dispatch::started_fn(self.imp);
        let terminated = dispatch::terminated_fn(self.imp);
        let down_message = self.down_message_fn();
        let dead_letter = self.dead_letter_fn();
        quote! {
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

                #handle
                #started
                #terminated
                #down_message
                #dead_letter
            }
        }
    }

    /// `Process::handle`: the dispatch `match`, one arm per handler.
    fn handle_fn(&self) -> TokenStream {
        let arms = self
            .handled()
            .map(|(h, variant)| dispatch::dispatch_arm(&self.enum_ident, variant, h));
        let phantom_arm = self.phantom_arm();
        // Every arm publishes its message type through `ctx`; with no handler, nothing uses it.
        let silence_ctx = self.handlers.is_empty().then(|| quote!(let _ = ctx;));
        quote! {
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
        }
    }

    /// `Process::down_message`: a system process receives termination notices as messages,
    /// as the variant of the handler whose message type *is* `Down` (compared by `TypeId`,
    /// never by how the type is written). A non-system process never receives them.
    fn down_message_fn(&self) -> TokenStream {
        let Block {
            enum_ident,
            declared,
            ..
        } = self;
        let down_arms = self.handled().filter_map(|(h, name)| {
            let message = h.message()?;
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
        quote! {
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
        }
    }

    /// `Process::__dead_letter`: a message left in the inbox becomes a dead letter holding the
    /// posted value itself.
    fn dead_letter_fn(&self) -> TokenStream {
        let enum_ident = &self.enum_ident;
        let dead_letter_arms = self.handled().filter_map(|(h, name)| {
            h.message()?;
            let rest = h.answers().then(|| quote_spanned!(output_span(h)=> , _));
            Some(quote! {
                // SAFETY: `msg` was held by this process's message enum, every variant of which
                // holds a `Message` (I8).
                #enum_ident::#name(msg #rest) => unsafe { ::whirl::__private::posted(msg) },
            })
        });
        let phantom_arm = self.phantom_arm();
        quote! {
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
        }
    }

    /// The message enum's own impls: `Handles` (the enum itself can be posted), `Isolated`,
    /// `Send`, and `Message` with each variant's cost.
    fn enum_impls(&self) -> TokenStream {
        let Block {
            self_ty,
            message_ty,
            enum_ident,
            where_clause,
            ..
        } = self;
        let impl_generics = self.impl_generics();
        let enum_where = self.messages_where(None);
        let handles_enum_where = self.messages_where(Some(&self.declared_bound));
        let cost_arms = self.handled().filter_map(|(h, name)| {
            let message = h.message()?;
            let rest = h.answers().then(|| quote_spanned!(output_span(h)=> , _));
            Some(quote!(#enum_ident::#name(ref msg #rest) => <#message as ::whirl::__private::Message>::cost(msg),))
        });
        let phantom_ref_arm = (!self.type_params.is_empty())
            .then(|| quote!(#enum_ident::__Phantom(_, ref never) => match *never {},));
        quote! {
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
        }
    }

    /// For one handler's message type `M`: `Answers<M>` if the handler answers, `Handles<M>`
    /// (what posting `M` needs), and `From<M>` for the enum.
    fn conversions(&self, h: &Method, name: &Ident) -> Option<TokenStream> {
        let Block {
            self_ty,
            message_ty,
            enum_ident,
            ..
        } = self;
        let impl_generics = self.impl_generics();
        let message = h.message()?;
        let is_message = quote!(for<'__whirl> #message: ::whirl::__private::Message);
        // Bounded (under a binder, so a false bound is not an error of its own) by the
        // message being a `Message`: a type that is not is reported once, by `__whirl_check`.
        let where_clause = generics::where_clause(
            self.generics,
            &[is_message.clone(), self.declared_bound.clone()],
        );
        let from_where = generics::where_clause(self.generics, &[is_message]);
        // Spanned like the `Message` check on the same type, so a type that is not a message
        // is reported once, not again for this call.
        let cost =
            quote_spanned!(message.span()=> <#message as ::whirl::__private::Message>::cost(msg));
        let bypass = quote_spanned!(message.span()=>
            <#message as ::whirl::__private::Message>::BYPASSES_ADMISSION);
        let nobody = h
            .answers()
            .then(|| quote_spanned!(output_span(h)=> , ::whirl::ReplyTo::__nobody()));
        let answers = self.answers_impl(h, name);
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
    }

    /// `Answers<M>`, for a handler that answers: `ask` and `call` send the message with a
    /// handle its answer goes back through.
    fn answers_impl(&self, h: &Method, name: &Ident) -> Option<TokenStream> {
        let Block {
            self_ty,
            enum_ident,
            ..
        } = self;
        let impl_generics = self.impl_generics();
        let message = h.message()?;
        let reply = reply_type(h)?;
        // Also bounded by the return type being a handler's output, under a binder: a wrong
        // one is reported once, at the handler.
        // The answer's isolation is checked once, where the handler's result is answered
        // (`answer`, spanned at the return type); here it only keeps the impl from applying,
        // under a binder, so it is not reported again.
        let output = match h.output {
            syn::ReturnType::Type(_, ty) => quote_spanned! {ty.span()=>
                for<'__whirl> #ty: ::whirl::__private::HandlerOutput,
                for<'__whirl> #reply: ::whirl::__private::Isolated
            },
            syn::ReturnType::Default => quote!(),
        };
        let where_clause = generics::where_clause(
            self.generics,
            &[
                quote!(for<'__whirl> #message: ::whirl::__private::Message),
                self.declared_bound.clone(),
                output,
            ],
        );
        Some(quote! {
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
        })
    }
}
