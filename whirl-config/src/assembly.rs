//! The assembly: a parsed and checked file ([`Assembly`]), and what building it on a runtime
//! made ([`Assembled`]): the groups, the root supervisors, and the live handles a reload
//! applies new parameters through.
//!
//! Parsing checks everything that can be checked without the program: the TOML and the
//! file's shape (through `toml`'s spans), the references to groups, and the values the
//! runtime would refuse (a CPU share above 1, an empty token rate...), by building each
//! predicate and controller once. Building checks the process types against the registered
//! [`Factories`], then creates the groups and spawns the supervisors.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use std::sync::Mutex;

use whirl::scheduler::{Cohort, CpuBudget, Fifo, PrincipalPriority, Stride};
use whirl::supervision::{
    ChildSpec, Restart, RestartStrategy, Shutdown, Supervisor, SupervisorSpec,
};
use whirl::{Addr, Group, Runtime};

use crate::controller::{self, Swappable};
use crate::error::{ConfigError, Location, NeedsRestart};
use crate::factories::Factories;
use crate::predicate::{self, Retuned, Tuning};
use crate::schema::{
    parse_duration, ChildSpecToml, FileSpec, GroupSpec, RestartSpec, SchedulerSpec, StrategySpec,
    SupervisorSpecToml,
};

/// The name that refers to the runtime's default group.
pub const DEFAULT_GROUP: &str = "default";

/// A parsed, checked configuration file. See the [crate docs](crate) for the format.
#[derive(Clone, Debug)]
pub struct Assembly {
    origin: String,
    text: String,
    spec: FileSpec,
}

impl Assembly {
    /// Parses `text`, read from `origin` (the file name errors show), and checks it.
    pub fn parse(text: &str, origin: impl Into<String>) -> Result<Assembly, ConfigError> {
        let origin = origin.into();
        let spec: FileSpec = toml::from_str(text).map_err(|e| ConfigError::Syntax {
            at: Location::of_span(&origin, text, e.span()),
            message: e.message().trim_end().to_string(),
        })?;
        let assembly = Assembly {
            origin,
            text: text.to_string(),
            spec,
        };
        assembly.check()?;
        Ok(assembly)
    }

    /// Reads and parses the file at `path`; errors name it as given.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Assembly, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Assembly::parse(&text, path.display().to_string())
    }

    /// Where the text came from.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The text parsed.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The groups the file defines, sorted by name.
    pub fn group_names(&self) -> impl Iterator<Item = &str> {
        self.spec.groups.keys().map(String::as_str)
    }

    /// This assembly with every group's predicate removed (admission control off, for
    /// comparison runs).
    pub fn without_predicates(mut self) -> Self {
        for group in self.spec.groups.values_mut() {
            group.get_mut().predicate = None;
        }
        self
    }

    fn at(&self, span: Range<usize>) -> Location {
        Location::at(&self.origin, &self.text, span.start)
    }

    fn invalid(&self, span: Range<usize>, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            at: self.at(span),
            message: message.into(),
        }
    }

    /// The checks that need no runtime.
    fn check(&self) -> Result<(), ConfigError> {
        for group in self.spec.groups.values() {
            self.check_group(group.get_ref())?;
        }
        for sup in self.spec.supervisors.values() {
            self.check_supervisor(sup.get_ref())?;
        }
        Ok(())
    }

    fn check_group(&self, group: &GroupSpec) -> Result<(), ConfigError> {
        if let Some(p) = &group.predicate {
            predicate::build(p.get_ref()).map_err(|m| self.invalid(p.span(), m))?;
        }
        if let Some(c) = &group.controller {
            controller::build(c.get_ref()).map_err(|m| self.invalid(c.span(), m))?;
        }
        if let Some(b) = &group.batching {
            controller::batching(b.get_ref()).map_err(|m| self.invalid(b.span(), m))?;
        }
        if let (Some(c), Some(b)) = (&group.controller, &group.batching) {
            if matches!(c.get_ref(), crate::schema::ControllerSpec::SedaBatching(_)) {
                return Err(self.invalid(
                    b.span(),
                    "expected at most one budget controller: `controller` is already `seda_batching`",
                ));
            }
        }
        if let Some(c) = &group.cpu_budget {
            self.cpu_budget(c)?;
        }
        Ok(())
    }

    fn cpu_budget(
        &self,
        spec: &toml::Spanned<crate::schema::CpuBudgetSpec>,
    ) -> Result<CpuBudget, ConfigError> {
        let s = spec.get_ref();
        let mut budget = CpuBudget::new(s.share, s.period.0)
            .map_err(|e| self.invalid(spec.span(), e.to_string()))?;
        if let Some(cores) = s.cores {
            budget = budget.cores(cores);
        }
        if let Some(on) = s.virtual_ticks {
            budget = budget.virtual_ticks(on);
        }
        Ok(budget)
    }

    fn check_group_ref(&self, name: &toml::Spanned<String>) -> Result<(), ConfigError> {
        let n = name.get_ref();
        if n == DEFAULT_GROUP || self.spec.groups.contains_key(n) {
            Ok(())
        } else {
            Err(ConfigError::UnknownGroup {
                at: self.at(name.span()),
                name: n.clone(),
            })
        }
    }

    fn check_supervisor(&self, sup: &SupervisorSpecToml) -> Result<(), ConfigError> {
        if let Some(group) = &sup.group {
            self.check_group_ref(group)?;
        }
        for child in &sup.children {
            let span = child.span();
            let c = child.get_ref();
            if let Some(group) = &c.group {
                self.check_group_ref(group)?;
            }
            match (&c.process, &c.supervisor) {
                (Some(_), None) => {}
                (None, Some(nested)) => {
                    if c.args.is_some() {
                        return Err(self.invalid(span, "`args` is for processes, not supervisors"));
                    }
                    if nested.group.is_some() || nested.name.is_some() {
                        return Err(self.invalid(
                            span,
                            format!(
                                "child `{}`: a nested supervisor takes its `group` and `name` \
                                 from its child entry, not from its own table",
                                c.id
                            ),
                        ));
                    }
                    self.check_supervisor(nested)?;
                }
                _ => {
                    return Err(self.invalid(
                        span,
                        format!(
                            "child `{}`: expected exactly one of `process` and `supervisor`",
                            c.id
                        ),
                    ))
                }
            }
            if let Some(shutdown) = &c.shutdown {
                self.shutdown(shutdown)?;
            }
        }
        Ok(())
    }

    fn shutdown(&self, spec: &toml::Spanned<String>) -> Result<Shutdown, ConfigError> {
        let text = spec.get_ref();
        if text == "infinity" {
            return Ok(Shutdown::Infinity);
        }
        parse_duration(text).map(Shutdown::Timeout).ok_or_else(|| {
            self.invalid(
                spec.span(),
                format!("expected \"infinity\" or a duration (\"5s\"), found {text:?}"),
            )
        })
    }

    /// A runtime built from the `[runtime]` section (its shared workers, and the budget and
    /// slow-turn threshold of the default group; unset values keep the runtime's defaults).
    pub fn runtime(&self) -> Result<Runtime, ConfigError> {
        let r = &self.spec.runtime;
        let mut builder = Runtime::builder();
        if let Some(threads) = r.threads {
            builder = builder.threads(threads);
        }
        if let Some(budget) = r.budget {
            builder = builder.budget(budget);
        }
        if let Some(threshold) = r.slow_turn_threshold {
            builder = builder.slow_turn_threshold(Some(threshold.0));
        }
        builder
            .build()
            .map_err(|e| self.invalid(0..0, e.to_string()))
    }

    /// Builds the file on `rt`: creates its groups, then spawns its root supervisors (with
    /// the processes `factories` makes), registering those that have a `name`.
    ///
    /// Every process type and its arguments are checked before anything is built. An error
    /// after that (a group name the runtime already has, a supervisor name already
    /// registered) leaves what was built before it in place: group names are unique in a
    /// runtime, so build again on a fresh one.
    pub fn build(&self, rt: &Runtime, factories: &Factories) -> Result<Assembled, ConfigError> {
        // Every process type exists and takes its arguments before anything is built.
        for sup in self.spec.supervisors.values() {
            self.check_processes(sup.get_ref(), factories)?;
        }
        let mut groups = BTreeMap::new();
        let mut live = BTreeMap::new();
        for (name, spanned) in &self.spec.groups {
            let (group, handles) = self.build_group(rt, name, spanned)?;
            groups.insert(name.clone(), group);
            live.insert(name.clone(), handles);
        }
        let lookup = |name: Option<&toml::Spanned<String>>| -> Group {
            match name.map(|n| n.get_ref().as_str()) {
                None | Some(DEFAULT_GROUP) => rt.default_group().clone(),
                Some(n) => groups
                    .get(n)
                    .cloned()
                    .unwrap_or_else(|| rt.default_group().clone()),
            }
        };
        let mut supervisors = BTreeMap::new();
        for (name, spanned) in &self.spec.supervisors {
            let sup = spanned.get_ref();
            let spec = self.supervisor_spec(name, sup, factories, &lookup)?;
            let addr = rt
                .spawner()
                .group(&lookup(sup.group.as_ref()))
                .spawn(Supervisor::new(spec));
            if let Some(registered) = &sup.name {
                rt.register(registered, &addr).map_err(|e| {
                    self.invalid(spanned.span(), format!("supervisor `{name}`: {e}"))
                })?;
            }
            supervisors.insert(name.clone(), addr);
        }
        Ok(Assembled {
            groups,
            supervisors,
            live: Mutex::new(Live {
                spec: self.spec.clone(),
                groups: live,
            }),
        })
    }

    /// Makes every process child once (and drops it): unknown types and arguments a factory
    /// cannot take are errors before anything is built.
    fn check_processes(
        &self,
        sup: &SupervisorSpecToml,
        factories: &Factories,
    ) -> Result<(), ConfigError> {
        for child in &sup.children {
            let c = child.get_ref();
            if let Some(process) = &c.process {
                self.make(process, c, factories)?;
            }
            if let Some(nested) = &c.supervisor {
                self.check_processes(nested, factories)?;
            }
        }
        Ok(())
    }

    fn make(
        &self,
        process: &toml::Spanned<String>,
        c: &ChildSpecToml,
        factories: &Factories,
    ) -> Result<ChildSpec, ConfigError> {
        let (args, span) = match &c.args {
            Some(a) => (a.get_ref().clone(), a.span()),
            None => (empty(), process.span()),
        };
        match factories.make(process.get_ref(), &c.id, args) {
            Some(Ok(spec)) => Ok(spec),
            Some(Err(message)) => Err(self.invalid(span, message)),
            None => Err(ConfigError::UnknownProcess {
                at: self.at(process.span()),
                name: process.get_ref().clone(),
                known: factories.known(),
            }),
        }
    }

    fn build_group(
        &self,
        rt: &Runtime,
        name: &str,
        spanned: &toml::Spanned<GroupSpec>,
    ) -> Result<(Group, LiveGroup), ConfigError> {
        let g = spanned.get_ref();
        let mut builder = rt.group(name);
        match (&g.threads, &g.concurrency) {
            (Some(_), Some(concurrency)) => {
                return Err(self.invalid(
                    concurrency.span(),
                    format!(
                        "group `{name}` has both `threads` (threads of its own) and                          `concurrency` (a limit on the shared workers): keep one"
                    ),
                ));
            }
            (Some(threads), None) => {
                let t = threads.get_ref();
                builder = builder.threads(t.min..=t.max);
            }
            (None, Some(concurrency)) => {
                let c = concurrency.get_ref();
                builder = builder.concurrency(c.min..=c.max);
            }
            (None, None) => {}
        }
        if let Some(share) = g.share {
            builder = builder.share(share);
        }
        if let Some(budget) = g.budget {
            builder = builder.budget(budget);
        }
        if let Some(threshold) = g.slow_turn_threshold {
            builder = builder.slow_turn_threshold(Some(threshold.0));
        }
        if let Some(on) = g.lifo_slot {
            builder = builder.lifo_slot(on);
        }
        if let Some(s) = &g.scheduler {
            builder = match s.get_ref() {
                SchedulerSpec::FifoStealing => builder,
                SchedulerSpec::Fifo => builder.scheduler(Fifo::new()),
                SchedulerSpec::Cohort { batch } => {
                    let mut c = Cohort::new();
                    if let Some(b) = batch {
                        c = c.batch(*b);
                    }
                    builder.scheduler(c)
                }
                SchedulerSpec::Stride {
                    tickets,
                    unassigned,
                } => {
                    let mut st = Stride::new();
                    for &(class, t) in tickets {
                        st = st.tickets(class, t);
                    }
                    if let Some(u) = unassigned {
                        st = st.unassigned(*u);
                    }
                    builder.scheduler(st)
                }
                SchedulerSpec::PrincipalPriority {
                    quota,
                    unassigned,
                    inheritance,
                } => {
                    let mut p = PrincipalPriority::new();
                    for &(level, turns) in quota {
                        p = p.quota(level, turns);
                    }
                    if let Some(u) = unassigned {
                        p = p.unassigned(*u);
                    }
                    if let Some(on) = inheritance {
                        p = p.inheritance(*on);
                    }
                    builder.scheduler(p)
                }
            };
        }
        let mut handles = LiveGroup::default();
        if let Some(p) = &g.predicate {
            let (built, tuning) =
                predicate::build(p.get_ref()).map_err(|m| self.invalid(p.span(), m))?;
            builder = builder.predicate(built);
            handles.predicate = Some(tuning);
        }
        if let Some(c) = &g.controller {
            let built = controller::build(c.get_ref()).map_err(|m| self.invalid(c.span(), m))?;
            let slot = Swappable::new(built);
            builder = builder.controller(slot.clone());
            handles.controller = Some(slot);
        }
        if let Some(b) = &g.batching {
            let built = controller::batching(b.get_ref()).map_err(|m| self.invalid(b.span(), m))?;
            let slot = Swappable::new(built);
            builder = builder.controller(slot.clone());
            handles.batching = Some(slot);
        }
        if let Some(c) = &g.cpu_budget {
            builder = builder.cpu_budget(self.cpu_budget(c)?);
        }
        let group = builder
            .build()
            .map_err(|e| self.invalid(spanned.span(), format!("group `{name}`: {e}")))?;
        handles.group = Some(group.clone());
        Ok((group, handles))
    }

    fn supervisor_spec(
        &self,
        name: &str,
        sup: &SupervisorSpecToml,
        factories: &Factories,
        lookup: &dyn Fn(Option<&toml::Spanned<String>>) -> Group,
    ) -> Result<SupervisorSpec, ConfigError> {
        let mut spec = SupervisorSpec::new(name);
        if let Some(strategy) = sup.strategy {
            spec = spec.strategy(match strategy {
                StrategySpec::OneForOne => RestartStrategy::OneForOne,
                StrategySpec::OneForAll => RestartStrategy::OneForAll,
                StrategySpec::RestForOne => RestartStrategy::RestForOne,
            });
        }
        if let Some(i) = sup.intensity {
            spec = spec.intensity(i.max_restarts, i.period.0);
        }
        for child in &sup.children {
            spec = spec.child(self.child_spec(child, factories, lookup)?);
        }
        Ok(spec)
    }

    fn child_spec(
        &self,
        child: &toml::Spanned<ChildSpecToml>,
        factories: &Factories,
        lookup: &dyn Fn(Option<&toml::Spanned<String>>) -> Group,
    ) -> Result<ChildSpec, ConfigError> {
        let c = child.get_ref();
        let mut spec = match (&c.process, &c.supervisor) {
            (Some(process), _) => self.make(process, c, factories)?,
            (None, Some(nested)) => ChildSpec::supervisor(
                c.id.clone(),
                self.supervisor_spec(&c.id, nested, factories, lookup)?,
            ),
            (None, None) => {
                return Err(self.invalid(
                    child.span(),
                    format!(
                        "child `{}`: expected exactly one of `process` and `supervisor`",
                        c.id
                    ),
                ))
            }
        };
        if c.group.is_some() {
            spec = spec.in_group(&lookup(c.group.as_ref()));
        }
        if let Some(name) = &c.name {
            spec = spec.named(name.clone());
        }
        if let Some(restart) = c.restart {
            spec = spec.restart(match restart {
                RestartSpec::Permanent => Restart::Permanent,
                RestartSpec::Transient => Restart::Transient,
                RestartSpec::Temporary => Restart::Temporary,
            });
        }
        if let Some(shutdown) = &c.shutdown {
            spec = spec.shutdown(self.shutdown(shutdown)?);
        }
        if let Some(significant) = c.significant {
            spec = spec.significant(significant);
        }
        Ok(spec)
    }
}

fn empty() -> toml::Value {
    toml::Value::Table(toml::Table::new())
}

/// The live handles of one built group.
#[derive(Default)]
struct LiveGroup {
    group: Option<Group>,
    predicate: Option<Tuning>,
    controller: Option<Swappable>,
    batching: Option<Swappable>,
}

struct Live {
    /// The file last applied (or seen, for what needed a restart).
    spec: FileSpec,
    groups: BTreeMap<String, LiveGroup>,
}

/// What [`Assembly::build`] made: the groups and root supervisors, and the handles through
/// which [`Assembled::reload`] changes parameters while they run.
pub struct Assembled {
    groups: BTreeMap<String, Group>,
    supervisors: BTreeMap<String, Addr<Supervisor>>,
    live: Mutex<Live>,
}

impl std::fmt::Debug for Assembled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Assembled")
            .field("groups", &self.groups.keys().collect::<Vec<_>>())
            .field("supervisors", &self.supervisors.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// What a reload did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reloaded {
    /// The settings changed in the running application, as dotted paths
    /// (`groups.web.predicate.max`).
    pub applied: Vec<String>,
    /// The changes left for a restart. Each is reported once, by the reload that saw it.
    pub needs_restart: Vec<NeedsRestart>,
}

impl Reloaded {
    /// Whether the file changed nothing.
    pub fn is_empty(&self) -> bool {
        self.applied.is_empty() && self.needs_restart.is_empty()
    }
}

impl Assembled {
    /// The group the file called `name` (not the default group).
    pub fn group(&self, name: &str) -> Option<&Group> {
        self.groups.get(name)
    }

    /// The root supervisor the file called `name` (its `[supervisors.NAME]` table).
    pub fn supervisor(&self, name: &str) -> Option<&Addr<Supervisor>> {
        self.supervisors.get(name)
    }

    /// Applies `new`'s predicate parameters, controllers and group budgets to the running
    /// groups, without a restart, and reports everything else that changed as needing one.
    ///
    /// Live: a predicate's parameters that have setters (`queue_length.max`,
    /// `priority_thresholds` thresholds, `cost_budget.budget`, `token_bucket.rate`), a
    /// controller or batching controller (replaced by one with the new parameters, which
    /// starts afresh), a group's `budget`. A restart: anything else (a predicate's kind or
    /// shape, a group's threads or scheduler, groups added or removed, supervision trees,
    /// `[runtime]`).
    pub fn reload(&self, new: &Assembly) -> Reloaded {
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        let live = &mut *live;
        let mut out = Reloaded::default();
        let restart = |out: &mut Reloaded, path: String, span: Option<Range<usize>>| {
            out.needs_restart.push(NeedsRestart {
                path,
                at: span.map(|s| new.at(s)),
            })
        };
        if live.spec.runtime != new.spec.runtime {
            restart(&mut out, "runtime".into(), None);
        }
        for name in live.spec.groups.keys() {
            if !new.spec.groups.contains_key(name) {
                restart(&mut out, format!("groups.{name}"), None);
            }
        }
        for (name, spanned) in &new.spec.groups {
            let path = format!("groups.{name}");
            let (Some(old), Some(handles)) = (live.spec.groups.get(name), live.groups.get(name))
            else {
                restart(&mut out, path, Some(spanned.span()));
                continue;
            };
            let (old, g) = (old.get_ref(), spanned.get_ref());
            let fixed = [
                ("threads", old.threads != g.threads),
                ("concurrency", old.concurrency != g.concurrency),
                ("share", old.share != g.share),
                (
                    "slow_turn_threshold",
                    old.slow_turn_threshold != g.slow_turn_threshold,
                ),
                ("lifo_slot", old.lifo_slot != g.lifo_slot),
                ("scheduler", old.scheduler != g.scheduler),
                ("cpu_budget", old.cpu_budget != g.cpu_budget),
            ];
            for (key, changed) in fixed {
                if changed {
                    restart(&mut out, format!("{path}.{key}"), Some(spanned.span()));
                }
            }
            if old.budget != g.budget {
                match (g.budget, &handles.group) {
                    (Some(budget), Some(group)) => {
                        group.set_budget(budget);
                        out.applied.push(format!("{path}.budget"));
                    }
                    _ => restart(&mut out, format!("{path}.budget"), Some(spanned.span())),
                }
            }
            let pred_path = format!("{path}.predicate");
            match (&old.predicate, &g.predicate, &handles.predicate) {
                (Some(o), Some(n), Some(t)) => {
                    let mut r = Retuned::default();
                    predicate::retune(o.get_ref(), n.get_ref(), t, &pred_path, &mut r);
                    out.applied.extend(r.applied);
                    for p in r.restart {
                        restart(&mut out, p, Some(n.span()));
                    }
                }
                (None, None, _) => {}
                (o, n, _) if o.as_ref().map(|s| s.get_ref()) == n.as_ref().map(|s| s.get_ref()) => {
                }
                (_, n, _) => restart(&mut out, pred_path, n.as_ref().map(|s| s.span())),
            }
            let swap =
                |out: &mut Reloaded,
                 key: &str,
                 changed: bool,
                 slot: Option<&Swappable>,
                 built: Option<Result<Box<dyn whirl::control::ConcurrencyController>, String>>,
                 span: Option<Range<usize>>| {
                    if !changed {
                        return;
                    }
                    let path = format!("{path}.{key}");
                    let replaced = match (slot, built) {
                        (Some(slot), Some(Ok(c))) => slot.replace(c),
                        _ => false,
                    };
                    match replaced {
                        true => out.applied.push(path),
                        false => restart(out, path, span),
                    }
                };
            swap(
                &mut out,
                "controller",
                old.controller != g.controller,
                handles.controller.as_ref(),
                g.controller
                    .as_ref()
                    .map(|c| controller::build(c.get_ref())),
                g.controller.as_ref().map(|c| c.span()),
            );
            swap(
                &mut out,
                "batching",
                old.batching != g.batching,
                handles.batching.as_ref(),
                g.batching
                    .as_ref()
                    .map(|b| controller::batching(b.get_ref())),
                g.batching.as_ref().map(|b| b.span()),
            );
        }
        for name in live.spec.supervisors.keys() {
            if !new.spec.supervisors.contains_key(name) {
                restart(&mut out, format!("supervisors.{name}"), None);
            }
        }
        for (name, sup) in &new.spec.supervisors {
            if live.spec.supervisors.get(name).map(|s| s.get_ref()) != Some(sup.get_ref()) {
                restart(&mut out, format!("supervisors.{name}"), Some(sup.span()));
            }
        }
        live.spec = new.spec.clone();
        out
    }
}
