//! `#[allow_shared]` on statics, across the workspace's crates.
//!
//! On a function the marker is in the function's MIR, which the walk reads anyway, in whatever
//! crate of the workspace the function is. On a static it is in the initialiser, whose MIR
//! rustc keeps only inside the static's own crate. So each crate, when the driver checks it,
//! lists its marked statics in a file of the directory `cargo whirl` names
//! ([`crate::env::ALLOWS_DIR_ENV`]), one per crate, and a crate that reaches a static of another
//! workspace crate reads that crate's list. Cargo checks a crate before the crates that use
//! it, and a crate that did not change keeps its file from the run that checked it.

use std::collections::HashMap;
use std::path::PathBuf;

use rustc_hir::def::DefKind;
use rustc_middle::mir;
use rustc_middle::ty::{self, TyCtxt};
use rustc_span::def_id::{CrateNum, DefId, LOCAL_CRATE};
use rustc_span::Span;

/// Statics of this crate marked `#[allow_shared]`: def id → (reason, where).
pub type Local = HashMap<DefId, (String, Span)>;

/// Finds the marker in the initialiser of every static of the crate.
pub fn local_statics(tcx: TyCtxt<'_>, marker: DefId) -> Local {
    let mut found = Local::new();
    for owner in tcx.hir_body_owners() {
        let def_id = owner.to_def_id();
        if !matches!(tcx.def_kind(def_id), DefKind::Static { .. }) {
            continue;
        }
        let body = tcx.mir_for_ctfe(def_id);
        if let Some(allow) = marker_in(tcx, body, marker) {
            found.insert(def_id, allow);
        }
    }
    found
}

/// Functions of this crate marked `#[allow_shared]`: the marker call is the first statement of
/// the body (that is where the attribute puts it), found in the HIR with the callee resolved
/// by type checking, so every marked function is listed, reached by a handler or not.
pub fn local_functions(tcx: TyCtxt<'_>, marker: DefId) -> Vec<(DefId, String, Span)> {
    use rustc_ast::LitKind;
    use rustc_hir::{ExprKind, StmtKind};
    let mut found = Vec::new();
    for owner in tcx.hir_body_owners() {
        if !matches!(tcx.def_kind(owner), DefKind::Fn | DefKind::AssocFn) {
            continue;
        }
        let body = tcx.hir_body_owned_by(owner);
        let ExprKind::Block(block, _) = body.value.kind else {
            continue;
        };
        let Some(first) = block.stmts.first() else {
            continue;
        };
        let (StmtKind::Semi(call) | StmtKind::Expr(call)) = first.kind else {
            continue;
        };
        let ExprKind::Call(callee, [arg]) = call.kind else {
            continue;
        };
        let ExprKind::Path(qpath) = &callee.kind else {
            continue;
        };
        let res = tcx.typeck(owner).qpath_res(qpath, callee.hir_id);
        if res.opt_def_id() != Some(marker) {
            continue;
        }
        let reason = match arg.kind {
            ExprKind::Lit(lit) => match lit.node {
                LitKind::Str(text, _) => text.to_string(),
                _ => String::new(),
            },
            _ => String::new(),
        };
        found.push((owner.to_def_id(), reason, call.span));
    }
    found
}

/// The reason and place of a call to the marker in `body`.
fn marker_in<'tcx>(
    tcx: TyCtxt<'tcx>,
    body: &mir::Body<'tcx>,
    marker: DefId,
) -> Option<(String, Span)> {
    for data in body.basic_blocks.iter() {
        let mir::TerminatorKind::Call {
            func,
            args,
            fn_span,
            ..
        } = &data.terminator().kind
        else {
            continue;
        };
        let ty::FnDef(callee, _) = *func.ty(body, tcx).kind() else {
            continue;
        };
        if callee != marker {
            continue;
        }
        let reason = match args.first().map(|a| &a.node) {
            Some(mir::Operand::Constant(c)) => const_str(tcx, &c.const_).unwrap_or_default(),
            _ => String::new(),
        };
        return Some((reason, *fn_span));
    }
    None
}

fn file_for(tcx: TyCtxt<'_>, krate: CrateNum) -> Option<PathBuf> {
    let dir = std::env::var_os(crate::env::ALLOWS_DIR_ENV)?;
    let id = tcx.stable_crate_id(krate).as_u64();
    Some(PathBuf::from(dir).join(format!("{}-{id:016x}.allows", tcx.crate_name(krate))))
}

/// The path of a static as both its crate and the crates using it spell it.
fn key(tcx: TyCtxt<'_>, def_id: DefId) -> String {
    tcx.def_path(def_id).to_string_no_crate_verbose()
}

/// Writes this crate's list (an empty list too, replacing an older one).
pub fn publish(tcx: TyCtxt<'_>, local: &Local) {
    let Some(path) = file_for(tcx, LOCAL_CRATE) else {
        return;
    };
    let mut text = String::new();
    for (def_id, (reason, _)) in local {
        let reason = reason.replace(['\n', '\t'], " ");
        text.push_str(&format!("{}\t{reason}\n", key(tcx, *def_id)));
    }
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    if let Err(err) = std::fs::write(&path, text) {
        tcx.dcx().warn(format!(
            "whirl check: could not write {}: {err}",
            path.display()
        ));
    }
}

/// Whether the static `def_id` is marked, and why.
pub fn of_static(tcx: TyCtxt<'_>, local: &Local, def_id: DefId) -> Option<(String, Span)> {
    if def_id.is_local() {
        return local.get(&def_id).cloned();
    }
    let text = std::fs::read_to_string(file_for(tcx, def_id.krate)?).ok()?;
    let key = key(tcx, def_id);
    text.lines().find_map(|line| {
        let (path, reason) = line.split_once('\t')?;
        (path == key).then(|| (reason.to_string(), tcx.def_span(def_id)))
    })
}

/// The text of a `&str` constant: the reason given to the `#[allow_shared]` marker, read here
/// for statics and by the walk for functions.
pub fn const_str(tcx: TyCtxt<'_>, constant: &mir::Const<'_>) -> Option<String> {
    let mir::Const::Val(value, ty) = constant else {
        return None;
    };
    if !matches!(ty.kind(), ty::Ref(_, inner, _) if inner.is_str()) {
        return None;
    }
    let bytes = value.try_get_slice_bytes_for_diagnostics(tcx)?;
    Some(String::from_utf8_lossy(bytes).into_owned())
}
