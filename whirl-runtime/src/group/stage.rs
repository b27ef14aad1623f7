//! A process's [`Stage`]: what ready processes of one kind have in common, for schedulers
//! that group them (cohort scheduling, `scheduler/cohort.rs`). A `Runnable` (`task.rs`)
//! tells its stage; the process layer gives its process type.

use std::any::TypeId;

/// What a group of ready processes has in common for cohort scheduling: the type of their
/// process (for a [`Ready`](crate::scheduler::Ready) process,
/// [`Ready::stage`](crate::scheduler::Ready::stage)). Compared by type, cheaply (`Copy`,
/// `Eq`, `Hash`); its [`name`](Stage::name) is for display.
///
/// ```
/// use whirl::scheduler::Stage;
///
/// struct Parse;
/// struct Render;
/// assert_eq!(Stage::of::<Parse>(), Stage::of::<Parse>());
/// assert_ne!(Stage::of::<Parse>(), Stage::of::<Render>());
/// assert!(Stage::of::<Parse>().name().ends_with("Parse"));
/// ```
#[derive(Clone, Copy)]
pub struct Stage {
    id: TypeId,
    name: &'static str,
}

impl Stage {
    /// The stage of the processes of type `T`.
    pub fn of<T: ?Sized + 'static>() -> Stage {
        Stage {
            id: TypeId::of::<T>(),
            name: std::any::type_name::<T>(),
        }
    }

    /// The type's name, as [`std::any::type_name`] gives it (for display only).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The type's name without its module path (`Parse` for `app::stages::Parse`).
    pub fn short_name(&self) -> &'static str {
        let generic = self.name.find('<').unwrap_or(self.name.len());
        let start = self.name[..generic].rfind("::").map_or(0, |i| i + 2);
        &self.name[start..]
    }
}

impl PartialEq for Stage {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for Stage {}

impl std::hash::Hash for Stage {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

impl std::fmt::Debug for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Stage({})", self.name)
    }
}
