//! Reports, as rustc diagnostics: an error per access, with the static, the handler and the
//! call path as notes with spans, and one summary note per crate.
//!
//! Cargo prints them like any compiler error, and `cargo whirl check --message-format json`
//! passes them on as cargo's JSON (`"reason": "compiler-message"`), each with the access as
//! its primary span and the path as its children.

use rustc_middle::ty::{Instance, TyCtxt};
use rustc_span::Span;

use crate::shared::declared_type;
use crate::walk::{Edge, Target};

/// One access to shared state reachable from process code.
pub struct Finding<'tcx> {
    pub target: Target<'tcx>,
    pub span: Span,
    /// Why the target is shared mutable state.
    pub why: String,
    /// The handler (or hook) it is reached from.
    pub handler: String,
    /// From the root to the function holding the access.
    pub path: Vec<Step<'tcx>>,
    /// Other handlers that reach it.
    pub also: Vec<String>,
}

/// One function on a path, and where it leads to the next.
pub struct Step<'tcx> {
    pub instance: Instance<'tcx>,
    /// Where this function was called (created, coerced, dropped) by the previous one.
    pub span: Option<Span>,
    pub edge: Edge,
}

/// Where the user's code starts on a path: the first function the user wrote (what
/// `#[process]` generates around the handlers is skipped).
pub fn user_start(tcx: TyCtxt<'_>, path: &[Step<'_>]) -> usize {
    path.iter()
        .position(|step| !tcx.def_span(step.instance.def_id()).from_expansion())
        .unwrap_or(0)
}

/// The name of the handler on a path.
pub fn handler_name(tcx: TyCtxt<'_>, path: &[Step<'_>]) -> String {
    path.get(user_start(tcx, path))
        .map(|step| describe(tcx, step.instance))
        .unwrap_or_default()
}

fn describe(tcx: TyCtxt<'_>, instance: Instance<'_>) -> String {
    tcx.def_path_str(instance.def_id())
}

/// What the target is, for the message: `static HITS: AtomicU64`.
fn target_name(tcx: TyCtxt<'_>, target: &Target<'_>) -> String {
    match target {
        Target::Static(def_id) => {
            let ty = declared_type(tcx, *def_id);
            let keyword = if tcx.static_mutability(*def_id) == Some(rustc_hir::Mutability::Mut) {
                "static mut"
            } else {
                "static"
            };
            format!("{keyword} `{}`: `{ty}`", tcx.def_path_str(*def_id))
        }
        Target::ThreadLocal(Some(def_id), ty) => {
            format!("thread-local `{}`: `{ty}`", tcx.def_path_str(*def_id))
        }
        Target::ThreadLocal(None, ty) => format!("a thread-local of type `{ty}`"),
        Target::ThreadLocalStatic(def_id) => format!(
            "thread-local `{}`: `{}`",
            tcx.def_path_str(*def_id),
            declared_type(tcx, *def_id)
        ),
        Target::Api(def_id) => format!("`{}`", tcx.def_path_str(*def_id)),
    }
}

/// Emits one finding as an error.
pub fn emit(tcx: TyCtxt<'_>, finding: &Finding<'_>) {
    let what = target_name(tcx, &finding.target);
    let verb = if matches!(finding.target, Target::Api(_)) {
        "calls"
    } else {
        "reaches"
    };
    let message = format!("shared state: handler `{}` {verb} {what}", finding.handler);
    let mut diag = tcx.dcx().struct_span_err(finding.span, message);
    diag.span_label(
        finding.span,
        format!("shared mutable state: {}", finding.why),
    );
    // The path, one note per step.
    let path = &finding.path[user_start(tcx, &finding.path)..];
    let mut names = Vec::new();
    for pair in path.windows(2) {
        let (from, to) = (&pair[0], &pair[1]);
        let verb = match to.edge {
            Edge::Calls => "calls",
            Edge::CallsDyn => "calls, through a trait object, what may be",
            Edge::Creates => "creates (and so may run)",
            Edge::Coerces => "makes a trait object whose method may run:",
            Edge::Drops => "drops a value, running",
        };
        let text = format!(
            "`{}` {verb} `{}`",
            describe(tcx, from.instance),
            describe(tcx, to.instance)
        );
        match to.span {
            Some(span) if !span.is_dummy() => {
                diag.span_note(span, text);
            }
            _ => {
                diag.note(text);
            }
        }
        names.push(describe(tcx, to.instance));
    }
    if let Some(def_id) = match &finding.target {
        Target::Static(d) | Target::ThreadLocalStatic(d) | Target::ThreadLocal(Some(d), _) => {
            Some(*d)
        }
        _ => None,
    } {
        if def_id.is_local() || !tcx.def_span(def_id).is_dummy() {
            diag.span_note(tcx.def_span(def_id), "declared here");
        }
    }
    if let Some(root) = path.first() {
        names.insert(0, describe(tcx, root.instance));
    }
    diag.note(format!("call path: {}", names.join(" -> ")));
    if !finding.also.is_empty() {
        diag.note(format!("also reached from: {}", finding.also.join(", ")));
    }
    diag.help(
        "keep the state inside one process (a field) and let other processes ask for it with \
         messages; if sharing it is intended, put `#[whirl::allow_shared(reason = \"...\")]` on \
         the static or on the function",
    );
    diag.emit();
}

/// One note per crate: how much was checked, what was found, and every allowance.
pub fn summary(
    tcx: TyCtxt<'_>,
    roots: usize,
    visited: usize,
    findings: usize,
    allows: &[(String, String, Span)],
) {
    if roots == 0 && allows.is_empty() {
        return;
    }
    let crate_name = tcx.crate_name(rustc_span::def_id::LOCAL_CRATE);
    let mut text = format!(
        "whirl check `{crate_name}`: {roots} process entry points, {visited} functions walked, \
         {findings} shared-state access{}, {} allowed",
        if findings == 1 { "" } else { "es" },
        allows.len()
    );
    for (what, reason, _) in allows {
        text.push_str(&format!("\n  allowed: {what}: {reason:?}"));
    }
    tcx.dcx().note(text);
}
