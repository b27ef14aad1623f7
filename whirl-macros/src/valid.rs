//! Validation, the second phase: checks on the model `ast` parsed. Each check reports every
//! problem it finds, spanned at the user's token and saying what to do, so one compile shows
//! them all; `expand` runs only on a model that passed. Uses `errors`, `attr`, `ast` and
//! `generics`.

use std::collections::BTreeMap;

use quote::ToTokens;
use syn::{GenericParam, Type};

use crate::ast::{Data, Method, ProcessImpl, Purpose, Shape};
use crate::attr::{self, Role};
use crate::errors::Errors;
use crate::generics::normalized;

/// Checks a data type: a message, isolated data, or process state.
pub fn data(data: &Data, errors: &mut Errors) {
    let noun = data.purpose.noun();
    if let Shape::Union(token) = &data.shape {
        errors.spanned(
            token,
            format_args!(
                "{noun} cannot be a union: only one field is live at a time and the compiler \
                 cannot tell which, so isolation cannot be checked; use an enum"
            ),
        );
    }
    for param in &data.generics.params {
        if let GenericParam::Lifetime(lifetime) = param {
            let lifetime = &lifetime.lifetime;
            errors.spanned(
                lifetime,
                match data.purpose {
                    Purpose::State => format!(
                        "process state cannot borrow: a process lives on after the code that \
                         spawned it, so `{lifetime}` could dangle; own the data or share it \
                         immutably (`Arc<T>`, `&'static T`)"
                    ),
                    Purpose::Message | Purpose::Data => format!(
                        "{noun} cannot borrow: it is moved to another process, which handles \
                         it later on another thread, so `{lifetime}` could dangle; own the \
                         data (`String`, `Vec<T>`, `Box<T>`) or share it immutably \
                         (`Arc<T>`, `&'static T`)"
                    ),
                },
            );
        }
    }
    for field in data.fields() {
        for attr in attr::message_attrs(&field.original.attrs) {
            errors.spanned(
                attr,
                "`#[message(...)]` goes on the message type or on an enum variant, not on a field",
            );
        }
        if let Some(trust) = &field.trust {
            if let Some(reason) = trust
                .reason
                .as_ref()
                .filter(|r| r.value().trim().is_empty())
            {
                errors.spanned(
                    reason,
                    "the reason cannot be empty: say why this field's type holds no shared \
                     mutable state (it is owned data, or immutable once built)",
                );
            }
            if field.shared.is_some() {
                errors.spanned(
                    &trust.attr,
                    "a field is either `#[shared]` (state shared on purpose within a group) or \
                     `#[isolated(trust = ...)]` (plain data the compiler cannot see into), not \
                     both",
                );
            }
        }
        let Some(shared) = field.shared else { continue };
        if attr::has_arguments(shared) {
            errors.spanned(shared, "`#[shared]` takes no arguments");
        }
        match data.purpose {
            Purpose::State if data.options.shares_state.is_some() || !data.options.complete => {}
            Purpose::State => errors.spanned(
                shared,
                "`#[shared]` exempts a field from the isolation check only in a process declared \
                 `#[process(unsafe(shares_state = \"why the state is shared\"))]`",
            ),
            Purpose::Message | Purpose::Data => errors.spanned(
                shared,
                format_args!(
                    "`#[shared]` has no place in {noun}: everything in it crosses process \
                     boundaries, so every field must be `Isolated`"
                ),
            ),
        }
    }
    let variant_attrs = match &data.shape {
        Shape::Enum(variants) => variants
            .iter()
            .flat_map(|v| attr::isolated_attrs(&v.original.attrs))
            .collect(),
        _ => Vec::new(),
    };
    for attr in attr::isolated_attrs(&data.original.attrs).chain(variant_attrs) {
        errors.spanned(
            attr,
            "`#[isolated(trust = \"why\")]` goes on a field, so that every other field is still \
             checked; to trust a whole type of your own, write \
             `whirl::trust_isolated!(Type => \"why\");`",
        );
    }
    if let Shape::Enum(variants) = &data.shape {
        for span in variants.iter().filter_map(|v| v.message.bypass_admission) {
            errors.at(
                span,
                "`bypass_admission` applies to the whole message type: put it in the enum's own \
                 `#[message(...)]`",
            );
        }
    }
    if data.purpose != Purpose::Message {
        let variant_attrs = match &data.shape {
            Shape::Enum(variants) => variants
                .iter()
                .flat_map(|v| attr::message_attrs(&v.original.attrs))
                .collect(),
            _ => Vec::new(),
        };
        for attr in attr::message_attrs(&data.original.attrs).chain(variant_attrs) {
            errors.spanned(
                attr,
                format_args!(
                    "`#[message(...)]` belongs on a `#[derive(Message)]` type, not on {noun}"
                ),
            );
        }
    }
    if data.purpose == Purpose::State && data.options.complete {
        options(data, errors);
    }
}

fn options(data: &Data, errors: &mut Errors) {
    let options = &data.options;
    if let Some(group) = &options.group {
        if group.value().trim().is_empty() {
            errors.spanned(group, "the group name cannot be empty");
        }
    }
    let Some(shares) = &options.shares_state else {
        return;
    };
    match &shares.reason {
        None => errors.spanned(
            &shares.keyword,
            "`shares_state` needs a reason: `unsafe(shares_state = \"what is shared, and why a \
             process of its own would not do\")`",
        ),
        Some(reason) if reason.value().trim().is_empty() => errors.spanned(
            reason,
            "the reason for sharing state cannot be empty: say what is shared, and why a \
             process of its own would not do",
        ),
        Some(_) => {}
    }
    if data.fields().all(|f| f.shared.is_none()) {
        errors.spanned(
            &shares.keyword,
            "`shares_state` is declared but no field is marked `#[shared]`; mark the fields \
             holding the shared state, or remove `shares_state`",
        );
    }
}

/// Checks a `#[process]` impl block.
///
/// Returns what generation may still use after an error: `None` if the impl block itself is
/// wrong (no process can be generated from it), else, per method, whether it is sound. The
/// expansion then generates the process from the sound methods only, so that a wrong hook or
/// handler is reported once, not again by every post of a message the process does handle.
pub fn process_impl(imp: &ProcessImpl, errors: &mut Errors) -> Option<Vec<bool>> {
    let mut block_ok = true;
    let original = imp.original;
    if let Some((_, path, _)) = &original.trait_ {
        block_ok = false;
        errors.spanned(
            path,
            "`#[process]` goes on the inherent impl block holding the handlers \
             (`impl Counter { ... }`), not on a trait impl",
        );
    }
    if let Some(unsafety) = &original.unsafety {
        block_ok = false;
        errors.spanned(unsafety, "a `#[process]` impl block cannot be `unsafe`");
    }
    for param in &imp.generics.params {
        match param {
            GenericParam::Lifetime(l) => {
                block_ok = false;
                errors.spanned(
                    &l.lifetime,
                    "a process is `'static`: its impl block cannot have lifetime parameters",
                );
            }
            GenericParam::Const(_) | GenericParam::Type(_) => {}
        }
    }
    if !matches!(imp.self_ty, Type::Path(_)) {
        block_ok = false;
        errors.spanned(
            imp.self_ty,
            "`#[process]` implements a named state type (a struct or enum marked `#[process]`)",
        );
    }
    let mut handled: BTreeMap<String, &Method> = BTreeMap::new();
    let mut hooks: BTreeMap<&str, &Method> = BTreeMap::new();
    let mut sound = Vec::with_capacity(imp.methods.len());
    for method in &imp.methods {
        let mut own = Errors::default();
        signature(method, &mut own);
        let mut ok = own.is_empty();
        errors.append(own);
        match method.role {
            Role::Handle => {
                let Some(message) = method.message() else {
                    sound.push(false);
                    continue;
                };
                match handled.get(&normalized(message)) {
                    Some(first) => {
                        ok = false;
                        errors.spanned(
                            message,
                            format_args!(
                                "`{}` is already handled by `{}`: a process has one handler per \
                             message type",
                                type_text(message),
                                first.ident
                            ),
                        );
                    }
                    None => {
                        handled.insert(normalized(message), method);
                    }
                }
            }
            Role::Started | Role::Terminated => match hooks.get(method.role.name()) {
                Some(first) => {
                    ok = false;
                    errors.spanned(
                        method.role_attr,
                        format_args!(
                            "`#[{}]` is already on `{}`: a process has one such hook",
                            method.role.name(),
                            first.ident
                        ),
                    );
                }
                None => {
                    hooks.insert(method.role.name(), method);
                }
            },
        }
        sound.push(ok);
    }
    block_ok.then_some(sound)
}

/// Checks one method's attributes and signature against its role.
fn signature(method: &Method, errors: &mut Errors) {
    let role = method.role;
    let name = role.name();
    let sig = &method.original.sig;
    let message_text = method.message().map_or_else(
        || "Msg".to_owned(),
        |m| match m {
            Type::Reference(r) => type_text(&r.elem),
            _ => type_text(m),
        },
    );
    let expected = role.signature(&method.ident.to_string(), &message_text);

    for extra in &method.extra_roles {
        errors.spanned(
            extra,
            "a method has one role: `#[handle]`, `#[started]` or `#[terminated]`",
        );
    }
    if attr::has_arguments(method.role_attr) {
        errors.spanned(
            method.role_attr,
            format_args!("`#[{name}]` takes no arguments"),
        );
    }
    if let (Some(asyncness), Role::Terminated) = (&sig.asyncness, role) {
        errors.spanned(
            asyncness,
            "`#[terminated]` hooks cannot be `async`: the process is terminating and takes no \
             more turns to await in; make it a plain `fn`, and post what must wait to another \
             process",
        );
    }
    if let Some(unsafety) = &sig.unsafety {
        errors.spanned(
            unsafety,
            format_args!("`#[{name}]` methods cannot be `unsafe`"),
        );
    }
    if let Some(abi) = &sig.abi {
        errors.spanned(abi, format_args!("`#[{name}]` methods cannot have an ABI"));
    }
    if !sig.generics.params.is_empty() {
        errors.spanned(
            &sig.generics,
            format_args!(
                "`#[{name}]` methods cannot be generic: each handler handles exactly one \
                 message type; expected `{expected}`"
            ),
        );
    }
    match method.receiver {
        None => errors.spanned(
            &sig.ident,
            format_args!("`#[{name}]` methods take `&mut self` first; expected `{expected}`"),
        ),
        Some(receiver)
            if receiver.reference.is_none()
                || receiver.mutability.is_none()
                || receiver.colon_token.is_some() =>
        {
            errors.spanned(
                receiver,
                format_args!("`#[{name}]` methods take `&mut self`; expected `{expected}`"),
            );
        }
        Some(_) => {}
    }

    let params = &method.params;
    let (min, max) = match role {
        Role::Handle => (1, 2),
        Role::Started | Role::Terminated => (0, 1),
    };
    if params.len() < min {
        errors.at(
            sig.paren_token.span.join(),
            format_args!("a handler takes the message it handles; expected `{expected}`"),
        );
    }
    for extra in params.iter().skip(max) {
        errors.spanned(
            extra,
            format_args!("unexpected parameter; expected `{expected}`"),
        );
    }
    match role {
        Role::Handle => {
            if let Some(message) = params.first() {
                message_param(&message.ty, &expected, errors);
            }
            if let Some(ctx) = params.get(1) {
                ctx_param(&ctx.ty, &expected, errors);
            }
        }
        Role::Started => {
            if let Some(ctx) = params.first() {
                if !is_ref_to(&ctx.ty, "Ctx", true) {
                    errors.spanned(
                        &ctx.ty,
                        format_args!(
                            "`#[started]` takes the process context, `ctx: &mut Ctx<Self>`, or \
                             nothing; expected `{expected}`"
                        ),
                    );
                }
            }
        }
        Role::Terminated => {
            if let Some(reason) = params.first() {
                if !is_ref_to(&reason.ty, "ExitReason", false) {
                    errors.spanned(
                        &reason.ty,
                        format_args!(
                            "`#[terminated]` takes the exit reason by reference; expected `{expected}`"
                        ),
                    );
                }
            }
            if !method.returns_unit() {
                errors.spanned(
                    method.output,
                    "`#[terminated]` cannot fail or return a value: the process is already \
                     terminating; return `()`",
                );
            }
        }
    }
}

fn message_param(ty: &Type, expected: &str, errors: &mut Errors) {
    match ty {
        Type::Reference(r) => errors.spanned(
            r.and_token,
            format_args!(
                "handlers take their message by value: ownership moves from the sender to the \
                 receiving process; expected `{expected}`"
            ),
        ),
        Type::ImplTrait(_) | Type::Infer(_) | Type::TraitObject(_) => errors.spanned(
            ty,
            format_args!("a handler's message must be a named type; expected `{expected}`"),
        ),
        _ => {}
    }
}

fn ctx_param(ty: &Type, expected: &str, errors: &mut Errors) {
    if !is_ref_to(ty, "Ctx", true) {
        errors.spanned(
            ty,
            format_args!(
                "the parameter after the message is the process context, `ctx: &mut Ctx<Self>`; \
                 expected `{expected}`"
            ),
        );
    }
}

/// Whether `ty` is `&T` (or `&mut T`) where `T`'s path ends in `name`.
fn is_ref_to(ty: &Type, name: &str, mutable: bool) -> bool {
    let Type::Reference(r) = ty else { return false };
    if r.mutability.is_some() != mutable {
        return false;
    }
    match &*r.elem {
        Type::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == name),
        _ => false,
    }
}

/// A type as the user would write it: `Vec<u8>`, not `Vec < u8 >`.
fn type_text(ty: &Type) -> String {
    let text = ty.to_token_stream().to_string();
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        let prev = out.chars().last();
        let drop_space = c == ' '
            && (matches!(next, Some('<' | '>' | ',' | ':' | ')' | ']'))
                || matches!(prev, Some('<' | '&' | '(' | '[' | ':')));
        if !drop_space {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    #[test]
    fn types_are_printed_as_written() {
        let ty: Type = parse_quote!(std::collections::HashMap<String, Vec<(u8, &'static str)>>);
        assert_eq!(
            type_text(&ty),
            "std::collections::HashMap<String, Vec<(u8, &'static str)>>"
        );
    }

    #[test]
    fn started_hooks_may_be_async_terminated_hooks_may_not() {
        let imp: syn::ItemImpl = parse_quote! {
            impl Loader {
                #[started] async fn open(&mut self, ctx: &mut Ctx<Self>) -> Result<(), Failure> { Ok(()) }
                #[terminated] async fn close(&mut self) {}
            }
        };
        let model = ProcessImpl::new(&imp);
        let mut errors = Errors::default();
        let sound = process_impl(&model, &mut errors);
        let messages: Vec<String> = match errors.finish() {
            Ok(()) => Vec::new(),
            Err(err) => err.into_iter().map(|e| e.to_string()).collect(),
        };
        assert_eq!(messages.len(), 1, "{messages:#?}");
        assert!(messages[0].contains("`#[terminated]` hooks cannot be `async`"));
        assert_eq!(
            sound,
            Some(vec![true, false]),
            "the async `started` hook is kept"
        );
    }

    #[test]
    fn handler_signatures_are_checked() {
        let imp: syn::ItemImpl = parse_quote! {
            impl Counter {
                #[handle] fn ok(&mut self, m: Hit, ctx: &mut Ctx<Self>) -> Result<(), Failure> { Ok(()) }
                #[handle] fn shared(&self, m: Reset) {}
                #[handle] fn twice(&mut self, m: Hit) {}
                #[handle] fn borrowed(&mut self, m: &Get) {}
                #[started] fn begin(&mut self, ctx: Ctx<Self>) {}
                fn helper(&self) {}
            }
        };
        let model = ProcessImpl::new(&imp);
        assert_eq!(model.methods.len(), 5, "unmarked methods are left alone");
        let mut errors = Errors::default();
        process_impl(&model, &mut errors);
        let messages: Vec<String> = match errors.finish() {
            Ok(()) => Vec::new(),
            Err(err) => err.into_iter().map(|e| e.to_string()).collect(),
        };
        assert_eq!(messages.len(), 4, "{messages:#?}");
        assert!(messages[0].contains("take `&mut self`"));
        assert!(messages[1].contains("`Hit` is already handled by `ok`"));
        assert!(messages[2].contains("by value"));
        assert!(messages[3].contains("process context"));
    }
}
