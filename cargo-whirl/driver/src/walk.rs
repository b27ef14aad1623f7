//! The walk: from each root, every function reachable through code of the checked workspace,
//! and what each one touches.
//!
//! A function is visited as an `Instance` (a function with its generic arguments), so a
//! generic helper is followed at the instantiation the handler uses, and a trait method or an
//! operator is resolved to the impl the MIR makes concrete. From each body the walk follows:
//!
//! * calls (direct calls, trait methods, overloaded operators and `Deref`, which MIR spells as
//!   calls) that resolve to a function of the workspace, and the shims rustc builds around them
//!   (closure `FnOnce` shims, drop glue);
//! * closures, coroutines and functions *created or named* in the body, even when the call
//!   happens in a dependency (`iter.map(|x| ..)`, `thread::scope`): it assumes they run;
//! * for a value turned into `dyn Trait`, that type's methods of the trait (they may be called
//!   through the vtable anywhere);
//! * for a value dropped, the `Drop` impls of the workspace types inside it.
//!
//! * for a call through a `fn` pointer, every function whose address the crate, or another
//!   crate of the workspace, takes with that pointer's type (`Walker::address_taken`, from the
//!   survey in `roots`).
//!
//! It enters std's (or a dependency's, when its MIR is at hand) generic code only at
//! instances whose arguments name the workspace's types, closures or functions, as rustc's
//! monomorphization collector would: that is how std calls the user back (`format!` →
//! `Display::fmt`, `.into()` → `From::from`, `collect` → `Iterator::next`). What those bodies
//! touch is theirs and not reported. It never enters whirl itself, and stops at functions
//! marked `#[allow_shared]`.

use std::collections::{HashMap, VecDeque};

use rustc_middle::mir::visit::Visitor;
use rustc_middle::mir::{
    self, AggregateKind, Body, CastKind, ConstOperand, Location, Operand, Rvalue, Terminator,
    TerminatorKind,
};
use rustc_middle::ty::adjustment::PointerCoercion;
use rustc_middle::ty::{
    self, EarlyBinder, Instance, InstanceKind, Ty, TyCtxt, TypeVisitableExt, TypingEnv,
};
use rustc_span::def_id::{CrateNum, DefId};
use rustc_span::Span;

use crate::shared;

/// One access to shared state found in a body.
#[derive(Clone, Debug)]
pub struct Access<'tcx> {
    /// What is accessed.
    pub target: Target<'tcx>,
    /// Where, in the body of the function that accesses it.
    pub span: Span,
}

/// What an access touches.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Target<'tcx> {
    /// A `static` (its type is checked by [`shared::static_sharing`]).
    Static(DefId),
    /// A thread-local key (the `const` `thread_local!` declares, when it can be named) with the
    /// type of its value.
    ThreadLocal(Option<DefId>, Ty<'tcx>),
    /// A `#[thread_local]` static.
    ThreadLocalStatic(DefId),
    /// A call to one of [`shared::KNOWN_APIS`].
    Api(DefId),
}

/// How one function leads to another.
#[derive(Clone, Copy, Debug)]
pub enum Edge {
    /// It calls it.
    Calls,
    /// It calls a trait method through a trait object, which may run this impl.
    CallsDyn,
    /// It calls through a `fn` pointer, which may point to this function.
    CallsPointer,
    /// It creates or names it (a closure, a function passed as a value), which then runs.
    Creates,
    /// It turns a value into a trait object, whose methods may then run.
    Coerces,
    /// It drops a value whose type implements `Drop` there.
    Drops,
}

/// What one body does: its accesses, the functions it leads to, and whether it is allowed.
struct Facts<'tcx> {
    accesses: Vec<Access<'tcx>>,
    next: Vec<(Instance<'tcx>, Span, Edge)>,
    allowed: Option<(String, Span)>,
}

/// A visit of the graph from one root: for each instance reached, how it was reached.
pub struct Reach<'tcx> {
    /// Instance → (the instance that led to it, where, how). Roots have no entry.
    pub parents: HashMap<Instance<'tcx>, (Instance<'tcx>, Span, Edge)>,
    /// Every access found, with the instance whose body holds it.
    pub accesses: Vec<(Instance<'tcx>, Access<'tcx>)>,
    /// Functions marked `#[allow_shared]` that the walk reached and stopped at.
    pub allowed: Vec<(Instance<'tcx>, String, Span)>,
}

/// Walks the graph, caching each body's facts across roots.
pub struct Walker<'tcx> {
    tcx: TyCtxt<'tcx>,
    /// Crates whose code is followed.
    workspace: Vec<CrateNum>,
    /// Crates never entered, even at instances of workspace types (whirl's own).
    excluded: Vec<CrateNum>,
    allow_marker: DefId,
    facts: HashMap<Instance<'tcx>, Facts<'tcx>>,
    /// The typing environment of the root being walked: instances whose arguments still
    /// name a generic root's parameters are read in it, where those parameters' bounds hold.
    root_env: TypingEnv<'tcx>,
    /// Instances visited over all roots (for the summary).
    pub visited: usize,
    /// Functions and closures whose address the crate takes, with the `fn` pointer type they
    /// become: a call through a pointer of that type may run any of them.
    pub address_taken: Vec<(Instance<'tcx>, Ty<'tcx>)>,
    /// The other crates of the workspace, whose address-taken functions are surveyed at the
    /// first call through a `fn` pointer the walk meets (`others_address_taken`).
    pub others: Vec<CrateNum>,
    others_address_taken: std::cell::OnceCell<Vec<(Instance<'tcx>, Ty<'tcx>)>>,
}

impl<'tcx> Walker<'tcx> {
    pub fn new(
        tcx: TyCtxt<'tcx>,
        workspace: Vec<CrateNum>,
        excluded: Vec<CrateNum>,
        allow_marker: DefId,
    ) -> Self {
        Walker {
            tcx,
            workspace,
            excluded,
            allow_marker,
            facts: HashMap::new(),
            root_env: TypingEnv::fully_monomorphized(),
            visited: 0,
            address_taken: Vec::new(),
            others: Vec::new(),
            others_address_taken: std::cell::OnceCell::new(),
        }
    }

    /// The functions whose address the other crates of the workspace take (a library's
    /// table of `fn`s, called through here), surveyed once, when first needed.
    fn others_address_taken(&self) -> &[(Instance<'tcx>, Ty<'tcx>)] {
        self.others_address_taken
            .get_or_init(|| crate::roots::address_taken_in(self.tcx, &self.excluded, &self.others))
    }

    /// Whether `def_id` is code of the workspace (where accesses are reported).
    pub fn in_workspace(&self, def_id: DefId) -> bool {
        self.workspace.contains(&def_id.krate)
    }

    /// Whether the walk enters the body of `instance`: code of the workspace, or code of std
    /// or a dependency instantiated with the workspace's types, closures or functions (a
    /// `format!` of a user's `Display`, `mem::take` of a user's `Default`, `collect` over a
    /// user's iterator: it calls back into the workspace), as rustc's monomorphization
    /// collector would. Only the workspace's own bodies report what they touch.
    fn follows(&self, instance: Instance<'tcx>) -> bool {
        let def_id = instance.def_id();
        if self.excluded.contains(&def_id.krate) || !self.tcx.is_mir_available(def_id) {
            return false;
        }
        self.in_workspace(def_id) || self.mentions_workspace(instance.args)
    }

    /// Whether generic arguments name a type, closure or function of the workspace.
    fn mentions_workspace(&self, args: ty::GenericArgsRef<'tcx>) -> bool {
        args.iter().any(|arg| {
            arg.walk().any(|inner| {
                let Some(ty) = inner.as_type() else {
                    return false;
                };
                match *ty.kind() {
                    ty::Adt(adt, _) => self.in_workspace(adt.did()),
                    ty::Closure(def_id, _)
                    | ty::Coroutine(def_id, _)
                    | ty::CoroutineClosure(def_id, _)
                    | ty::FnDef(def_id, _)
                    | ty::Foreign(def_id) => self.in_workspace(def_id),
                    ty::Dynamic(predicates, ..) => predicates
                        .principal_def_id()
                        .is_some_and(|t| self.in_workspace(t)),
                    _ => false,
                }
            })
        })
    }

    /// Everything reachable from `root`, breadth first (so each path found is a shortest one).
    pub fn reach(&mut self, root: Instance<'tcx>) -> Reach<'tcx> {
        self.root_env = TypingEnv::post_analysis(self.tcx, root.def_id());
        let mut reach = Reach {
            parents: HashMap::new(),
            accesses: Vec::new(),
            allowed: Vec::new(),
        };
        let mut queue = VecDeque::from([root]);
        let mut seen = std::collections::HashSet::from([root]);
        while let Some(instance) = queue.pop_front() {
            if !self.facts.contains_key(&instance) {
                let facts = self.collect(instance);
                self.visited += 1;
                self.facts.insert(instance, facts);
            }
            let facts = &self.facts[&instance];
            if std::env::var_os("WHIRL_CHECK_DEBUG").is_some() {
                eprintln!(
                    "walk {instance:?}: next {:?}",
                    facts.next.iter().map(|n| n.0).collect::<Vec<_>>()
                );
            }
            if let Some((reason, span)) = &facts.allowed {
                reach.allowed.push((instance, reason.clone(), *span));
                continue;
            }
            for access in &facts.accesses {
                reach.accesses.push((instance, access.clone()));
            }
            for &(next, span, edge) in &facts.next {
                if seen.insert(next) {
                    reach.parents.insert(next, (instance, span, edge));
                    queue.push_back(next);
                }
            }
        }
        reach
    }

    /// Reads one body.
    fn collect(&self, instance: Instance<'tcx>) -> Facts<'tcx> {
        let tcx = self.tcx;
        let body = tcx.instance_mir(instance.def);
        let mut collector = Collector {
            walker: self,
            instance,
            body,
            typing_env: TypingEnv::fully_monomorphized(),
            reports: matches!(instance.def, InstanceKind::Item(_))
                && self.in_workspace(instance.def_id()),
            facts: Facts {
                accesses: Vec::new(),
                next: Vec::new(),
                allowed: None,
            },
        };
        if instance.args.has_param() {
            collector.typing_env = self.root_env;
        } else if let InstanceKind::Item(def_id) = instance.def {
            collector.typing_env = TypingEnv::post_analysis(tcx, def_id);
        }
        collector.visit_body(body);
        collector.facts
    }
}

struct Collector<'a, 'tcx> {
    walker: &'a Walker<'tcx>,
    instance: Instance<'tcx>,
    body: &'tcx Body<'tcx>,
    typing_env: TypingEnv<'tcx>,
    /// Whether the body is the workspace's (what it touches is reported), not std's or a
    /// dependency's walked for its calls back into the workspace.
    reports: bool,
    facts: Facts<'tcx>,
}

impl<'a, 'tcx> Collector<'a, 'tcx> {
    fn tcx(&self) -> TyCtxt<'tcx> {
        self.walker.tcx
    }

    /// `value`, from the body's generic view into this instance's arguments; `None` if it
    /// cannot be normalised (a projection on a generic root's parameter): that operand is then
    /// not followed.
    fn mono<T>(&self, value: T) -> Option<T>
    where
        T: rustc_middle::ty::TypeFoldable<TyCtxt<'tcx>>,
    {
        self.instance
            .try_instantiate_mir_and_normalize_erasing_regions(
                self.tcx(),
                self.typing_env,
                EarlyBinder::bind(value),
            )
            .ok()
    }

    /// Resolves `def_id` with `args` to the instance that runs, if the walk follows it.
    fn resolve(&self, def_id: DefId, args: ty::GenericArgsRef<'tcx>) -> Option<Instance<'tcx>> {
        let instance = Instance::try_resolve(self.tcx(), self.typing_env, def_id, args).ok()??;
        self.followable(instance)
    }

    fn followable(&self, instance: Instance<'tcx>) -> Option<Instance<'tcx>> {
        match instance.def {
            InstanceKind::Item(_) => self.walker.follows(instance).then_some(instance),
            InstanceKind::Intrinsic(_) | InstanceKind::Virtual(..) => None,
            // Shims: rustc's own glue around a function of the workspace (a closure called
            // through `FnOnce`, drop glue): follow it, its calls decide the rest; only when
            // concrete (rustc builds shims for concrete types).
            _ => (!instance.args.has_param()).then_some(instance),
        }
    }

    fn push(&mut self, next: Instance<'tcx>, span: Span, edge: Edge) {
        if next != self.instance {
            self.facts.next.push((next, span, edge));
        }
    }

    /// A function item, closure or coroutine seen as a value: it will run.
    fn escapes(&mut self, ty: Ty<'tcx>, span: Span) {
        match *ty.kind() {
            ty::FnDef(def_id, args) => {
                if let Some(next) = self.resolve(def_id, args) {
                    self.push(next, span, Edge::Creates);
                }
            }
            ty::Closure(def_id, args)
            | ty::Coroutine(def_id, args)
            | ty::CoroutineClosure(def_id, args) => self.creates_body(def_id, args, span),
            _ => {}
        }
    }

    /// A closure or coroutine body of the workspace, created here: it will run.
    fn creates_body(&mut self, def_id: DefId, args: ty::GenericArgsRef<'tcx>, span: Span) {
        let instance = Instance::new_raw(def_id, args);
        if self.walker.follows(instance) {
            self.push(instance, span, Edge::Creates);
        }
    }

    /// A value of `source` made into `target` (`&T` into `&dyn Trait`, `Box<T>` into
    /// `Box<dyn Trait>`): every method of the trait on `T` may run.
    fn unsizes(&mut self, source: Ty<'tcx>, target: Ty<'tcx>, span: Span) {
        let tcx = self.tcx();
        let (Some(source), Some(target)) = (pointee(source), pointee(target)) else {
            return;
        };
        let ty::Dynamic(predicates, ..) = target.kind() else {
            return;
        };
        // A closure made into `dyn Fn`: its body.
        self.escapes(source, span);
        let Some(principal) = predicates.principal() else {
            return;
        };
        let principal = principal.with_self_ty(tcx, source);
        let trait_ref = tcx.instantiate_bound_regions_with_erased(principal);
        for &method in tcx.associated_item_def_ids(trait_ref.def_id) {
            if tcx.def_kind(method) != rustc_hir::def::DefKind::AssocFn {
                continue;
            }
            if tcx.generics_of(method).own_requires_monomorphization() {
                continue;
            }
            if let Some(next) = self.resolve(method, trait_ref.args) {
                self.push(next, span, Edge::Coerces);
            }
        }
    }

    /// Whether the call of `def_id` with `args` goes through a vtable.
    fn is_virtual(&self, def_id: DefId, args: ty::GenericArgsRef<'tcx>) -> bool {
        matches!(
            Instance::try_resolve(self.tcx(), self.typing_env, def_id, args),
            Ok(Some(Instance {
                def: InstanceKind::Virtual(..),
                ..
            }))
        )
    }

    /// A trait method called through `dyn Trait`: the value may have been made a trait object
    /// anywhere (in `main`, before the process got it), so every non-generic impl of the
    /// trait in the workspace may run. Each is followed at its own type.
    fn virtual_call(&mut self, method: DefId, args: ty::GenericArgsRef<'tcx>, span: Span) {
        let tcx = self.tcx();
        let Some(trait_id) = tcx.trait_of_assoc(method) else {
            return;
        };
        for impl_id in tcx.all_impls(trait_id) {
            if !self.walker.workspace.contains(&impl_id.krate)
                || tcx.generics_of(impl_id).requires_monomorphization(tcx)
            {
                continue;
            }
            let self_ty = tcx
                .type_of(impl_id)
                .instantiate_identity()
                .skip_normalization();
            let concrete =
                tcx.mk_args_from_iter(std::iter::once(self_ty.into()).chain(args.iter().skip(1)));
            if let Some(next) = self.resolve(method, concrete) {
                self.push(next, span, Edge::CallsDyn);
            }
        }
    }

    /// A call through a `fn` pointer of type `pointer`: every function whose address the
    /// crate takes with that type may be the one called (a start function made in `main`, an
    /// entry of a `static` table of `fn`s).
    fn indirect_call(&mut self, pointer: Ty<'tcx>, span: Span) {
        let tcx = self.tcx();
        let shape = |ty: Ty<'tcx>| {
            let sig = tcx.instantiate_bound_regions_with_erased(ty.fn_sig(tcx));
            tcx.erase_and_anonymize_regions(sig.inputs_and_output)
        };
        let wanted = shape(pointer);
        let targets: Vec<Instance<'tcx>> = self
            .walker
            .address_taken
            .iter()
            .chain(self.walker.others_address_taken())
            .filter(|(_, ty)| shape(*ty) == wanted)
            .map(|(instance, _)| *instance)
            .collect();
        for target in targets {
            if let Some(next) = self.followable(target) {
                self.push(next, span, Edge::CallsPointer);
            }
        }
    }

    /// A value of `ty` dropped: the workspace's `Drop` impls of the types inside it.
    fn drops(&mut self, ty: Ty<'tcx>, span: Span) {
        let tcx = self.tcx();
        for arg in ty.walk() {
            let Some(inner) = arg.as_type() else { continue };
            let ty::Adt(adt, args) = *inner.kind() else {
                continue;
            };
            if !self.walker.workspace.contains(&adt.did().krate) {
                continue;
            }
            let Some(destructor) = adt.destructor(tcx) else {
                continue;
            };
            if let Some(next) = self.followable(Instance::new_raw(destructor.did, args)) {
                self.push(next, span, Edge::Drops);
            }
        }
    }

    /// The thread-local key a constant refers to, looking into promoted constants.
    fn thread_local_const(&self, constant: &ConstOperand<'tcx>) -> Option<DefId> {
        let mir::Const::Unevaluated(uv, _) = constant.const_ else {
            return None;
        };
        let Some(promoted) = uv.promoted else {
            return Some(uv.def);
        };
        let tcx = self.tcx();
        if !tcx.is_mir_available(uv.def) {
            return None;
        }
        let body = tcx.promoted_mir(uv.def).get(promoted)?;
        let mut found = None;
        for data in body.basic_blocks.iter() {
            for statement in &data.statements {
                let mir::StatementKind::Assign(assign) = &statement.kind else {
                    continue;
                };
                let Rvalue::Use(Operand::Constant(inner), _) = &assign.1 else {
                    continue;
                };
                if let mir::Const::Unevaluated(uv, _) = inner.const_ {
                    if uv.promoted.is_none() {
                        found = Some(uv.def);
                    }
                }
            }
        }
        found
    }

    /// The reason string of a call to the `#[allow_shared]` marker.
    fn marker_reason(&self, args: &[rustc_span::Spanned<Operand<'tcx>>]) -> String {
        let tcx = self.tcx();
        if let Some(Operand::Constant(constant)) = args.first().map(|a| &a.node) {
            if let Some(text) = crate::allows::const_str(tcx, &constant.const_) {
                return text;
            }
            if let Ok(text) = tcx.sess.source_map().span_to_snippet(constant.span) {
                return text.trim_matches('"').to_string();
            }
        }
        String::from("(reason not readable)")
    }
}

/// The type behind a pointer-like type (`&T`, `*const T`, `Box<T>`, `Rc<T>`, `Arc<T>`...).
fn pointee(ty: Ty<'_>) -> Option<Ty<'_>> {
    match ty.kind() {
        ty::Ref(_, inner, _) | ty::RawPtr(inner, _) => Some(*inner),
        // `Box` and other smart pointers coerce through their first type parameter
        // (`CoerceUnsized`).
        ty::Adt(_, args) => args.types().next(),
        _ => None,
    }
}

impl<'a, 'tcx> Visitor<'tcx> for Collector<'a, 'tcx> {
    fn visit_const_operand(&mut self, constant: &ConstOperand<'tcx>, location: Location) {
        let tcx = self.tcx();
        let span = constant.span;
        let Some(ty) = self.mono(constant.const_.ty()) else {
            return;
        };
        // A reference to a static is a constant pointer into the static's allocation.
        if let mir::Const::Val(mir::ConstValue::Scalar(mir::interpret::Scalar::Ptr(ptr, _)), _) =
            constant.const_
        {
            if let (true, mir::interpret::GlobalAlloc::Static(def_id)) =
                (self.reports, tcx.global_alloc(ptr.provenance.alloc_id()))
            {
                self.facts.accesses.push(Access {
                    target: Target::Static(def_id),
                    span,
                });
            }
        }
        if let (true, Some(value)) = (self.reports, shared::thread_local_key(tcx, ty)) {
            let key = self.thread_local_const(constant);
            self.facts.accesses.push(Access {
                target: Target::ThreadLocal(key, value),
                span,
            });
        }
        // A function item named as a value outside a call's callee position.
        if !self.in_callee(location, constant) {
            self.escapes(ty, span);
        }
    }

    fn visit_rvalue(&mut self, rvalue: &Rvalue<'tcx>, location: Location) {
        let span = self.body.source_info(location).span;
        match rvalue {
            Rvalue::Aggregate(kind, _) => match **kind {
                AggregateKind::Closure(def_id, args)
                | AggregateKind::Coroutine(def_id, args)
                | AggregateKind::CoroutineClosure(def_id, args) => {
                    if let Some(args) = self.mono(args) {
                        self.creates_body(def_id, args, span);
                    }
                }
                _ => {}
            },
            Rvalue::ThreadLocalRef(def_id) if self.reports => {
                self.facts.accesses.push(Access {
                    target: Target::ThreadLocalStatic(*def_id),
                    span,
                });
            }
            Rvalue::Cast(
                CastKind::PointerCoercion(PointerCoercion::Unsize, _),
                operand,
                target,
            ) => {
                let source = self.mono(operand.ty(self.body, self.tcx()));
                if let (Some(source), Some(target)) = (source, self.mono(*target)) {
                    self.unsizes(source, target, span);
                }
            }
            Rvalue::Cast(
                CastKind::PointerCoercion(
                    PointerCoercion::ReifyFnPointer(_) | PointerCoercion::ClosureFnPointer(_),
                    _,
                ),
                operand,
                _,
            ) => {
                if let Some(ty) = self.mono(operand.ty(self.body, self.tcx())) {
                    self.escapes(ty, span);
                }
            }
            _ => {}
        }
        self.super_rvalue(rvalue, location);
    }

    fn visit_terminator(&mut self, terminator: &Terminator<'tcx>, location: Location) {
        let tcx = self.tcx();
        match &terminator.kind {
            TerminatorKind::Call {
                func,
                args,
                fn_span,
                ..
            }
            | TerminatorKind::TailCall {
                func,
                args,
                fn_span,
            } => {
                let func_ty = self.mono(func.ty(self.body, tcx));
                if let Some(pointer) = func_ty.filter(|t| t.is_fn_ptr()) {
                    self.indirect_call(pointer, *fn_span);
                }
                if let Some(&ty::FnDef(def_id, fn_args)) = func_ty.as_ref().map(|t| t.kind()) {
                    if def_id == self.walker.allow_marker {
                        let reason = self.marker_reason(args);
                        self.facts.allowed = Some((reason, *fn_span));
                    } else if let Some(_api) = shared::known_api(tcx, def_id) {
                        if self.reports {
                            self.facts.accesses.push(Access {
                                target: Target::Api(def_id),
                                span: *fn_span,
                            });
                        }
                    } else if let Some(next) = self.resolve(def_id, fn_args) {
                        self.push(next, *fn_span, Edge::Calls);
                    } else if self.is_virtual(def_id, fn_args) {
                        self.virtual_call(def_id, fn_args, *fn_span);
                    } else {
                        // Code the walk does not enter may drop what it is given.
                        for arg in args.iter() {
                            if let Operand::Move(place) = &arg.node {
                                if let Some(ty) = self.mono(place.ty(self.body, tcx).ty) {
                                    self.drops(ty, *fn_span);
                                }
                            }
                        }
                    }
                }
            }
            TerminatorKind::Drop { place, .. } => {
                if let Some(ty) = self.mono(place.ty(self.body, tcx).ty) {
                    self.drops(ty, terminator.source_info.span);
                }
            }
            _ => {}
        }
        self.super_terminator(terminator, location);
    }
}

impl<'a, 'tcx> Collector<'a, 'tcx> {
    /// Whether `constant` is the callee of the call that ends the block at `location`.
    fn in_callee(&self, location: Location, constant: &ConstOperand<'tcx>) -> bool {
        let data = &self.body.basic_blocks[location.block];
        if location.statement_index != data.statements.len() {
            return false;
        }
        match &data.terminator().kind {
            TerminatorKind::Call {
                func: Operand::Constant(callee),
                ..
            }
            | TerminatorKind::TailCall {
                func: Operand::Constant(callee),
                ..
            } => std::ptr::eq(&**callee, constant),
            _ => false,
        }
    }
}
