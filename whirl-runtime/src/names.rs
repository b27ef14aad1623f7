//! The named registry: stable addressing for processes that get replaced.
//!
//! A supervisor that restarts a child spawns a *new* process with a new [`ProcessId`]; an
//! [`Addr`] held by a client keeps pointing at the old, terminated incarnation (posting to it
//! returns [`PostError::Terminated`](crate::PostError::Terminated) with the message inside, so
//! nothing is lost silently). A name is the stable handle: the supervisor re-registers a named
//! child every time it starts it, and a client that got `Terminated` back re-resolves the name
//! with [`Runtime::whereis`](crate::Runtime::whereis) and posts again.
//!
//! Entries are typed: each stores an `Addr<P>`, and a lookup asks for the process type it
//! expects. A name whose holder has terminated resolves to nothing (the entry is dropped on the
//! next lookup), so a name never leads to a dead process.

use std::any::Any;
use std::collections::HashMap;

use parking_lot::Mutex;

use crate::addr::Addr;
use crate::process::{Process, ProcessId};

/// Why a name could not be registered. Carries back the name that was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
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

struct Entry {
    id: ProcessId,
    /// An `Addr<P>` for the process type it was registered with.
    addr: Box<dyn Any + Send + Sync>,
    /// Whether the holder has terminated (type-erased `Addr::is_terminated`).
    terminated: fn(&(dyn Any + Send + Sync)) -> bool,
}

fn terminated<P: Process>(addr: &(dyn Any + Send + Sync)) -> bool {
    addr.downcast_ref::<Addr<P>>()
        .is_none_or(|addr| addr.is_terminated())
}

/// Name → live process. One per runtime.
#[derive(Default)]
pub(crate) struct Names {
    entries: Mutex<HashMap<String, Entry>>,
}

impl Names {
    /// Registers `addr` under `name`, unless a live process other than `addr` holds it.
    pub(crate) fn register<P: Process>(&self, name: &str, addr: &Addr<P>) -> Result<(), NameError> {
        let mut entries = self.entries.lock();
        if let Some(entry) = entries.get(name) {
            if entry.id != addr.id() && !(entry.terminated)(&*entry.addr) {
                return Err(NameError::Taken {
                    name: name.to_owned(),
                    holder: entry.id,
                });
            }
        }
        entries.insert(name.to_owned(), Self::entry(addr));
        Ok(())
    }

    /// Registers `addr` under `name`, unless a live process other than `addr` and
    /// `previous` holds it: a supervisor re-pointing a child's name at a new incarnation
    /// takes it from the old one (which may still be finishing a handler after its shutdown
    /// timed out), never from an unrelated process.
    pub(crate) fn register_succeeding<P: Process>(
        &self,
        name: &str,
        addr: &Addr<P>,
        previous: Option<ProcessId>,
    ) -> Result<(), NameError> {
        let mut entries = self.entries.lock();
        if let Some(entry) = entries.get(name) {
            let ours = entry.id == addr.id() || Some(entry.id) == previous;
            if !ours && !(entry.terminated)(&*entry.addr) {
                return Err(NameError::Taken {
                    name: name.to_owned(),
                    holder: entry.id,
                });
            }
        }
        entries.insert(name.to_owned(), Self::entry(addr));
        Ok(())
    }

    /// The live process holding `name`, if any.
    pub(crate) fn holder(&self, name: &str) -> Option<ProcessId> {
        let entries = self.entries.lock();
        let entry = entries.get(name)?;
        (!(entry.terminated)(&*entry.addr)).then_some(entry.id)
    }

    fn entry<P: Process>(addr: &Addr<P>) -> Entry {
        Entry {
            id: addr.id(),
            addr: Box::new(addr.clone()),
            terminated: terminated::<P>,
        }
    }

    /// Removes `name` if `id` holds it (any holder if `id` is `None`); returns whether it did.
    pub(crate) fn unregister(&self, name: &str, id: Option<ProcessId>) -> bool {
        let mut entries = self.entries.lock();
        match entries.get(name) {
            Some(entry) if id.is_none_or(|id| id == entry.id) => {
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
            .find(|(_, entry)| entry.id == id)
            .map(|(name, _)| name.clone())
    }

    /// The live process registered as `name`, if it is a `P`.
    pub(crate) fn whereis<P: Process>(&self, name: &str) -> Option<Addr<P>> {
        let mut entries = self.entries.lock();
        let entry = entries.get(name)?;
        if (entry.terminated)(&*entry.addr) {
            entries.remove(name);
            return None;
        }
        entry.addr.downcast_ref::<Addr<P>>().cloned()
    }
}
