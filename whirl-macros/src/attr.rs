//! whirl's own attributes: `#[process(...)]` options, `#[message(...)]`, `#[shared]`,
//! `#[isolated(trust = "...")]`, and the method roles `#[handle]`, `#[started]`, `#[terminated]`.
//!
//! The first step of parsing (phase 1): `ast` reads items with it. Uses only `errors`.

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, Ident, LitStr, Meta};

use crate::errors::Errors;

/// What a method marked inside a `#[process]` impl block is for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `#[handle]`: handles one message type.
    Handle,
    /// `#[started]`: runs before the first message.
    Started,
    /// `#[terminated]`: runs once at termination.
    Terminated,
}

impl Role {
    /// The attribute's name.
    pub fn name(self) -> &'static str {
        match self {
            Role::Handle => "handle",
            Role::Started => "started",
            Role::Terminated => "terminated",
        }
    }

    /// The signature the role requires, for error messages.
    pub fn signature(self, method: &str, message: &str) -> String {
        match self {
            Role::Handle => format!(
                "fn {method}(&mut self, msg: {message}, ctx: &mut Ctx<Self>) -> Result<(), Failure>"
            ),
            Role::Started => {
                format!("fn {method}(&mut self, ctx: &mut Ctx<Self>) -> Result<(), Failure>")
            }
            Role::Terminated => format!("fn {method}(&mut self, reason: &ExitReason)"),
        }
    }

    /// Which role, if any, `attr` marks: `#[handle]`, `#[whirl::handle]`, `#[::whirl::handle]`
    /// and the same for the hooks.
    pub fn of(attr: &Attribute) -> Option<Role> {
        let path = attr.path();
        let last = path.segments.last()?;
        let prefix_ok = match path.segments.len() {
            1 => path.leading_colon.is_none(),
            2 => path.segments[0].ident == "whirl",
            _ => false,
        };
        if !prefix_ok || !last.arguments.is_none() {
            return None;
        }
        [Role::Handle, Role::Started, Role::Terminated]
            .into_iter()
            .find(|role| last.ident == role.name())
    }
}

/// Options of `#[process(...)]` on a state type.
#[derive(Default)]
pub struct ProcessOptions {
    /// `system`: the process receives termination notices as `Down` messages.
    pub system: Option<Ident>,
    /// `group = "name"`: the group the process is meant to run in.
    pub group: Option<LitStr>,
    /// `unsafe(shares_state = "reason")`: the process knowingly shares state within its group.
    pub shares_state: Option<SharesState>,
    /// Whether every option parsed; checks that depend on the options are skipped otherwise,
    /// so that one typo does not cause a cascade of errors.
    pub complete: bool,
}

/// The `shares_state` option: the keyword, for spans, and the reason given.
pub struct SharesState {
    pub keyword: Ident,
    pub reason: Option<LitStr>,
}

const PROCESS_OPTIONS: &str = "expected `system`, `group = \"name\"` or \
     `unsafe(shares_state = \"why the state is shared\")`";

const UNSAFE_OPTIONS: &str =
    "the only option inside `unsafe(...)` is `shares_state = \"why the state is shared\"`";

impl ProcessOptions {
    /// Parses the arguments of `#[process(...)]`, collecting every error into `errors`.
    pub fn parse(args: TokenStream, errors: &mut Errors) -> ProcessOptions {
        let mut options = ProcessOptions::default();
        let parser = syn::meta::parser(|meta| {
            let Some(ident) = meta.path.get_ident().cloned() else {
                return Err(meta.error(format_args!("unknown option; {PROCESS_OPTIONS}")));
            };
            if ident == "system" {
                if options.system.is_some() {
                    return Err(meta.error("`system` is given twice"));
                }
                options.system = Some(ident);
            } else if ident == "group" {
                if options.group.is_some() {
                    return Err(meta.error("`group` is given twice"));
                }
                options.group = Some(meta.value()?.parse()?);
            } else if ident == "unsafe" {
                // `unsafe(shares_state = "why")`: the one option that opts out of isolation is
                // spelled with `unsafe`, like every other way around the checks.
                meta.parse_nested_meta(|inner| {
                    let Some(ident) = inner.path.get_ident().cloned() else {
                        return Err(inner.error(UNSAFE_OPTIONS));
                    };
                    if ident != "shares_state" {
                        return Err(inner.error(UNSAFE_OPTIONS));
                    }
                    if options.shares_state.is_some() {
                        return Err(inner.error("`shares_state` is given twice"));
                    }
                    let reason = if inner.input.peek(syn::Token![=]) {
                        Some(inner.value()?.parse()?)
                    } else {
                        None
                    };
                    options.shares_state = Some(SharesState {
                        keyword: ident,
                        reason,
                    });
                    Ok(())
                })?;
            } else if ident == "shares_state" {
                return Err(meta.error(
                    "`shares_state` lets this process share mutable state with the other \
                     processes of its group, which whirl cannot check: write it as \
                     `unsafe(shares_state = \"what is shared, and why a process of its own would \
                     not do\")`",
                ));
            } else {
                return Err(meta.error(format_args!("unknown option `{ident}`; {PROCESS_OPTIONS}")));
            }
            Ok(())
        });
        match parser.parse2(args) {
            Ok(()) => options.complete = true,
            Err(err) => errors.push(err),
        }
        options
    }
}

/// `#[message(cost = EXPR, bypass_admission)]`.
#[derive(Default)]
pub struct MessageAttrs {
    /// The cost expression, a `u64` that may use `self`.
    pub cost: Option<Expr>,
    /// `bypass_admission`, where it was written.
    pub bypass_admission: Option<Span>,
}

impl MessageAttrs {
    /// Reads every `#[message(...)]` among `attrs`.
    pub fn parse(attrs: &[Attribute], errors: &mut Errors) -> MessageAttrs {
        let mut parsed = MessageAttrs::default();
        for attr in attrs.iter().filter(|a| a.path().is_ident("message")) {
            let result = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("cost") {
                    if parsed.cost.is_some() {
                        return Err(meta.error("`cost` is given twice"));
                    }
                    parsed.cost = Some(meta.value()?.parse()?);
                    Ok(())
                } else if meta.path.is_ident("bypass_admission") {
                    if parsed.bypass_admission.is_some() {
                        return Err(meta.error("`bypass_admission` is given twice"));
                    }
                    if !meta.input.is_empty() && !meta.input.peek(syn::Token![,]) {
                        return Err(meta.error("`bypass_admission` takes no value"));
                    }
                    parsed.bypass_admission = Some(meta.path.span());
                    Ok(())
                } else {
                    Err(meta.error(
                        "unknown option; expected `cost = EXPR` (a `u64`) or `bypass_admission`",
                    ))
                }
            });
            if let Err(err) = result {
                errors.push(err);
            }
        }
        parsed
    }
}

/// `#[isolated(trust = "why")]` on a field: the field's type is taken to be plain data without
/// the `Isolated` check, for a reason the user states.
pub struct Trust {
    /// The attribute, for spans.
    pub attr: Attribute,
    /// The reason, if one parsed.
    pub reason: Option<LitStr>,
}

const TRUST_FORM: &str = "expected `#[isolated(trust = \"why this field's type holds no shared \
     mutable state\")]`";

/// Reads the `#[isolated(...)]` attributes among a field's `attrs`: the first becomes the
/// field's [`Trust`]; a second one, or a malformed one, is reported.
pub fn trust(attrs: &[Attribute], errors: &mut Errors) -> Option<Trust> {
    let mut found: Option<Trust> = None;
    for attr in isolated_attrs(attrs) {
        if found.is_some() {
            errors.spanned(attr, "`#[isolated(...)]` is given twice on this field");
            continue;
        }
        let mut reason = None;
        let result = match &attr.meta {
            Meta::List(_) => attr.parse_nested_meta(|meta| {
                if !meta.path.is_ident("trust") {
                    return Err(meta.error(format_args!("unknown option; {TRUST_FORM}")));
                }
                if reason.is_some() {
                    return Err(meta.error("`trust` is given twice"));
                }
                if !meta.input.peek(syn::Token![=]) {
                    return Err(meta.error(format_args!("`trust` needs a reason; {TRUST_FORM}")));
                }
                reason = Some(meta.value()?.parse::<LitStr>()?);
                Ok(())
            }),
            _ => Err(syn::Error::new_spanned(attr, TRUST_FORM)),
        };
        match result {
            Ok(()) if reason.is_none() => errors.spanned(attr, TRUST_FORM),
            Ok(()) => {}
            Err(err) => errors.push(err),
        }
        found = Some(Trust {
            attr: attr.clone(),
            reason,
        });
    }
    found
}

/// The `#[isolated(...)]` attributes among `attrs`.
pub fn isolated_attrs(attrs: &[Attribute]) -> impl Iterator<Item = &Attribute> {
    attrs.iter().filter(|a| a.path().is_ident("isolated"))
}

/// The `#[shared]` attribute of a field, if present.
pub fn shared(attrs: &[Attribute]) -> Option<&Attribute> {
    attrs.iter().find(|a| a.path().is_ident("shared"))
}

/// The `#[message]` attributes among `attrs`, to reject where they do not belong.
pub fn message_attrs(attrs: &[Attribute]) -> impl Iterator<Item = &Attribute> {
    attrs.iter().filter(|a| a.path().is_ident("message"))
}

/// Whether `attr` has arguments (`#[shared(x)]`, `#[handle = 1]`).
pub fn has_arguments(attr: &Attribute) -> bool {
    !matches!(attr.meta, Meta::Path(_))
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;
    use syn::parse_quote;

    #[test]
    fn roles_are_recognised_with_or_without_the_crate_path() {
        let attrs: Vec<Attribute> = vec![
            parse_quote!(#[handle]),
            parse_quote!(#[whirl::started]),
            parse_quote!(#[terminated]),
            parse_quote!(#[other::handle]),
            parse_quote!(#[inline]),
        ];
        let roles: Vec<Option<&str>> = attrs.iter().map(|a| Role::of(a).map(Role::name)).collect();
        assert_eq!(
            roles,
            [
                Some("handle"),
                Some("started"),
                Some("terminated"),
                None,
                None
            ]
        );
    }

    #[test]
    fn process_options_parse_and_typos_are_reported() {
        let mut errors = Errors::default();
        let options = ProcessOptions::parse(
            quote!(system, group = "web", unsafe(shares_state = "why")),
            &mut errors,
        );
        assert!(errors.finish().is_ok());
        assert!(options.complete && options.system.is_some());
        assert_eq!(options.group.map(|g| g.value()).as_deref(), Some("web"));
        assert!(options.shares_state.is_some_and(|s| s.reason.is_some()));

        let mut errors = Errors::default();
        let options = ProcessOptions::parse(quote!(shares_state = "why"), &mut errors);
        assert!(!options.complete);
        let err = errors
            .finish()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("unsafe(shares_state"), "{err}");

        let mut errors = Errors::default();
        let options = ProcessOptions::parse(quote!(sytem), &mut errors);
        assert!(!options.complete);
        let err = errors
            .finish()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("unknown option `sytem`"), "{err}");
    }
}
