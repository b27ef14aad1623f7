//! Principals: the unit of work seen from outside (a request, a connection, a session).
//!
//! All processes serving one principal share it, so schedulers and predicates can treat them
//! consistently across groups. A process spawned from a handler inherits its parent's
//! principal.
//!
//! The application-specific part of admission control, estimating what a message will cost
//! and what it is worth, lives here (Whirlwind's "template methods ... on the principal and
//! message classes"): a principal carries a base [utility](Principal::utility) and,
//! optionally, an [`Estimate`] that refines cost and utility per message type.

use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

/// Application hooks estimating what a message sent on behalf of a principal costs and what it
/// is worth. Both methods have defaults, so an implementation overrides only what it knows.
///
/// They run in the sender's thread inside message predicates: keep them cheap and
/// non-blocking.
///
/// An estimator travels with its principal inside every message and every child process that
/// carries it, so it must be [`Isolated`](crate::Isolated) (`#[derive(Isolated)]` on a type of
/// your own): an estimator holding a `Mutex` or an atomic would be state shared by every
/// process serving the principal. Estimates that learn belong in a process, or in the group's
/// [`MessagePredicate`](crate::MessagePredicate), which may share state.
///
/// ```
/// use whirl_runtime::{Estimate, Principal};
///
/// /// Searches cost ten times a plain read and are worth less to us.
/// struct MailCosts;
/// // SAFETY: no data at all. (Real code writes `#[derive(whirl::Isolated)]`.)
/// unsafe impl whirl_runtime::Isolated for MailCosts {}
///
/// impl Estimate for MailCosts {
///     fn cost(&self, _: &Principal, message_type: &'static str, message_cost: u64) -> u64 {
///         if message_type.ends_with("Search") { message_cost * 10 } else { message_cost }
///     }
///     fn utility(&self, principal: &Principal, message_type: &'static str) -> f64 {
///         let base = principal.utility();
///         if message_type.ends_with("Search") { base / 2.0 } else { base }
///     }
/// }
///
/// let gold = Principal::new(7, 2, 1).with_utility(5.0).with_estimator(MailCosts);
/// assert_eq!(gold.estimate_cost("mail::Search", 3), 30);
/// assert_eq!(gold.estimate_utility("mail::Search"), 2.5);
/// assert_eq!(gold.estimate_utility("mail::Read"), 5.0);
/// ```
pub trait Estimate: crate::isolated::Isolated + Sync {
    /// The estimated cost of handling a message of type `message_type` for `principal`, given
    /// the message's own estimate `message_cost` ([`Handles::cost`](crate::Handles::cost)).
    /// Default: `message_cost`.
    fn cost(&self, principal: &Principal, message_type: &'static str, message_cost: u64) -> u64 {
        let _ = (principal, message_type);
        message_cost
    }

    /// The estimated utility (value to the service) of handling a message of type
    /// `message_type` for `principal`. Default: the principal's base
    /// [`utility`](Principal::utility).
    fn utility(&self, principal: &Principal, message_type: &'static str) -> f64 {
        let _ = message_type;
        principal.utility()
    }
}

/// A cheaply cloned handle on a principal: an id, a priority, a class, a base utility and
/// optional cost/utility estimation hooks.
///
/// ```
/// use whirl_runtime::Principal;
///
/// let session = Principal::new(42, 3, 1).with_utility(2.0);
/// let same = session.clone();
/// assert!(same.same_as(&session));
/// assert_eq!((session.id(), session.priority(), session.class()), (42, 3, 1));
/// // Without an estimator, a message's cost is its own estimate.
/// assert_eq!(session.estimate_cost("Any", 9), 9);
/// assert_eq!(session.estimate_utility("Any"), 2.0);
/// ```
#[derive(Clone)]
pub struct Principal {
    inner: Arc<PrincipalInner>,
}

struct PrincipalInner {
    id: u64,
    priority: u8,
    class: u16,
    utility: f64,
    estimator: Option<Arc<dyn Estimate>>,
    /// Messages handled by processes serving this principal.
    handled: AtomicU64,
    /// Their total handling time, nanoseconds.
    handling_nanos: AtomicU64,
}

impl Principal {
    /// A principal with the given id, priority (higher is more important) and class, a base
    /// utility of 1.0 and no estimator.
    pub fn new(id: u64, priority: u8, class: u16) -> Self {
        Principal {
            inner: Arc::new(PrincipalInner {
                id,
                priority,
                class,
                utility: 1.0,
                estimator: None,
                handled: AtomicU64::new(0),
                handling_nanos: AtomicU64::new(0),
            }),
        }
    }

    /// This principal with base utility `utility` (a new principal: handles cloned earlier
    /// keep the old value and are not [`same_as`](Principal::same_as) the result). Call it
    /// when creating the principal. Non-finite or negative values count as 0.
    pub fn with_utility(self, utility: f64) -> Self {
        let utility = if utility.is_finite() && utility > 0.0 {
            utility
        } else {
            0.0
        };
        self.rebuild(|inner| inner.utility = utility)
    }

    /// This principal with `estimator` as its cost/utility hooks (a new principal, as for
    /// [`with_utility`](Principal::with_utility)).
    pub fn with_estimator(self, estimator: impl Estimate) -> Self {
        let estimator: Arc<dyn Estimate> = Arc::new(estimator);
        self.rebuild(|inner| inner.estimator = Some(estimator))
    }

    fn rebuild(self, change: impl FnOnce(&mut PrincipalInner)) -> Self {
        let mut inner = match Arc::try_unwrap(self.inner) {
            Ok(inner) => inner,
            Err(shared) => PrincipalInner {
                id: shared.id,
                priority: shared.priority,
                class: shared.class,
                utility: shared.utility,
                estimator: shared.estimator.clone(),
                handled: AtomicU64::new(0),
                handling_nanos: AtomicU64::new(0),
            },
        };
        change(&mut inner);
        Principal {
            inner: Arc::new(inner),
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

    /// Its base utility (1.0 unless set with [`with_utility`](Principal::with_utility)).
    pub fn utility(&self) -> f64 {
        self.inner.utility
    }

    /// The estimated cost of a message of type `message_type` whose own estimate is
    /// `message_cost`: the estimator's answer, or `message_cost` without one.
    pub fn estimate_cost(&self, message_type: &'static str, message_cost: u64) -> u64 {
        match &self.inner.estimator {
            Some(e) => e.cost(self, message_type, message_cost),
            None => message_cost,
        }
    }

    /// The estimated utility of a message of type `message_type`: the estimator's answer, or
    /// the base [`utility`](Principal::utility) without one.
    pub fn estimate_utility(&self, message_type: &'static str) -> f64 {
        match &self.inner.estimator {
            Some(e) => e.utility(self, message_type),
            None => self.inner.utility,
        }
    }

    /// Counts `messages` handled for this principal in one turn that took `handling`.
    ///
    /// The runtime calls it after each turn of a process serving this principal: two relaxed
    /// atomic adds on a line shared by every worker serving the principal.
    pub(crate) fn record_handled(&self, messages: u64, handling: Duration) {
        let nanos = u64::try_from(handling.as_nanos()).unwrap_or(u64::MAX);
        self.inner.handled.fetch_add(messages, Relaxed);
        self.inner.handling_nanos.fetch_add(nanos, Relaxed);
    }

    /// Messages handled so far by processes serving this principal, in every group
    /// (per-principal accounting for schedulers and predicates).
    pub fn handled(&self) -> u64 {
        self.inner.handled.load(Relaxed)
    }

    /// Total time spent in handlers for this principal so far.
    pub fn handling_time(&self) -> Duration {
        Duration::from_nanos(self.inner.handling_nanos.load(Relaxed))
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
            .field("utility", &self.inner.utility)
            .field("estimator", &self.inner.estimator.is_some())
            .field("handled", &self.handled())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    struct Double;
    // SAFETY: no data at all.
    unsafe impl crate::isolated::Isolated for Double {}

    impl Estimate for Double {
        fn cost(&self, _: &Principal, _: &'static str, message_cost: u64) -> u64 {
            message_cost * 2
        }
    }

    #[test]
    fn defaults_without_estimator() {
        let p = Principal::new(1, 2, 3);
        assert_eq!(p.utility(), 1.0);
        assert_eq!(p.estimate_cost("T", 5), 5);
        assert_eq!(p.estimate_utility("T"), 1.0);
    }

    #[test]
    fn estimator_overrides_only_what_it_defines() {
        let p = Principal::new(1, 2, 3)
            .with_utility(4.0)
            .with_estimator(Double);
        assert_eq!(p.estimate_cost("T", 5), 10);
        // `utility` not overridden: the base utility.
        assert_eq!(p.estimate_utility("T"), 4.0);
        assert_eq!((p.id(), p.priority(), p.class()), (1, 2, 3));
    }

    #[test]
    fn accounting_is_shared_by_all_handles() {
        let p = Principal::new(1, 0, 0);
        let q = p.clone();
        p.record_handled(1, Duration::from_millis(2));
        q.record_handled(1, Duration::from_millis(3));
        assert_eq!((p.handled(), q.handled()), (2, 2));
        assert_eq!(p.handling_time(), Duration::from_millis(5));
    }

    #[test]
    fn with_utility_on_a_shared_handle_leaves_the_other_alone() {
        let a = Principal::new(1, 0, 0);
        let b = a.clone().with_utility(3.0);
        assert_eq!(a.utility(), 1.0);
        assert_eq!(b.utility(), 3.0);
        assert!(!a.same_as(&b));
        let c = Principal::new(2, 0, 0).with_utility(f64::NAN);
        assert_eq!(c.utility(), 0.0);
    }
}
