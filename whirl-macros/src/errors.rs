//! Errors collected across a macro's phases, so that one compile reports every problem, each
//! spanned at the user's token. The bottom of the crate: every phase uses it, it uses none.

use std::fmt::Display;

use proc_macro2::Span;
use quote::ToTokens;

/// Collects errors so that all of them are reported at once.
#[derive(Default)]
pub struct Errors(Option<syn::Error>);

impl Errors {
    /// Adds an error.
    pub fn push(&mut self, err: syn::Error) {
        match &mut self.0 {
            Some(first) => first.combine(err),
            None => self.0 = Some(err),
        }
    }

    /// Adds an error spanned at `tokens`.
    pub fn spanned(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// Adds an error at `span`.
    pub fn at(&mut self, span: Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    /// Whether nothing was reported.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// Adds everything `other` collected.
    pub fn append(&mut self, other: Errors) {
        if let Some(err) = other.0 {
            self.push(err);
        }
    }

    /// `Ok` if nothing was reported.
    pub fn finish(self) -> syn::Result<()> {
        match self.0 {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }
}
