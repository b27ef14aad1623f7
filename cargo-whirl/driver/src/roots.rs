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
use rustc_middle::ty::{self, Instance, Ty, TyCtxt, TypeVisitableExt};
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

/// What the crate's code that runs makes: the concrete types it uses and the functions whose
/// address it takes.
#[derive(Default)]
pub struct Survey<'tcx> {
    /// Every type of the crate's own definitions with concrete arguments found in the locals
    /// of the code that runs (`Store<u32>` where `main` spawns it, `Cache<MemBackend>` inside
    /// a generic helper that `main` calls with `MemBackend`).
    pub types: Vec<Ty<'tcx>>,
    /// Functions and closures made into `fn` pointers (in a body, a `static` table, a
    /// `const`), with the pointer's type: any call through a pointer of that type may run
    /// them.
    pub address_taken: Vec<(Instance<'tcx>, Ty<'tcx>)>,
    /// Those given, as `fn` pointers, straight to a function of whirl (`ChildSpec::worker_with`,
    /// `ChildTemplate::new`, `Router::builder`...): whirl runs them, inside its processes.
    pub run_by_whirl: Vec<(Instance<'tcx>, rustc_span::Span)>,
}

/// Surveys the crate. Like rustc's monomorphization collector, it starts from every
/// non-generic function of the crate (and every `static` and `const`) and follows calls into
/// the crate's generic functions and closures at the arguments they are called with (and into
/// those of the other crates of the workspace, `others`).
pub fn survey<'tcx>(
    tcx: TyCtxt<'tcx>,
    whirl_crates: &[CrateNum],
    others: &[CrateNum],
) -> Survey<'tcx> {
    let mut queue: Vec<Instance<'tcx>> = Vec::new();
    let mut survey = Survey::default();
    let mut types = std::collections::HashSet::new();
    for owner in tcx.hir_body_owners() {
        let def_id = owner.to_def_id();
        if tcx.generics_of(def_id).requires_monomorphization(tcx) {
            continue;
        }
        match tcx.def_kind(def_id) {
            DefKind::Fn | DefKind::AssocFn if tcx.is_mir_available(def_id) => {
                queue.push(Instance::mono(tcx, def_id));
            }
            // A table of `fn` pointers: its initialiser names them.
            DefKind::Static { .. } | DefKind::Const { .. } | DefKind::AssocConst { .. } => {
                let body = tcx.mir_for_ctfe(def_id);
                read_body(
                    tcx,
                    Instance::mono(tcx, def_id),
                    body,
                    whirl_crates,
                    &mut survey,
                    &mut types,
                    &mut Vec::new(),
                );
            }
            _ => {}
        }
    }
    let follows = |krate: CrateNum| krate == LOCAL_CRATE || others.contains(&krate);
    drain(tcx, queue, whirl_crates, &follows, &mut survey, &mut types);
    survey.types = types.into_iter().collect();
    survey
}

/// The functions and closures whose address the other crates of the workspace take (a
/// library's table of handlers, called through in this crate), with the `fn` pointer type each
/// becomes: from their MIR, in their metadata, and from the values of their statics.
pub fn address_taken_in<'tcx>(
    tcx: TyCtxt<'tcx>,
    whirl_crates: &[CrateNum],
    others: &[CrateNum],
) -> Vec<(Instance<'tcx>, Ty<'tcx>)> {
    let mut queue: Vec<Instance<'tcx>> = Vec::new();
    let mut survey = Survey::default();
    let mut types = std::collections::HashSet::new();
    for &krate in others {
        for index in 0..tcx.num_extern_def_ids(krate) {
            let def_id = DefId {
                krate,
                index: rustc_span::def_id::DefIndex::from_usize(index),
            };
            let kind = tcx.def_kind(def_id);
            if !matches!(
                kind,
                DefKind::Fn
                    | DefKind::AssocFn
                    | DefKind::Static { .. }
                    | DefKind::Const { .. }
                    | DefKind::AssocConst { .. }
            ) || tcx.generics_of(def_id).requires_monomorphization(tcx)
            {
                continue;
            }
            match kind {
                DefKind::Fn | DefKind::AssocFn if tcx.is_mir_available(def_id) => {
                    queue.push(Instance::mono(tcx, def_id));
                }
                DefKind::Static { .. } => static_pointers(tcx, def_id, &mut survey),
                DefKind::Const { .. } | DefKind::AssocConst { .. }
                    if tcx.trivial_const(def_id).is_none() =>
                {
                    let instance = Instance::mono(tcx, def_id);
                    for body in std::iter::once(tcx.mir_for_ctfe(def_id))
                        .chain(tcx.promoted_mir(def_id).iter())
                    {
                        read_body(
                            tcx,
                            instance,
                            body,
                            whirl_crates,
                            &mut survey,
                            &mut types,
                            &mut Vec::new(),
                        );
                    }
                }
                _ => {}
            }
        }
    }
    let follows = |krate: CrateNum| others.contains(&krate);
    drain(tcx, queue, whirl_crates, &follows, &mut survey, &mut types);
    survey.address_taken
}

/// Reads the bodies of `queue` and of the calls and closures they lead to, in the crates
/// `follows` accepts, each instance once.
fn drain<'tcx>(
    tcx: TyCtxt<'tcx>,
    mut queue: Vec<Instance<'tcx>>,
    whirl_crates: &[CrateNum],
    follows: &dyn Fn(CrateNum) -> bool,
    survey: &mut Survey<'tcx>,
    types: &mut std::collections::HashSet<Ty<'tcx>>,
) {
    let mut seen: std::collections::HashSet<Instance<'tcx>> = queue.iter().copied().collect();
    // Bounded: each instance once.
    while let Some(instance) = queue.pop() {
        if seen.len() > 20_000 {
            break;
        }
        let body = tcx.instance_mir(instance.def);
        let mut next = Vec::new();
        read_body(tcx, instance, body, whirl_crates, survey, types, &mut next);
        let def_id = instance.def_id();
        if matches!(instance.def, ty::InstanceKind::Item(_))
            && matches!(
                tcx.def_kind(def_id),
                DefKind::Fn | DefKind::AssocFn | DefKind::Closure
            )
        {
            for promoted in tcx.promoted_mir(def_id).iter() {
                read_body(
                    tcx,
                    instance,
                    promoted,
                    whirl_crates,
                    survey,
                    types,
                    &mut next,
                );
            }
        }
        for callee in next {
            if follows(callee.def_id().krate)
                && matches!(callee.def, ty::InstanceKind::Item(_))
                && !callee.args.has_param()
                && tcx.is_mir_available(callee.def_id())
                && seen.insert(callee)
            {
                queue.push(callee);
            }
        }
    }
}

/// The functions a static of another crate points to (its value is in that crate's
/// metadata; the MIR of its initialiser is not), with the `fn` pointer type each becomes.
fn static_pointers<'tcx>(tcx: TyCtxt<'tcx>, def_id: DefId, survey: &mut Survey<'tcx>) {
    use rustc_middle::mir::interpret::GlobalAlloc;

    let Ok(root) = tcx.eval_static_initializer(def_id) else {
        return;
    };
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![root];
    while let Some(alloc) = stack.pop() {
        for provenance in alloc.inner().provenance().provenances() {
            let id = provenance.alloc_id();
            if !seen.insert(id) {
                continue;
            }
            match tcx.global_alloc(id) {
                GlobalAlloc::Memory(inner) => stack.push(inner),
                GlobalAlloc::Function { instance } => {
                    // A closure's pointer is a shim around its body: the body is what runs.
                    let made = Instance::new_raw(instance.def_id(), instance.args);
                    let sig = match tcx.def_kind(made.def_id()) {
                        DefKind::Closure => tcx.signature_unclosure(
                            made.args.as_closure().sig(),
                            rustc_hir::Safety::Safe,
                        ),
                        DefKind::Fn | DefKind::AssocFn => tcx
                            .fn_sig(made.def_id())
                            .instantiate(tcx, made.args)
                            .skip_normalization(),
                        _ => continue,
                    };
                    if !survey.address_taken.iter().any(|(i, _)| *i == made) {
                        survey
                            .address_taken
                            .push((made, ty::Ty::new_fn_ptr(tcx, sig)));
                    }
                }
                _ => {}
            }
        }
    }
}

/// One body of the survey: its types, its `fn` pointers, and the calls and closures it leads
/// to (into `next`).
fn read_body<'tcx>(
    tcx: TyCtxt<'tcx>,
    instance: Instance<'tcx>,
    body: &rustc_middle::mir::Body<'tcx>,
    whirl_crates: &[CrateNum],
    survey: &mut Survey<'tcx>,
    types: &mut std::collections::HashSet<Ty<'tcx>>,
    next: &mut Vec<Instance<'tcx>>,
) {
    use rustc_middle::mir::{
        AggregateKind, CastKind, Operand, Rvalue, StatementKind, TerminatorKind,
    };
    use rustc_middle::ty::adjustment::PointerCoercion;
    use rustc_middle::ty::{EarlyBinder, TypingEnv};
    use std::collections::HashMap;

    let env = TypingEnv::fully_monomorphized();
    let mono = |ty: Ty<'tcx>| {
        instance
            .try_instantiate_mir_and_normalize_erasing_regions(tcx, env, EarlyBinder::bind(ty))
            .ok()
    };
    for decl in body.local_decls.iter() {
        let Some(ty) = mono(decl.ty) else { continue };
        for arg in ty.walk() {
            if let Some(inner) = arg.as_type() {
                if let ty::Adt(adt, _) = inner.kind() {
                    if adt.did().is_local() && !inner.has_param() {
                        types.insert(inner);
                    }
                }
            }
        }
    }
    // Local → the function made into the `fn` pointer it holds.
    let mut pointers: HashMap<rustc_middle::mir::Local, usize> = HashMap::new();
    for data in body.basic_blocks.iter() {
        for statement in &data.statements {
            let StatementKind::Assign(assign) = &statement.kind else {
                continue;
            };
            match &assign.1 {
                Rvalue::Aggregate(kind, _) => {
                    if let AggregateKind::Closure(def_id, args)
                    | AggregateKind::Coroutine(def_id, args)
                    | AggregateKind::CoroutineClosure(def_id, args) = **kind
                    {
                        if let Ok(args) = instance
                            .try_instantiate_mir_and_normalize_erasing_regions(
                                tcx,
                                env,
                                EarlyBinder::bind(args),
                            )
                        {
                            next.push(Instance::new_raw(def_id, args));
                        }
                    }
                }
                Rvalue::Cast(
                    CastKind::PointerCoercion(
                        PointerCoercion::ReifyFnPointer(_) | PointerCoercion::ClosureFnPointer(_),
                        _,
                    ),
                    operand,
                    target,
                ) => {
                    let (Some(source), Some(target)) = (mono(operand.ty(body, tcx)), mono(*target))
                    else {
                        continue;
                    };
                    let made = match *source.kind() {
                        ty::FnDef(def_id, args) => {
                            match Instance::try_resolve(tcx, env, def_id, args) {
                                Ok(Some(made)) => made,
                                _ => continue,
                            }
                        }
                        ty::Closure(def_id, args) => Instance::new_raw(def_id, args),
                        _ => continue,
                    };
                    if matches!(made.def, ty::InstanceKind::Item(_)) {
                        next.push(made);
                        if !survey.address_taken.iter().any(|(i, _)| *i == made) {
                            survey.address_taken.push((made, target));
                        }
                        if let Some(local) = assign.0.as_local() {
                            pointers.insert(local, survey.address_taken.len() - 1);
                        }
                    }
                }
                _ => {}
            }
        }
        if let TerminatorKind::Call {
            func,
            args,
            fn_span,
            ..
        } = &data.terminator().kind
        {
            let Some(func_ty) = mono(func.ty(body, tcx)) else {
                continue;
            };
            let ty::FnDef(def_id, fn_args) = *func_ty.kind() else {
                continue;
            };
            if whirl_crates.contains(&def_id.krate) {
                for arg in args.iter() {
                    let (Operand::Copy(place) | Operand::Move(place)) = &arg.node else {
                        continue;
                    };
                    if let Some(&i) = place.as_local().and_then(|l| pointers.get(&l)) {
                        let made = survey.address_taken[i].0;
                        if !survey.run_by_whirl.iter().any(|(m, _)| *m == made) {
                            survey.run_by_whirl.push((made, *fn_span));
                        }
                    }
                }
            }
            if let Ok(Some(callee)) = Instance::try_resolve(tcx, env, def_id, fn_args) {
                next.push(callee);
            }
        }
    }
}

/// The instances `root` (a method of a generic impl) runs as, given the concrete types the
/// crate uses: one per use of the impl's type with concrete arguments. Empty if the root is
/// not generic through its impl, or if no use is found.
pub fn instantiations<'tcx>(
    tcx: TyCtxt<'tcx>,
    root: DefId,
    used: &[Ty<'tcx>],
) -> Vec<rustc_middle::ty::Instance<'tcx>> {
    use rustc_middle::ty::{GenericArg, TypingEnv};
    use std::collections::HashMap;

    let Some(impl_id) = tcx.impl_of_assoc(root) else {
        return Vec::new();
    };
    // A method with type parameters of its own is called with them: the walk follows it
    // from its callers.
    if tcx.generics_of(root).own_requires_monomorphization() {
        return Vec::new();
    }
    let self_ty = tcx
        .type_of(impl_id)
        .instantiate_identity()
        .skip_normalization();
    let mut instances = Vec::new();
    for &concrete in used {
        let mut map: HashMap<u32, GenericArg<'tcx>> = HashMap::new();
        if !unify(tcx, self_ty, concrete, &mut map) {
            continue;
        }
        let mut complete = true;
        let impl_args = ty::GenericArgs::for_item(tcx, impl_id, |param, _| {
            match (map.get(&param.index), &param.kind) {
                (Some(arg), _) => *arg,
                (None, ty::GenericParamDefKind::Lifetime) => tcx.lifetimes.re_erased.into(),
                (None, _) => {
                    complete = false;
                    tcx.mk_param_from_def(param)
                }
            }
        });
        if !complete {
            continue;
        }
        let env = TypingEnv::fully_monomorphized();
        let instance = match tcx.trait_item_of(root) {
            Some(trait_method) => {
                let trait_ref = tcx.impl_trait_ref(impl_id).instantiate(tcx, impl_args);
                let trait_ref = tcx.normalize_erasing_regions(env, trait_ref);
                match Instance::try_resolve(tcx, env, trait_method, trait_ref.args) {
                    Ok(Some(instance)) if instance.def_id() == root => instance,
                    // The impl does not apply to these arguments (a bound fails).
                    _ => continue,
                }
            }
            None => Instance::new_raw(root, impl_args),
        };
        if !instances.contains(&instance) {
            instances.push(instance);
        }
    }
    instances
}

/// Matches `pattern` (an impl's self type, with its parameters) against `concrete`, recording
/// each parameter's value by index.
fn unify<'tcx>(
    tcx: TyCtxt<'tcx>,
    pattern: Ty<'tcx>,
    concrete: Ty<'tcx>,
    map: &mut std::collections::HashMap<u32, ty::GenericArg<'tcx>>,
) -> bool {
    match (pattern.kind(), concrete.kind()) {
        (ty::Param(param), _) => {
            *map.entry(param.index).or_insert(concrete.into()) == concrete.into()
        }
        (ty::Adt(a, a_args), ty::Adt(b, b_args)) => {
            a.did() == b.did() && unify_args(tcx, a_args, b_args, map)
        }
        (ty::Ref(_, a, am), ty::Ref(_, b, bm)) => am == bm && unify(tcx, *a, *b, map),
        (ty::RawPtr(a, am), ty::RawPtr(b, bm)) => am == bm && unify(tcx, *a, *b, map),
        (ty::Slice(a), ty::Slice(b)) => unify(tcx, *a, *b, map),
        (ty::Array(a, _), ty::Array(b, _)) => unify(tcx, *a, *b, map),
        (ty::Tuple(a), ty::Tuple(b)) => {
            a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| unify(tcx, x, y, map))
        }
        _ => !pattern.has_param() && tcx.erase_and_anonymize_regions(pattern) == concrete,
    }
}

fn unify_args<'tcx>(
    tcx: TyCtxt<'tcx>,
    pattern: ty::GenericArgsRef<'tcx>,
    concrete: ty::GenericArgsRef<'tcx>,
    map: &mut std::collections::HashMap<u32, ty::GenericArg<'tcx>>,
) -> bool {
    pattern
        .iter()
        .zip(concrete.iter())
        .all(|(p, c)| match (p.kind(), c.kind()) {
            (ty::GenericArgKind::Type(p), ty::GenericArgKind::Type(c)) => unify(tcx, p, c, map),
            (ty::GenericArgKind::Lifetime(_), _) => true,
            (ty::GenericArgKind::Const(p), _) => match p.kind() {
                ty::ConstKind::Param(param) => *map.entry(param.index).or_insert(c) == c,
                _ => true,
            },
            _ => false,
        })
}
