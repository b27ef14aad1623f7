//! One crate's check: find the runtime and the roots, walk, keep what is shared, report.

use std::collections::HashMap;

use rustc_middle::mir;
use rustc_middle::ty::{self, Instance, Ty, TyCtxt};
use rustc_span::def_id::{CrateNum, DefId, LOCAL_CRATE};
use rustc_span::{ExpnKind, MacroKind, Span};

use crate::allows;
use crate::report::{self, Finding, Step};
use crate::roots::Whirl;
use crate::shared;
use crate::walk::{Edge, Reach, Target, Walker};

/// Crates whose shared state is their purpose: their statics (a `tracing` callsite, a `log`
/// or `metrics` registration) are allowed wherever their macros put them.
pub const FACADES: &[&str] = &["tracing", "tracing_core", "log", "metrics"];

/// Runs the check on the crate being compiled, reporting through rustc's diagnostics.
pub fn run(tcx: TyCtxt<'_>) {
    let Some(whirl) = Whirl::find(tcx) else {
        return;
    };
    let local_allows = allows::local_statics(tcx, whirl.allow_marker);
    allows::publish(tcx, &local_allows);
    // Every allowance of this crate is listed, used on a handler's path or not; those of other
    // workspace crates are listed when a walk passes them.
    let mut allows: Vec<(String, String, Span)> = Vec::new();
    for (def_id, (reason, span)) in &local_allows {
        push_allow(
            &mut allows,
            format!("static `{}`", tcx.def_path_str(*def_id)),
            reason,
            *span,
        );
    }
    for (def_id, reason, span) in allows::local_functions(tcx, whirl.allow_marker) {
        push_allow(
            &mut allows,
            format!("fn `{}`", tcx.def_path_str(def_id)),
            &reason,
            span,
        );
    }
    let roots = whirl.roots(tcx);
    let workspace = workspace_crates(tcx, &whirl);
    let mut walker = Walker::new(tcx, workspace.clone(), whirl.allow_marker);

    // (target, span) → the finding, from the first root that reaches it.
    let mut findings: Vec<Finding<'_>> = Vec::new();
    let mut index: HashMap<(Target<'_>, Span), usize> = HashMap::new();
    let mut static_allows: HashMap<DefId, Option<(String, Span)>> = HashMap::new();

    for &(root, _why) in &roots {
        let Some(instance) = root_instance(tcx, root) else {
            continue;
        };
        let reach = walker.reach(instance);
        for (holder, reason, span) in &reach.allowed {
            push_allow(
                &mut allows,
                format!("fn `{}`", tcx.def_path_str(holder.def_id())),
                reason,
                *span,
            );
        }
        for (holder, access) in &reach.accesses {
            let why = match &access.target {
                Target::Static(def_id) => {
                    if facade_static(tcx, *def_id) {
                        continue;
                    }
                    let Some(why) = shared::static_sharing(tcx, *def_id) else {
                        continue;
                    };
                    let allow = static_allows
                        .entry(*def_id)
                        .or_insert_with(|| allows::of_static(tcx, &local_allows, *def_id));
                    if let Some((reason, span)) = allow {
                        push_allow(
                            &mut allows,
                            format!("static `{}`", tcx.def_path_str(*def_id)),
                            reason,
                            *span,
                        );
                        continue;
                    }
                    why
                }
                Target::ThreadLocal(..) | Target::ThreadLocalStatic(_) => String::from(
                    "each worker thread has its own copy, shared by every process that runs on \
                     that thread and different on the others",
                ),
                Target::Api(def_id) => shared::known_api(tcx, *def_id)
                    .map(|(_, why)| format!("it {why}"))
                    .unwrap_or_default(),
            };
            let key = (access.target.clone(), access.span);
            let handler_path = path_to(&reach, instance, *holder);
            match index.get(&key) {
                Some(&i) => {
                    let handler = report::handler_name(tcx, &handler_path);
                    if !findings[i].also.contains(&handler) && findings[i].handler != handler {
                        findings[i].also.push(handler);
                    }
                }
                None => {
                    index.insert(key, findings.len());
                    let handler = report::handler_name(tcx, &handler_path);
                    findings.push(Finding {
                        target: access.target.clone(),
                        span: access.span,
                        why,
                        handler,
                        path: handler_path,
                        also: Vec::new(),
                    });
                }
            }
        }
    }
    for finding in &findings {
        report::emit(tcx, finding);
    }
    report::summary(tcx, roots.len(), walker.visited, findings.len(), &allows);
}

fn push_allow(allows: &mut Vec<(String, String, Span)>, what: String, reason: &str, span: Span) {
    if !allows.iter().any(|(w, _, _)| *w == what) {
        allows.push((what, reason.to_string(), span));
    }
}

/// The crates the walk follows: the one being compiled and the other crates of the workspace
/// (named by `cargo whirl`), but not whirl's own.
fn workspace_crates(tcx: TyCtxt<'_>, whirl: &Whirl) -> Vec<CrateNum> {
    let names: Vec<String> = std::env::var(crate::WORKSPACE_ENV)
        .unwrap_or_default()
        .split(',')
        .filter(|n| !n.is_empty())
        .map(|n| n.replace('-', "_"))
        .collect();
    let whirl_crates = [
        tcx.crate_name(whirl.runtime).to_string(),
        "whirl".into(),
        "whirl_macros".into(),
    ];
    let mut crates = vec![LOCAL_CRATE];
    for &krate in tcx.crates(()) {
        let name = tcx.crate_name(krate).to_string();
        if names.contains(&name) && !whirl_crates.contains(&name) {
            crates.push(krate);
        }
    }
    crates
}

/// The instance a root is walked as: itself if it is not generic, else with its own generic
/// parameters (calls on them stay unresolved and are not followed).
fn root_instance(tcx: TyCtxt<'_>, def_id: DefId) -> Option<Instance<'_>> {
    if !tcx.is_mir_available(def_id) {
        return None;
    }
    Some(Instance::new_raw(
        def_id,
        ty::GenericArgs::identity_for_item(tcx, def_id),
    ))
}

/// The steps from `root` to `target`, following the walk's parent links.
fn path_to<'tcx>(
    reach: &Reach<'tcx>,
    root: Instance<'tcx>,
    target: Instance<'tcx>,
) -> Vec<Step<'tcx>> {
    let mut steps = vec![Step {
        instance: target,
        span: None,
        edge: Edge::Calls,
    }];
    let mut current = target;
    while current != root {
        let Some(&(parent, span, edge)) = reach.parents.get(&current) else {
            break;
        };
        if let Some(last) = steps.last_mut() {
            last.span = Some(span);
            last.edge = edge;
        }
        steps.push(Step {
            instance: parent,
            span: None,
            edge: Edge::Calls,
        });
        current = parent;
    }
    steps.reverse();
    steps
}

/// A static put there by `tracing`, `log` or `metrics` (by its type's crate or the macro that
/// wrote it).
fn facade_static(tcx: TyCtxt<'_>, def_id: DefId) -> bool {
    let ty = tcx
        .type_of(def_id)
        .instantiate_identity()
        .skip_normalization();
    if type_from_facade(tcx, ty) {
        return true;
    }
    let span = tcx.def_span(def_id);
    span.macro_backtrace().any(|expn| match expn.kind {
        ExpnKind::Macro(MacroKind::Bang, _) => expn
            .macro_def_id
            .is_some_and(|m| FACADES.contains(&tcx.crate_name(m.krate).as_str())),
        _ => false,
    })
}

fn type_from_facade(tcx: TyCtxt<'_>, ty: Ty<'_>) -> bool {
    ty.walk().any(|arg| match arg.as_type().map(|t| *t.kind()) {
        Some(ty::Adt(adt, _)) => FACADES.contains(&tcx.crate_name(adt.did().krate).as_str()),
        _ => false,
    })
}

/// The text of a `&str` constant.
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
