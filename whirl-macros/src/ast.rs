//! A small model of what the user wrote: a data type (message, isolated data or process
//! state) or a `#[process]` impl block of handlers.
//!
//! Parsing (phase 1): built from the user's tokens with `attr`, then checked by `valid` and
//! turned into code by `expand`. Uses `attr` and `errors`.

use syn::{
    Attribute, Data as SynData, DeriveInput, Fields, FnArg, Generics, Ident, ImplItem, ImplItemFn,
    ItemImpl, PatType, Receiver, ReturnType, Type,
};

use crate::attr::{self, MessageAttrs, ProcessOptions, Role, Trust};
use crate::errors::Errors;

/// Which derive is running.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Derive {
    /// `#[derive(Message)]`.
    Message,
    /// `#[derive(Isolated)]`.
    Isolated,
}

/// What a data type is being checked as.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A message: `#[derive(Message)]`.
    Message,
    /// Data inside messages or state: `#[derive(Isolated)]`.
    Data,
    /// A process's state: `#[process]` on a struct or enum.
    State,
}

impl Purpose {
    /// How errors name the thing being defined.
    pub fn noun(self) -> &'static str {
        match self {
            Purpose::Message => "a message",
            Purpose::Data => "an `Isolated` type",
            Purpose::State => "process state",
        }
    }
}

/// A struct, enum or union being derived or declared as process state.
pub struct Data<'a> {
    pub original: &'a DeriveInput,
    pub purpose: Purpose,
    pub ident: &'a Ident,
    pub generics: &'a Generics,
    pub shape: Shape<'a>,
    /// `#[message(...)]` on the type itself.
    pub message: MessageAttrs,
    /// `#[process(...)]` options, for process state.
    pub options: ProcessOptions,
}

/// The shape of a data type.
pub enum Shape<'a> {
    Struct(Vec<Field<'a>>),
    Enum(Vec<Variant<'a>>),
    /// Unions are always rejected; the `union` keyword is kept for the error.
    Union(syn::token::Union),
}

/// One variant of an enum.
pub struct Variant<'a> {
    pub original: &'a syn::Variant,
    pub fields: Vec<Field<'a>>,
    /// `#[message(...)]` on the variant.
    pub message: MessageAttrs,
}

/// One field, of a struct or of a variant.
pub struct Field<'a> {
    pub original: &'a syn::Field,
    pub ty: &'a Type,
    /// `#[shared]`: exempt from the isolation check (process state with `shares_state` only).
    pub shared: Option<&'a Attribute>,
    /// `#[isolated(trust = "why")]`: the type is trusted to be plain data, unchecked.
    pub trust: Option<Trust>,
}

impl Field<'_> {
    /// Whether the field's type is a `PhantomData<..>` marker (by its last path segment). Its
    /// type parameters then need no `Isolated` bound of their own: the impl is bounded by the
    /// field's type being `Isolated` instead, which is sound whatever the name resolves to.
    pub fn is_marker(&self) -> bool {
        match self.ty {
            Type::Path(p) => p
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == "PhantomData"),
            _ => false,
        }
    }
}

impl<'a> Data<'a> {
    /// Models `input`, a type being checked for `purpose`.
    pub fn new(
        input: &'a DeriveInput,
        purpose: Purpose,
        options: ProcessOptions,
        errors: &mut Errors,
    ) -> Data<'a> {
        let shape = match &input.data {
            SynData::Struct(s) => Shape::Struct(fields(&s.fields, errors)),
            SynData::Enum(e) => Shape::Enum(
                e.variants
                    .iter()
                    .map(|v| Variant {
                        original: v,
                        fields: fields(&v.fields, errors),
                        message: MessageAttrs::parse(&v.attrs, errors),
                    })
                    .collect(),
            ),
            SynData::Union(u) => Shape::Union(u.union_token),
        };
        Data {
            original: input,
            purpose,
            ident: &input.ident,
            generics: &input.generics,
            shape,
            message: MessageAttrs::parse(&input.attrs, errors),
            options,
        }
    }

    /// Every field, across variants.
    pub fn fields(&self) -> Box<dyn Iterator<Item = &Field<'a>> + '_> {
        match &self.shape {
            Shape::Struct(fields) => Box::new(fields.iter()),
            Shape::Enum(variants) => Box::new(variants.iter().flat_map(|v| v.fields.iter())),
            Shape::Union(_) => Box::new(std::iter::empty()),
        }
    }
}

fn fields<'a>(fields: &'a Fields, errors: &mut Errors) -> Vec<Field<'a>> {
    fields
        .iter()
        .map(|f| Field {
            original: f,
            ty: &f.ty,
            shared: attr::shared(&f.attrs),
            trust: attr::trust(&f.attrs, errors),
        })
        .collect()
}

/// A `#[process]` impl block.
pub struct ProcessImpl<'a> {
    pub original: &'a ItemImpl,
    pub self_ty: &'a Type,
    pub generics: &'a Generics,
    /// Methods carrying a role attribute, in order.
    pub methods: Vec<Method<'a>>,
}

/// A method marked `#[handle]`, `#[started]` or `#[terminated]`.
#[derive(Clone)]
pub struct Method<'a> {
    pub original: &'a ImplItemFn,
    pub ident: &'a Ident,
    pub role: Role,
    /// The role attribute, for spans.
    pub role_attr: &'a Attribute,
    /// Further role attributes on the same method (an error).
    pub extra_roles: Vec<&'a Attribute>,
    pub receiver: Option<&'a Receiver>,
    /// The typed parameters after the receiver.
    pub params: Vec<&'a PatType>,
    pub output: &'a ReturnType,
}

impl<'a> Method<'a> {
    /// For a handler: the message type, if the signature has one.
    pub fn message(&self) -> Option<&'a Type> {
        match self.role {
            Role::Handle => self.params.first().map(|p| &*p.ty),
            Role::Started | Role::Terminated => None,
        }
    }

    /// Whether the method takes the process context (`ctx: &mut Ctx<Self>`).
    pub fn takes_ctx(&self) -> bool {
        match self.role {
            Role::Handle => self.params.len() == 2,
            Role::Started => self.params.len() == 1,
            Role::Terminated => false,
        }
    }

    /// For `#[terminated]`: whether it takes the exit reason.
    pub fn takes_reason(&self) -> bool {
        self.role == Role::Terminated && self.params.len() == 1
    }

    /// Whether the method is an `async fn`.
    pub fn is_async(&self) -> bool {
        self.original.sig.asyncness.is_some()
    }

    /// Whether the method's handler answers: it returns something other than `()` (a
    /// `Result`, or a reply), so its message carries a reply handle.
    pub fn answers(&self) -> bool {
        self.role == Role::Handle && !self.returns_unit()
    }

    /// Whether the method returns `()` (written or not).
    pub fn returns_unit(&self) -> bool {
        match self.output {
            ReturnType::Default => true,
            ReturnType::Type(_, ty) => matches!(&**ty, Type::Tuple(t) if t.elems.is_empty()),
        }
    }
}

impl<'a> ProcessImpl<'a> {
    /// Models an impl block.
    pub fn new(original: &'a ItemImpl) -> ProcessImpl<'a> {
        let methods = original
            .items
            .iter()
            .filter_map(|item| match item {
                ImplItem::Fn(f) => Method::new(f),
                _ => None,
            })
            .collect();
        ProcessImpl {
            original,
            self_ty: &original.self_ty,
            generics: &original.generics,
            methods,
        }
    }

    /// The same block with only the methods `keep` marks (after validation errors: the sound
    /// ones).
    pub fn keeping(&self, keep: &[bool]) -> ProcessImpl<'a> {
        ProcessImpl {
            original: self.original,
            self_ty: self.self_ty,
            generics: self.generics,
            methods: self
                .methods
                .iter()
                .zip(keep)
                .filter(|(_, keep)| **keep)
                .map(|(m, _)| m.clone())
                .collect(),
        }
    }

    /// The handlers.
    pub fn handlers(&self) -> impl Iterator<Item = &Method<'a>> {
        self.methods.iter().filter(|m| m.role == Role::Handle)
    }

    /// The method with a hook role, if any (the first one; duplicates are an error).
    pub fn hook(&self, role: Role) -> Option<&Method<'a>> {
        self.methods.iter().find(|m| m.role == role)
    }
}

impl<'a> Method<'a> {
    fn new(original: &'a ImplItemFn) -> Option<Method<'a>> {
        let mut roles = original
            .attrs
            .iter()
            .filter_map(|a| Role::of(a).map(|role| (role, a)));
        let (role, role_attr) = roles.next()?;
        let extra_roles = roles.map(|(_, a)| a).collect();
        let sig = &original.sig;
        let receiver = sig.receiver();
        let params = sig
            .inputs
            .iter()
            .filter_map(|arg| match arg {
                FnArg::Typed(p) => Some(p),
                FnArg::Receiver(_) => None,
            })
            .collect();
        Some(Method {
            original,
            ident: &sig.ident,
            role,
            role_attr,
            extra_roles,
            receiver,
            params,
            output: &sig.output,
        })
    }
}
