//! The named registry: stable addressing for processes that get replaced.
//!
//! A supervisor that restarts a child spawns a *new* process with a new [`ProcessId`]; an
//! [`Addr`](crate::Addr) held by a client keeps pointing at the old, terminated incarnation
//! (posting to it returns [`PostError::Terminated`](crate::PostError::Terminated) with the
//! message inside, so nothing is lost silently). A name is the stable handle: the supervisor
//! re-registers a named child every time it starts it, and a client that got `Terminated` back
//! re-resolves the name with [`Runtime::whereis`](crate::Runtime::whereis) and posts again.
//!
//! Entries are typed: each stores an `Addr<P>`, and a lookup asks for the process type it
//! expects. A name whose holder has terminated resolves to nothing (the entry is dropped on the
//! next lookup), so a name never leads to a dead process.

use std::any::Any;
use std::collections::HashMap;

use parking_lot::Mutex;

use crate::lifecycle::ProcessId;

/// Why a name could not be registered. Carries back the name that was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// The name is held by another live process.
    #[error("the name `{name}` is already registered to process {holder}")]
    Taken {
        /// The rejected name.
        name: String,
        /// The live process holding it.
        holder: ProcessId,
    },
}

/// What a name is registered to: a process's address with its type erased (`Addr<P>`
/// implements it in the `process` layer).
pub(crate) trait Holder: Send + Sync + 'static {
    /// The process's id.
    fn id(&self) -> ProcessId;
    /// Whether the process has terminated (its name is then free).
    fn is_terminated(&self) -> bool;
    /// The address itself, to downcast to its type.
    fn as_any(&self) -> &dyn Any;
}

/// Name → live process. One per runtime.
#[derive(Default)]
pub(crate) struct Names {
    entries: Mutex<HashMap<String, Box<dyn Holder>>>,
}

impl Names {
    /// Registers `addr` under `name`, unless a live process other than `addr` holds it.
    pub(crate) fn register(&self, name: &str, addr: Box<dyn Holder>) -> Result<(), NameError> {
        self.register_succeeding(name, addr, None)
    }

    /// Registers `addr` under `name`, unless a live process other than `addr` and
    /// `previous` holds it: a supervisor re-pointing a child's name at a new incarnation
    /// takes it from the old one (which may still be finishing a handler after its shutdown
    /// timed out), never from an unrelated process.
    pub(crate) fn register_succeeding(
        &self,
        name: &str,
        addr: Box<dyn Holder>,
        previous: Option<ProcessId>,
    ) -> Result<(), NameError> {
        let mut entries = self.entries.lock();
        if let Some(entry) = entries.get(name) {
            let ours = entry.id() == addr.id() || Some(entry.id()) == previous;
            if !ours && !entry.is_terminated() {
                return Err(NameError::Taken {
                    name: name.to_owned(),
                    holder: entry.id(),
                });
            }
        }
        entries.insert(name.to_owned(), addr);
        Ok(())
    }

    /// The live process holding `name`, if any.
    pub(crate) fn holder(&self, name: &str) -> Option<ProcessId> {
        let entries = self.entries.lock();
        let entry = entries.get(name)?;
        (!entry.is_terminated()).then(|| entry.id())
    }

    /// Removes `name` if `id` holds it (any holder if `id` is `None`); returns whether it did.
    pub(crate) fn unregister(&self, name: &str, id: Option<ProcessId>) -> bool {
        let mut entries = self.entries.lock();
        match entries.get(name) {
            Some(entry) if id.is_none_or(|id| id == entry.id()) => {
                entries.remove(name);
                true
            }
            _ => false,
        }
    }

    /// The name `id` is registered under, if any.
    pub(crate) fn name_of(&self, id: ProcessId) -> Option<String> {
        self.entries
            .lock()
            .iter()
            .find(|(_, entry)| entry.id() == id)
            .map(|(name, _)| name.clone())
    }

    /// Every name held by a live process, by holder (for `Runtime::processes`).
    pub(crate) fn by_holder(&self) -> HashMap<ProcessId, Vec<String>> {
        let mut by_holder: HashMap<ProcessId, Vec<String>> = HashMap::new();
        for (name, entry) in self.entries.lock().iter() {
            if !entry.is_terminated() {
                by_holder.entry(entry.id()).or_default().push(name.clone());
            }
        }
        for names in by_holder.values_mut() {
            names.sort();
        }
        by_holder
    }

    /// The live process registered as `name`, if its address is an `A`.
    pub(crate) fn whereis<A: Holder + Clone>(&self, name: &str) -> Option<A> {
        let mut entries = self.entries.lock();
        let entry = entries.get(name)?;
        if entry.is_terminated() {
            entries.remove(name);
            return None;
        }
        entry.as_any().downcast_ref::<A>().cloned()
    }
}
