//! One crate's check: find the runtime and the roots, walk, keep what is shared, report.

use std::collections::HashMap;

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
    let mut allowed = listed_allows(tcx, &whirl, &local_allows);
    let roots = whirl.roots(tcx);
    let workspace = workspace_crates(tcx, &whirl);
    let excluded = whirl_crates(tcx, &whirl);
    let mut walker = Walker::new(tcx, workspace.clone(), excluded.clone(), whirl.allow_marker);

    let started = std::time::Instant::now();
    let others: Vec<CrateNum> = workspace
        .iter()
        .copied()
        .filter(|&krate| krate != LOCAL_CRATE)
        .collect();
    let survey = crate::roots::survey(tcx, &excluded, &others);
    let surveyed = started.elapsed();
    walker.address_taken = survey.address_taken.clone();
    walker.others = others;
    let instances = root_instances(tcx, &roots, &survey);
    let mut findings = Findings::new(tcx, &local_allows);
    for &instance in &instances {
        let reach = walker.reach(instance);
        findings.add(&reach, instance, &mut allowed);
    }
    if std::env::var_os("WHIRL_CHECK_TIME").is_some() {
        eprintln!(
            "whirl check timing: survey {surveyed:?}, survey and walk {:?}",
            started.elapsed()
        );
    }
    for finding in &findings.list {
        report::emit(tcx, finding);
    }
    report::summary(
        tcx,
        instances.len(),
        walker.visited,
        findings.list.len(),
        &allowed,
    );
}

/// Every allowance of this crate, statics and functions, for the summary: listed whether a
/// handler's path uses it or not (those of other workspace crates are listed when a walk
/// passes them).
fn listed_allows(
    tcx: TyCtxt<'_>,
    whirl: &Whirl,
    local_allows: &allows::Local,
) -> Vec<(String, String, Span)> {
    let mut listed = Vec::new();
    for (def_id, (reason, span)) in local_allows {
        push_allow(
            &mut listed,
            format!("static `{}`", tcx.def_path_str(*def_id)),
            reason,
            *span,
        );
    }
    for (def_id, reason, span) in allows::local_functions(tcx, whirl.allow_marker) {
        push_allow(
            &mut listed,
            format!("fn `{}`", tcx.def_path_str(def_id)),
            &reason,
            span,
        );
    }
    listed
}

/// The instances the walk starts from: each root, and a generic process at each
/// instantiation the crate uses (`Cache<MemBackend>`), so that calls on its type parameters
/// resolve; and the functions given to whirl as `fn` pointers (start functions, member
/// factories...), which whirl runs inside its processes.
fn root_instances<'tcx>(
    tcx: TyCtxt<'tcx>,
    roots: &[(DefId, &'static str)],
    survey: &crate::roots::Survey<'tcx>,
) -> Vec<Instance<'tcx>> {
    let mut instances = Vec::new();
    for &(root, _why) in roots {
        if !tcx.is_mir_available(root) {
            continue;
        }
        if tcx.generics_of(root).requires_monomorphization(tcx) {
            let found = crate::roots::instantiations(tcx, root, &survey.types);
            if !found.is_empty() {
                instances.extend(found);
                continue;
            }
        }
        instances.extend(root_instance(tcx, root));
    }
    for &(made, _) in &survey.run_by_whirl {
        if made.def_id().is_local() && !instances.contains(&made) {
            instances.push(made);
        }
    }
    instances
}

/// The findings of every walk of the crate, each target reported once per place: the first
/// root that reaches it is the report's handler, later ones are listed with it.
struct Findings<'a, 'tcx> {
    tcx: TyCtxt<'tcx>,
    local_allows: &'a allows::Local,
    list: Vec<Finding<'tcx>>,
    /// (target, span) → the finding.
    index: HashMap<(Target<'tcx>, Span), usize>,
    /// (target, handler) → the finding: a handler's other accesses to a target are its notes.
    by_handler: HashMap<(Target<'tcx>, String), usize>,
    /// Each static's `#[allow_shared]`, once looked up.
    static_allows: HashMap<DefId, Option<(String, Span)>>,
}

impl<'a, 'tcx> Findings<'a, 'tcx> {
    fn new(tcx: TyCtxt<'tcx>, local_allows: &'a allows::Local) -> Self {
        Findings {
            tcx,
            local_allows,
            list: Vec::new(),
            index: HashMap::new(),
            by_handler: HashMap::new(),
            static_allows: HashMap::new(),
        }
    }

    /// What the walk from `root` reached: the allowed functions it stopped at go to `allowed`,
    /// each access to shared state not allowed becomes a finding (or a note of one).
    fn add(
        &mut self,
        reach: &Reach<'tcx>,
        root: Instance<'tcx>,
        allowed: &mut Vec<(String, String, Span)>,
    ) {
        let tcx = self.tcx;
        for (holder, reason, span) in &reach.allowed {
            push_allow(
                allowed,
                format!("fn `{}`", tcx.def_path_str(holder.def_id())),
                reason,
                *span,
            );
        }
        for (holder, access) in &reach.accesses {
            if let Some(why) = self.why_shared(&access.target, allowed) {
                self.record(reach, root, *holder, access, why);
            }
        }
    }

    /// Why `target` is shared mutable state, or `None` if it is not, or is allowed (then
    /// listed in `allowed`): a facade's static is, wherever its macros put it.
    fn why_shared(
        &mut self,
        target: &Target<'tcx>,
        allowed: &mut Vec<(String, String, Span)>,
    ) -> Option<String> {
        let tcx = self.tcx;
        match target {
            Target::Static(def_id) => {
                if facade_static(tcx, *def_id) {
                    return None;
                }
                let why = shared::static_sharing(tcx, *def_id)?;
                let local_allows = self.local_allows;
                let allow = self
                    .static_allows
                    .entry(*def_id)
                    .or_insert_with(|| allows::of_static(tcx, local_allows, *def_id));
                if let Some((reason, span)) = allow {
                    push_allow(
                        allowed,
                        format!("static `{}`", tcx.def_path_str(*def_id)),
                        reason,
                        *span,
                    );
                    return None;
                }
                Some(why)
            }
            Target::ThreadLocal(..) | Target::ThreadLocalStatic(_) => Some(String::from(
                "each worker thread has its own copy, shared by every process that runs on \
                 that thread and different on the others",
            )),
            Target::Api(def_id) => Some(
                shared::known_api(tcx, *def_id)
                    .map(|(_, why)| format!("it {why}"))
                    .unwrap_or_default(),
            ),
        }
    }

    /// Records one access by `holder`, reached from `root`: a new finding, another handler
    /// of a finding at the same place, or another place of a handler's finding.
    fn record(
        &mut self,
        reach: &Reach<'tcx>,
        root: Instance<'tcx>,
        holder: Instance<'tcx>,
        access: &crate::walk::Access<'tcx>,
        why: String,
    ) {
        let tcx = self.tcx;
        let mut handler_path = path_to(reach, root, holder);
        attribute_drop(tcx, reach, &mut handler_path);
        let handler = report::handler_name(tcx, &handler_path);
        // A `lazy_static!` is reported under the name the user gave it, where the user's
        // code dereferences it (the access itself is inside the macro's expansion).
        let (alias, span) = match &access.target {
            Target::Static(def_id) => match lazy_static_alias(tcx, *def_id) {
                Some((alias, deref)) => {
                    let span = deref_site(tcx, &handler_path, deref).unwrap_or(access.span);
                    // The path ends where the user's code uses it.
                    if let Some(at) = handler_path
                        .iter()
                        .position(|s| s.instance.def_id() == deref)
                    {
                        handler_path.truncate(at + 1);
                    }
                    (Some(alias), span)
                }
                None => (None, access.span),
            },
            _ => (None, access.span),
        };
        let key = (access.target.clone(), span);
        if let Some(&i) = self.index.get(&key) {
            let finding = &mut self.list[i];
            if !finding.also.contains(&handler) && finding.handler != handler {
                finding.also.push(handler);
            }
            return;
        }
        // One report per target and handler; its other accesses are notes.
        let per_handler = (access.target.clone(), handler.clone());
        if let Some(&i) = self.by_handler.get(&per_handler) {
            if !self.list[i].others.contains(&span) {
                self.list[i].others.push(span);
            }
            self.index.insert(key, i);
            return;
        }
        self.index.insert(key, self.list.len());
        self.by_handler.insert(per_handler, self.list.len());
        self.list.push(Finding {
            target: access.target.clone(),
            alias,
            span,
            why,
            handler,
            path: handler_path,
            also: Vec::new(),
            others: Vec::new(),
        });
    }
}

fn push_allow(allows: &mut Vec<(String, String, Span)>, what: String, reason: &str, span: Span) {
    if !allows.iter().any(|(w, _, _)| *w == what) {
        allows.push((what, reason.to_string(), span));
    }
}

/// The crates the walk follows: the one being compiled and the other crates of the workspace
/// (named by `cargo whirl`), but not whirl's own.
fn workspace_crates(tcx: TyCtxt<'_>, whirl: &Whirl) -> Vec<CrateNum> {
    let names: Vec<String> = std::env::var(crate::env::WORKSPACE_ENV)
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

/// whirl's own crates: the runtime, its facade and its macros, never walked.
fn whirl_crates(tcx: TyCtxt<'_>, whirl: &Whirl) -> Vec<CrateNum> {
    let mut crates = vec![whirl.runtime];
    for &krate in tcx.crates(()) {
        if matches!(tcx.crate_name(krate).as_str(), "whirl" | "whirl_macros") {
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

/// A `Drop` that `#[process]`'s generated code runs (the message, or the state, dropped on
/// the way out of a handler, or while unwinding) is put on the handler that takes the value:
/// the user's function, called by generated code, whose parameters hold the dropped type.
fn attribute_drop<'tcx>(tcx: TyCtxt<'tcx>, reach: &Reach<'tcx>, path: &mut Vec<Step<'tcx>>) {
    let start = report::user_start(tcx, path);
    if start == 0 || !matches!(path[start].edge, Edge::Drops) {
        return;
    }
    let Some(dropped) = tcx
        .impl_of_assoc(path[start].instance.def_id())
        .map(|i| tcx.type_of(i).instantiate_identity().skip_normalization())
    else {
        return;
    };
    let ty::Adt(adt, _) = dropped.kind() else {
        return;
    };
    let mut takers: Vec<(String, Instance<'tcx>)> = reach
        .parents
        .iter()
        .filter(|(callee, (caller, _, edge))| {
            matches!(edge, Edge::Calls)
                && matches!(callee.def, ty::InstanceKind::Item(_))
                && report::generated(tcx, caller.def_id())
                && !report::generated(tcx, callee.def_id())
                && tcx.def_kind(callee.def_id()) == rustc_hir::def::DefKind::AssocFn
                && tcx
                    .fn_sig(callee.def_id())
                    .instantiate_identity()
                    .skip_binder()
                    .inputs()
                    .iter()
                    .any(|input| {
                        input.walk().any(|arg| {
                            matches!(arg.as_type().map(|t| *t.kind()),
                                Some(ty::Adt(a, _)) if a.did() == adt.did())
                        })
                    })
        })
        .map(|(callee, _)| (report::describe(tcx, *callee), *callee))
        .collect();
    takers.sort_by(|a, b| a.0.cmp(&b.0));
    let Some(&(_, handler)) = takers.first() else {
        return;
    };
    let mut rest = path.split_off(start);
    rest[0].span = Some(tcx.def_span(handler.def_id()));
    path.clear();
    path.push(Step {
        instance: handler,
        span: None,
        edge: Edge::Calls,
    });
    path.append(&mut rest);
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

/// For the static a `lazy_static!` declares inside its `Deref` impl (`static LAZY:
/// lazy_static::lazy::Lazy<T>`), the type the user named (`static ref QUEUE: T` makes a type
/// `QUEUE`, a unit static `QUEUE` of it, and that impl) and the impl's `deref`.
pub fn lazy_static_alias(tcx: TyCtxt<'_>, def_id: DefId) -> Option<(DefId, DefId)> {
    use rustc_hir::def::DefKind;
    let ty = tcx
        .type_of(def_id)
        .instantiate_identity()
        .skip_normalization();
    let ty::Adt(adt, _) = ty.kind() else {
        return None;
    };
    if tcx.crate_name(adt.did().krate).as_str() != "lazy_static" {
        return None;
    }
    let mut current = def_id;
    let mut deref = None;
    while let Some(parent) = tcx.opt_parent(current) {
        match tcx.def_kind(parent) {
            DefKind::AssocFn => deref = Some(parent),
            DefKind::Impl { of_trait: true } => {
                let self_ty = tcx
                    .type_of(parent)
                    .instantiate_identity()
                    .skip_normalization();
                let ty::Adt(named, _) = self_ty.kind() else {
                    return None;
                };
                return Some((named.did(), deref?));
            }
            DefKind::Fn => {}
            _ => return None,
        }
        current = parent;
    }
    None
}

/// Where the path enters `deref` (the user's use of a `lazy_static!`).
fn deref_site(tcx: TyCtxt<'_>, path: &[Step<'_>], deref: DefId) -> Option<Span> {
    let step = path.iter().rev().find(|s| s.instance.def_id() == deref)?;
    let span = step.span?;
    // Inside a macro of the user's (`format!`...), the place they wrote.
    Some(if span.from_expansion() {
        span.source_callsite()
    } else {
        span
    })
    .filter(|s| !s.is_dummy())
    .or_else(|| Some(tcx.def_span(deref)))
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
