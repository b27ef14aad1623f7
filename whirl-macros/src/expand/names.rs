//! The names `#[process]` makes up for an impl block: the message enum's, its variants', and
//! the texts its docs show. Uses `ast` and `generics`.

use quote::{format_ident, ToTokens};
use syn::{Ident, Type};

use crate::ast::{Method, ProcessImpl};
use crate::generics;

/// The message enum's variant for each handler: named after the message type it holds (the
/// last segment of its path: `Ping` for `msgs::Ping`, `Wrapper` for `Wrapper<T>`). Where two
/// handled types end in the same name, or a type is not a path, the variant is named after
/// the handler instead (`on_ping` gives `OnPing`), so every valid program gets distinct
/// names.
pub fn variant_names(handlers: &[&Method]) -> Vec<Ident> {
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
pub fn type_text(ty: &Type) -> String {
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
pub fn enum_name(imp: &ProcessImpl, messages: &[&Type]) -> Ident {
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
pub fn type_name(ty: &Type) -> String {
    match ty {
        Type::Path(p) => p
            .path
            .segments
            .last()
            .map_or_else(|| "Process".to_owned(), |s| s.ident.to_string()),
        _ => "Process".to_owned(),
    }
}
