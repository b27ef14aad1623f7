//! Where process code starts: the items of whirl's runtime that the check keys on, and the
//! functions of the crate that run inside a process.
//!
//! The runtime crate is recognised by what it defines, not by how the user imports it: it is
//! the crate among the dependencies whose root exports the `Process` trait and the
//! `__allow_shared` marker. Roots are then found by type:
//!
//! * every method of every local impl of `Process`, `Handles<M>` or `net::Accept` (handlers,
//!   hooks, and what `#[process]` generates around them);
//! * every local function whose signature takes a `Ctx<P>`: only a process has one, so such a
//!   function (an accept function, a helper) runs inside a process whatever reaches it.

use rustc_hir::def::{DefKind, Res};
use rustc_middle::ty::{self, Ty, TyCtxt};
use rustc_span::def_id::{CrateNum, DefId, LOCAL_CRATE};
use rustc_span::Symbol;

/// The runtime's items the check needs.
pub struct Whirl {
    /// The crate that defines them (its code is trusted, like std's, and not walked).
    pub runtime: CrateNum,
    /// `Process`, `Handles` and, with the `net` feature, `Accept`.
    pub root_traits: Vec<DefId>,
    /// The `Ctx` struct.
    pub ctx: Option<DefId>,
    /// `__allow_shared`, the marker `#[allow_shared]` leaves in a body.
    pub allow_marker: DefId,
}

impl Whirl {
    /// Finds the runtime among the crate's dependencies; `None` if the crate does not use whirl
    /// (or is part of whirl itself).
    pub fn find(tcx: TyCtxt<'_>) -> Option<Whirl> {
        for &krate in tcx.crates(()) {
            let root = krate.as_def_id();
            let mut process = None;
            let mut handles = None;
            let mut ctx = None;
            let mut marker = None;
            let mut net = None;
            for child in tcx.module_children(root) {
                let Res::Def(kind, def_id) = child.res else {
                    continue;
                };
                match (kind, child.ident.name.as_str()) {
                    (DefKind::Trait, "Process") => process = Some(def_id),
                    (DefKind::Trait, "Handles") => handles = Some(def_id),
                    (DefKind::Struct, "Ctx") => ctx = Some(def_id),
                    (DefKind::Fn, "__allow_shared") => marker = Some(def_id),
                    (DefKind::Mod, "net") => net = Some(def_id),
                    _ => {}
                }
            }
            // A re-export (the `whirl` facade) points at the same items: take the crate that
            // defines them.
            let (Some(process), Some(marker)) = (process, marker) else {
                continue;
            };
            if process.krate != krate {
                continue;
            }
            let mut root_traits = vec![process];
            root_traits.extend(handles);
            if let Some(net) = net {
                root_traits.extend(tcx.module_children(net).iter().filter_map(|child| {
                    match child.res {
                        Res::Def(DefKind::Trait, id)
                            if child.ident.name == Symbol::intern("Accept") =>
                        {
                            Some(id)
                        }
                        _ => None,
                    }
                }));
            }
            return Some(Whirl {
                runtime: krate,
                root_traits,
                ctx,
                allow_marker: marker,
            });
        }
        None
    }

    /// The local functions that run inside a process, each with why it is a root.
    pub fn roots(&self, tcx: TyCtxt<'_>) -> Vec<(DefId, &'static str)> {
        let mut roots = Vec::new();
        let impls = tcx.all_local_trait_impls(());
        for trait_id in &self.root_traits {
            let Some(impl_ids) = impls.get(trait_id) else {
                continue;
            };
            for impl_id in impl_ids {
                for &item in tcx.associated_item_def_ids(impl_id.to_def_id()) {
                    if tcx.def_kind(item) == DefKind::AssocFn {
                        roots.push((item, "a method of a process"));
                    }
                }
            }
        }
        if let Some(ctx) = self.ctx {
            for owner in tcx.hir_body_owners() {
                let def_id = owner.to_def_id();
                if !matches!(tcx.def_kind(def_id), DefKind::Fn | DefKind::AssocFn) {
                    continue;
                }
                if roots.iter().any(|(r, _)| *r == def_id) {
                    continue;
                }
                let sig = tcx.fn_sig(def_id).instantiate_identity().skip_binder();
                if sig.inputs().iter().any(|ty| mentions_adt(*ty, ctx)) {
                    roots.push((def_id, "takes a process context (`Ctx`)"));
                }
            }
        }
        roots.retain(|(id, _)| id.krate == LOCAL_CRATE);
        roots
    }
}

/// Whether `ty` mentions the ADT `adt` anywhere (`&mut Ctx<P>`, `Option<&Ctx<P>>`...).
fn mentions_adt(ty: Ty<'_>, adt: DefId) -> bool {
    ty.walk().any(|arg| match arg.kind() {
        ty::GenericArgKind::Type(t) => matches!(t.kind(), ty::Adt(def, _) if def.did() == adt),
        _ => false,
    })
}
