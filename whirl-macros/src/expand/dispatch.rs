//! The bodies of the generated `Process` methods: each handler's arm of the dispatch `match`
//! (a plain call, or an `async fn`'s future handed to the turn), and the calls of the
//! `#[started]` and `#[terminated]` hooks. Uses `ast` and `attr`.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::Ident;

use crate::ast::{Method, ProcessImpl};
use crate::attr::Role;

/// A handler's arm of the dispatch `match`: calls it with the message (and the context, if it
/// takes one) and turns what it returned into the `Result` `handle` returns.
pub fn dispatch_arm(enum_ident: &Ident, variant: &Ident, handler: &Method) -> TokenStream {
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
    let suspend = suspend(handler, &result, quote!(::core::any::type_name::<#message>));
    quote!(#enum_ident::#variant(msg #reply) => {
        ctx.__handling(::core::any::type_name::<#message>);
        #suspend
    })
}

/// The body of a method whose user method is an `async fn` (a handler's arm, or `started`):
/// boxes the future that awaits `result` (the user's call, as `Result<(), Failure>`), with a
/// context of its own, and hands it to the turn with `Ctx::__suspend`; the turn polls it once
/// the method has returned, and it ends by saying how the process goes on. `label` names
/// what runs, for the turn's probe and reports.
fn suspend(method: &Method, result: &TokenStream, label: TokenStream) -> TokenStream {
    // Spanned at `async`, so a future that cannot move between workers (it holds an `Rc`
    // across an `.await`...) is reported at the user's method.
    let asyncness = method.original.sig.asyncness;
    let future = quote_spanned! {asyncness.span()=>
        let future: ::whirl::__private::HandlerFuture<'_> = ::std::boxed::Box::pin(async move {
            let mut ctx = detached;
            let result = #result;
            ctx.__finish(result)
        });
    };
    quote! {
        let detached = ctx.__detached();
        #future
        // SAFETY: the future borrows only the process state this call was given (`self`) and
        // owns the rest; `handle` (or `started`) returns right after, and the runtime keeps
        // the future next to the state, dropping it before the state is used in any other way
        // (I13).
        unsafe { ctx.__suspend(#label, future) };
        ::core::result::Result::Ok(())
    }
}

/// Where a handler's return type is written: what mentions its answer is spanned there, so a
/// return type that is no handler result is reported at it.
pub fn output_span(handler: &Method) -> Span {
    match handler.output {
        syn::ReturnType::Type(_, ty) => ty.span(),
        syn::ReturnType::Default => Span::call_site(),
    }
}

/// The type a handler answers with, if it answers: what its return type carries.
pub fn reply_type(handler: &Method) -> Option<TokenStream> {
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

/// `Process::started`, calling the `#[started]` hook, if the block has one.
///
/// An `async fn` hook's future is handed to the turn as an async handler's is: the turn polls
/// it before any message, and the start is done (a supervisor's synchronous start answered)
/// when it completes; its failure, or a panic, fails the process as a plain hook's would.
pub fn started_fn(imp: &ProcessImpl) -> TokenStream {
    let Some(hook) = imp.hook(Role::Started) else {
        return TokenStream::new();
    };
    let name = hook.ident;
    let result = if hook.is_async() {
        let ctx = hook.takes_ctx().then(|| quote!(, &mut ctx));
        let result = handler_result(hook, quote!(Self::#name(self #ctx).await));
        suspend(hook, &result, quote!(|| "#[started]"))
    } else {
        let ctx = hook.takes_ctx().then(|| quote!(, ctx));
        handler_result(hook, quote!(Self::#name(self #ctx)))
    };
    quote! {
        fn started(
            &mut self,
            ctx: &mut ::whirl::__private::Ctx<Self>,
        ) -> ::core::result::Result<(), ::whirl::__private::Failure> {
            #result
        }
    }
}

/// `Process::terminated`, calling the `#[terminated]` hook (with the exit reason, if it takes
/// it), if the block has one.
pub fn terminated_fn(imp: &ProcessImpl) -> TokenStream {
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
