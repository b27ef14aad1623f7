//! Which state is shared and mutable: decided from types, never from names.
//!
//! * a `static mut` is, whatever its type: any code may write it;
//! * a `static` is if its type has interior mutability: it is not `Freeze` (an atomic, a
//!   `Mutex`, a `OnceLock`, a `Cell` inside a `Sync` wrapper), or it holds a reference or a
//!   pointer, directly or in a field, to a type that is not `Freeze` (`static R: &AtomicU64 =
//!   &A`);
//! * a thread-local (`thread_local!`, whose key is a `LocalKey<T>`, or `#[thread_local]`) is,
//!   whatever its type: one copy per worker thread is shared by every process that runs on
//!   that thread, and differs between threads;
//! * a few functions of the standard library change process-wide state ([`KNOWN_APIS`]).
//!
//! `const` items are values copied into each use, and immutable `Freeze` statics cannot change:
//! both are fine.

use rustc_middle::ty::{self, Ty, TyCtxt, TypingEnv};
use rustc_span::def_id::DefId;

/// Functions of the standard library that read or write state shared by the whole process,
/// reported when process code calls them. The list is short on purpose: these are the
/// process-wide settings a handler can change through std's API, not statics it can see.
pub const KNOWN_APIS: &[(&str, &str)] = &[
    (
        "std::env::set_var",
        "sets a variable in the environment every thread shares",
    ),
    (
        "std::env::remove_var",
        "removes a variable from the environment every thread shares",
    ),
    (
        "std::env::set_current_dir",
        "changes the working directory every thread shares",
    ),
    (
        "std::panic::set_hook",
        "replaces the panic hook every thread shares",
    ),
    (
        "std::panic::take_hook",
        "takes the panic hook every thread shares",
    ),
];

/// Why a static's type makes it shared mutable state, or `None` if it does not.
pub fn static_sharing<'tcx>(tcx: TyCtxt<'tcx>, def_id: DefId) -> Option<String> {
    if tcx.static_mutability(def_id) == Some(rustc_hir::Mutability::Mut) {
        return Some("it is a `static mut`: any code may write it".into());
    }
    let env = TypingEnv::fully_monomorphized();
    let ty = tcx
        .type_of(def_id)
        .instantiate_identity()
        .skip_normalization();
    if let Some(value) = lazy_value(tcx, ty) {
        // Built once by its own initialiser, then only read: shared mutable state only if
        // what it holds is.
        if !value.is_freeze(tcx, env) {
            return Some(format!(
                "its value has interior mutability (`{value}` is not `Freeze`), and every \
                 process reaches the same one"
            ));
        }
        let mut seen = Vec::new();
        return reaches_interior_mut(tcx, env, value, &mut seen, 0)
            .map(|inner| format!("its value refers to `{inner}`, which has interior mutability"));
    }
    if !ty.is_freeze(tcx, env) {
        return Some(format!(
            "its type has interior mutability (`{}` is not `Freeze`)",
            declared_type(tcx, def_id)
        ));
    }
    let mut seen = Vec::new();
    reaches_interior_mut(tcx, env, ty, &mut seen, 0)
        .map(|inner| format!("it refers to `{inner}`, which has interior mutability"))
}

/// The lazily built types: written once, by their own initialiser, on first use, and only read
/// afterwards (unlike `OnceLock` or `once_cell`'s `OnceCell`, which any code may `set`). Each is
/// (crate, module path, type name), matched on the ADT's definition path.
const LAZY_TYPES: &[(&str, &[&str], &str)] = &[
    ("std", &["sync", "lazy_lock"], "LazyLock"),
    ("std", &["sync", "poison", "lazy_lock"], "LazyLock"),
    ("once_cell", &["sync"], "Lazy"),
    ("lazy_static", &["lazy"], "Lazy"),
];

/// If `ty` is one of [`LAZY_TYPES`], the type of the value it builds.
pub fn lazy_value<'tcx>(tcx: TyCtxt<'tcx>, ty: Ty<'tcx>) -> Option<Ty<'tcx>> {
    let ty::Adt(adt, args) = ty.kind() else {
        return None;
    };
    let did = adt.did();
    let krate = tcx.crate_name(did.krate);
    let path = tcx.def_path(did);
    let names: Vec<String> = path
        .data
        .iter()
        .filter_map(|d| d.data.get_opt_name().map(|n| n.to_string()))
        .collect();
    let (name, module) = names.split_last()?;
    LAZY_TYPES
        .iter()
        .any(|(c, m, n)| {
            krate.as_str() == *c
                && name == n
                && (module.iter().map(String::as_str).eq(m.iter().copied())
                    || module.last().map(String::as_str) == m.last().copied())
        })
        .then(|| args.type_at(0))
}

/// A non-`Freeze` type reachable from `ty` through references, raw pointers or fields.
fn reaches_interior_mut<'tcx>(
    tcx: TyCtxt<'tcx>,
    env: TypingEnv<'tcx>,
    ty: Ty<'tcx>,
    seen: &mut Vec<Ty<'tcx>>,
    depth: usize,
) -> Option<Ty<'tcx>> {
    if depth > 16 || seen.contains(&ty) {
        return None;
    }
    seen.push(ty);
    match ty.kind() {
        ty::Ref(_, pointee, _) | ty::RawPtr(pointee, _) => {
            if !pointee.is_freeze(tcx, env) {
                return Some(*pointee);
            }
            reaches_interior_mut(tcx, env, *pointee, seen, depth + 1)
        }
        ty::Array(elem, _) | ty::Slice(elem) => {
            reaches_interior_mut(tcx, env, *elem, seen, depth + 1)
        }
        ty::Tuple(elems) => elems
            .iter()
            .find_map(|elem| reaches_interior_mut(tcx, env, elem, seen, depth + 1)),
        ty::Adt(adt, args) => adt.all_fields().find_map(|field| {
            let field_ty = field.ty(tcx, args).skip_normalization();
            reaches_interior_mut(tcx, env, field_ty, seen, depth + 1)
        }),
        _ => None,
    }
}

/// Whether `ty` is a thread-local key (`LocalKey<T>`, or a reference to one), and its `T`.
pub fn thread_local_key<'tcx>(tcx: TyCtxt<'tcx>, ty: Ty<'tcx>) -> Option<Ty<'tcx>> {
    let ty = match ty.kind() {
        ty::Ref(_, inner, _) => *inner,
        _ => ty,
    };
    let ty::Adt(adt, args) = ty.kind() else {
        return None;
    };
    let local_key = tcx.get_diagnostic_item(rustc_span::sym::LocalKey)?;
    (adt.did() == local_key).then(|| args.type_at(0))
}

/// The entry of [`KNOWN_APIS`] that `callee` is, if any.
pub fn known_api(tcx: TyCtxt<'_>, callee: DefId) -> Option<&'static (&'static str, &'static str)> {
    if callee.is_local() {
        return None;
    }
    let path = tcx.def_path_str(callee);
    KNOWN_APIS.iter().find(|(api, _)| *api == path)
}

/// A static's type as the user wrote it (`AtomicU64`, not the alias's expansion), or as rustc
/// prints it when the source is not at hand.
pub fn declared_type(tcx: TyCtxt<'_>, def_id: rustc_span::def_id::DefId) -> String {
    if let Some(local) = def_id.as_local() {
        if let rustc_hir::Node::Item(item) = tcx.hir_node_by_def_id(local) {
            if let rustc_hir::ItemKind::Static(_, _, ty, _) = item.kind {
                if ty.span.from_expansion() {
                    return tcx
                        .type_of(def_id)
                        .instantiate_identity()
                        .skip_normalization()
                        .to_string();
                }
                if let Ok(text) = tcx.sess.source_map().span_to_snippet(ty.span) {
                    return text;
                }
            }
        }
    }
    // Another crate's static: as written in its source, when rustc can read it.
    let span = tcx.def_span(def_id);
    if !def_id.is_local() && !span.from_expansion() {
        if let Ok(text) = tcx.sess.source_map().span_to_snippet(span) {
            if let Some((_, rest)) = text.split_once(':') {
                let written = rest.split('=').next().unwrap_or(rest).trim();
                let written = written.trim_end_matches(';').trim();
                if !written.is_empty() {
                    return written.to_string();
                }
            }
        }
    }
    tcx.type_of(def_id)
        .instantiate_identity()
        .skip_normalization()
        .to_string()
}
