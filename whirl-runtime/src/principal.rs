//! Principals: the unit of work seen from outside (a request, a connection, a session).
//!
//! All processes serving one principal share it, so schedulers and predicates can treat them
//! consistently across groups. A process spawned from a handler inherits its parent's
//! principal.

use std::fmt;
use std::sync::Arc;

/// A cheaply cloned handle on a principal: an id, a priority and a class.
#[derive(Clone)]
pub struct Principal {
    inner: Arc<PrincipalInner>,
}

struct PrincipalInner {
    id: u64,
    priority: u8,
    class: u16,
}

impl Principal {
    /// A principal with the given id, priority (higher is more important) and class.
    pub fn new(id: u64, priority: u8, class: u16) -> Self {
        Principal {
            inner: Arc::new(PrincipalInner {
                id,
                priority,
                class,
            }),
        }
    }

    /// The application's identifier for it (session number, connection number...).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// Its priority: higher is more important.
    pub fn priority(&self) -> u8 {
        self.inner.priority
    }

    /// Its class, used by class-based schedulers and predicates.
    pub fn class(&self) -> u16 {
        self.inner.class
    }

    /// Whether two handles name the same principal.
    pub fn same_as(&self, other: &Principal) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Principal")
            .field("id", &self.inner.id)
            .field("priority", &self.inner.priority)
            .field("class", &self.inner.class)
            .finish()
    }
}
